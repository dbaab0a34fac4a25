-- [PF-4, UI-9] A Turn enters the search index once, when it leaves `running`, instead of at
-- its start and again at its end. Each FTS5 write transaction adds a segment, rewrites the
-- index's structure and averages records and its doc-size row: indexing the user message at
-- the start and re-indexing the Turn at its terminal wrote the FTS5 tables and search_docs in
-- two of a Turn's transactions (about 8 pages in the first). A running Turn is the one
-- Conversation's current exchange, on screen; it becomes searchable at its terminal — the
-- same transaction as before (finish, restart interruption, journal tombstone). Turns
-- inserted already ended (import, branch copies) are indexed at insert, as before.
DROP TRIGGER search_turn_insert;
DROP TRIGGER search_turn_update;

CREATE TRIGGER search_turn_insert AFTER INSERT ON turns WHEN new.state <> 'running' BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.conversation_id, new.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id;
END;

CREATE TRIGGER search_turn_end AFTER UPDATE OF state ON turns
WHEN old.state = 'running' AND new.state <> 'running' BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.conversation_id, new.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id;
END;

CREATE TRIGGER search_turn_update AFTER UPDATE OF state, user_message, assistant_message ON turns
WHEN old.state <> 'running' BEGIN
  UPDATE search_fts SET user_message = new.user_message,
    assistant_message =
      CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    WHERE rowid = (SELECT doc FROM search_docs WHERE turn_id = new.id);
END;

-- A Turn still running when this migration runs (restart recovery ends it next) loses its
-- early doc, so the end trigger above indexes it exactly once.
DELETE FROM search_fts WHERE rowid IN (
  SELECT d.doc FROM search_docs d JOIN turns t ON t.id = d.turn_id WHERE t.state = 'running'
);
DELETE FROM search_docs WHERE turn_id IN (SELECT id FROM turns WHERE state = 'running');
