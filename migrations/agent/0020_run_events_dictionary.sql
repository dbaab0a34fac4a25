-- [PF-4] Event bodies are deflated with a preset dictionary made of their Run's fixed facts
-- (runtime/store/run_store.ts): its id, its Conversation's id and its `started_summary` (the
-- `run.started` payload every such event repeats). A stored body inflates only with the same
-- dictionary, so these columns must never change once a Run has events: this trigger refuses
-- it. Rows deflated before (0018, no dictionary) inflate the same with one. The version bump
-- also keeps a binary that inflates without the dictionary from opening these journals.
CREATE TRIGGER runs_dictionary_fixed BEFORE UPDATE OF id, conversation_id, started_summary ON runs
BEGIN
  SELECT RAISE(ABORT, 'a Run''s id, conversation and start summary are fixed');
END;
