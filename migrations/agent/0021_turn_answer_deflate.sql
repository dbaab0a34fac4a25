-- [PF-4, UI-9] A completed Turn's answer may be stored raw-deflated: `turns.assistant_z`, with
-- `assistant_message` then NULL (runtime/store/agent_state_store.ts writes and reads it; every
-- reader sees the text). The plain copy was the answer's second full copy on disk (the journal
-- keeps it deflated): ~9 pages per 8 KB answer.
--
-- The search index can no longer read the answer through a view (a view cannot inflate), so it
-- keeps no link to the text at all: `search_fts` becomes contentless with `contentless_delete`
-- (a doc is removed by its rowid, without its old text), and snippets are made per search from
-- the hits' texts (runtime/store/search_store.ts). The triggers index what the database holds
-- in plain (titles, user messages, plain answers); a deflated answer is indexed by the store in
-- the same transaction that writes it. Its text cannot be changed in SQL afterwards (refused):
-- the index could not follow.
ALTER TABLE turns ADD COLUMN assistant_z BLOB
  CHECK (assistant_z IS NULL OR (state = 'completed' AND assistant_message IS NULL
    AND length(assistant_z) BETWEEN 1 AND 262144));

DROP TRIGGER search_conversation_insert;
DROP TRIGGER search_conversation_title;
DROP TRIGGER search_conversation_delete;
DROP TRIGGER search_turn_insert;
DROP TRIGGER search_turn_end;
DROP TRIGGER search_turn_update;
DROP TRIGGER search_turn_delete;
DROP TABLE search_fts;

CREATE VIRTUAL TABLE search_fts USING fts5(
  title, user_message, assistant_message, tokenize = 'unicode61 remove_diacritics 2',
  content = '', contentless_delete = 1
);
-- The same docs with the same text as before (every answer is still plain here).
INSERT INTO search_fts (rowid, title, user_message, assistant_message)
  SELECT doc, title, user_message, assistant_message FROM search_content;
DROP VIEW search_content;

CREATE TRIGGER search_conversation_insert AFTER INSERT ON conversations BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.id, NULL);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, new.title, '', '' FROM search_docs
    WHERE conversation_id = new.id AND turn_id IS NULL;
END;

CREATE TRIGGER search_conversation_title AFTER UPDATE OF title ON conversations BEGIN
  DELETE FROM search_fts WHERE rowid IN
    (SELECT doc FROM search_docs WHERE conversation_id = old.id AND turn_id IS NULL);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, new.title, '', '' FROM search_docs
    WHERE conversation_id = new.id AND turn_id IS NULL;
END;

CREATE TRIGGER search_conversation_delete AFTER DELETE ON conversations BEGIN
  DELETE FROM search_fts WHERE rowid IN
    (SELECT doc FROM search_docs WHERE conversation_id = old.id AND turn_id IS NULL);
  DELETE FROM search_docs WHERE conversation_id = old.id AND turn_id IS NULL;
END;

-- A Turn is indexed once it has ended (0015): inserted ended (import, branch copies) or at its
-- terminal. A deflated answer's doc is written by the store (its text is not in the row).
CREATE TRIGGER search_turn_insert AFTER INSERT ON turns WHEN new.state <> 'running' BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.conversation_id, new.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id AND new.assistant_z IS NULL;
END;

CREATE TRIGGER search_turn_end AFTER UPDATE OF state ON turns
WHEN old.state = 'running' AND new.state <> 'running' BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.conversation_id, new.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id AND new.assistant_z IS NULL;
END;

CREATE TRIGGER search_turn_deflated_fixed
BEFORE UPDATE OF state, user_message, assistant_message, assistant_z ON turns
WHEN old.assistant_z IS NOT NULL OR (old.state <> 'running' AND new.assistant_z IS NOT NULL) BEGIN
  SELECT RAISE(ABORT, 'a deflated answer is written once, when its Turn ends');
END;

CREATE TRIGGER search_turn_update AFTER UPDATE OF state, user_message, assistant_message ON turns
WHEN old.state <> 'running' BEGIN
  DELETE FROM search_fts WHERE rowid IN (SELECT doc FROM search_docs WHERE turn_id = old.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id;
END;

CREATE TRIGGER search_turn_delete AFTER DELETE ON turns BEGIN
  DELETE FROM search_fts WHERE rowid IN (SELECT doc FROM search_docs WHERE turn_id = old.id);
  DELETE FROM search_docs WHERE turn_id = old.id;
END;
