-- [UI-9] Conversation search: an FTS5 index over Conversation titles and Turn messages,
-- kept in sync by triggers, so every transaction that writes a title or a Turn (create,
-- rename, branch, import, begin/finish Turn, restart interruption, delete) updates the
-- index in that same transaction. search_docs maps a stable INTEGER doc id (the FTS rowid)
-- to what it indexes: one doc per Conversation title (turn_id NULL) and one per Turn.
-- Only visible text is indexed: the user message and, for completed Turns, the answer.
CREATE TABLE search_docs (
  doc             INTEGER PRIMARY KEY,
  conversation_id TEXT NOT NULL CHECK (length(conversation_id) = 36),
  turn_id         TEXT UNIQUE CHECK (turn_id IS NULL OR length(turn_id) = 36)
) STRICT;
CREATE UNIQUE INDEX search_docs_title ON search_docs(conversation_id) WHERE turn_id IS NULL;
CREATE INDEX search_docs_conversation ON search_docs(conversation_id);

CREATE VIRTUAL TABLE search_fts USING fts5(
  title, user_message, assistant_message, tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER search_conversation_insert AFTER INSERT ON conversations BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.id, NULL);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, new.title, '', '' FROM search_docs
    WHERE conversation_id = new.id AND turn_id IS NULL;
END;

CREATE TRIGGER search_conversation_title AFTER UPDATE OF title ON conversations BEGIN
  UPDATE search_fts SET title = new.title
    WHERE rowid = (SELECT doc FROM search_docs WHERE conversation_id = new.id AND turn_id IS NULL);
END;

CREATE TRIGGER search_conversation_delete AFTER DELETE ON conversations BEGIN
  DELETE FROM search_fts
    WHERE rowid IN (SELECT doc FROM search_docs WHERE conversation_id = old.id);
  DELETE FROM search_docs WHERE conversation_id = old.id;
END;

CREATE TRIGGER search_turn_insert AFTER INSERT ON turns BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.conversation_id, new.id);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id;
END;

CREATE TRIGGER search_turn_update AFTER UPDATE OF state, user_message, assistant_message ON turns
BEGIN
  UPDATE search_fts SET user_message = new.user_message,
    assistant_message =
      CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    WHERE rowid = (SELECT doc FROM search_docs WHERE turn_id = new.id);
END;

CREATE TRIGGER search_turn_delete AFTER DELETE ON turns BEGIN
  DELETE FROM search_fts WHERE rowid = (SELECT doc FROM search_docs WHERE turn_id = old.id);
  DELETE FROM search_docs WHERE turn_id = old.id;
END;

-- Backfill what existed before this migration (same transaction as the migration).
INSERT INTO search_docs (conversation_id, turn_id) SELECT id, NULL FROM conversations;
INSERT INTO search_docs (conversation_id, turn_id) SELECT conversation_id, id FROM turns;
INSERT INTO search_fts (rowid, title, user_message, assistant_message)
  SELECT d.doc, c.title, '', '' FROM search_docs d JOIN conversations c ON c.id = d.conversation_id
  WHERE d.turn_id IS NULL;
INSERT INTO search_fts (rowid, title, user_message, assistant_message)
  SELECT d.doc, '', t.user_message,
         CASE WHEN t.state = 'completed' THEN coalesce(t.assistant_message, '') ELSE '' END
  FROM search_docs d JOIN turns t ON t.id = d.turn_id;
