-- Conversations and Turns [CV-1..4]: the completed head a Conversation continues
-- from, the Run that executed a Turn, and the safe terminal summary of a Turn that
-- did not complete (code, stage, retryable — never provider or worker text).
ALTER TABLE conversations ADD COLUMN head_turn_id TEXT;
ALTER TABLE conversations ADD COLUMN branched_from_turn_id TEXT;

ALTER TABLE turns ADD COLUMN run_id TEXT CHECK (run_id IS NULL OR length(run_id) = 36);
ALTER TABLE turns ADD COLUMN terminal_code TEXT
  CHECK (terminal_code IS NULL OR length(terminal_code) BETWEEN 1 AND 64);
ALTER TABLE turns ADD COLUMN terminal_stage TEXT
  CHECK (terminal_stage IS NULL OR length(terminal_stage) BETWEEN 1 AND 64);
ALTER TABLE turns ADD COLUMN retryable INTEGER CHECK (retryable IS NULL OR retryable IN (0, 1));

-- Cascading deletes walk child conversations by parent; lists sort by recency.
CREATE INDEX conversations_parent ON conversations(parent_id);
CREATE INDEX conversations_updated ON conversations(updated_at, id);
CREATE UNIQUE INDEX turns_run ON turns(run_id) WHERE run_id IS NOT NULL;
