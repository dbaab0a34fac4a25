-- [PF-4, UI-9] The search index keeps no copy of the text. FTS5 stored every indexed title and
-- message in its own content table (search_fts_content): a completed Turn's answer was written
-- three times per Turn (the journal's completed block, turns.assistant_message and that copy).
-- search_fts becomes an external-content table over the view search_content, which yields for
-- each doc exactly the text that was indexed: a title doc its Conversation's title; a Turn doc
-- the user message and, for a completed Turn, the answer. snippet() and highlight() read the
-- text through the view, so search answers exactly as before.
--
-- An external-content index cannot look up what to remove: every trigger that changes or
-- removes an indexed doc first issues FTS5's 'delete' command with the OLD values (the text
-- that was indexed), then inserts the new ones. Each trigger handles only its own row's doc
-- (a Conversation's title doc; a Turn's doc), so the cascades of a Conversation delete (its
-- Turns, its branches) remove every doc whatever order SQLite runs the triggers in.
DROP TRIGGER search_conversation_insert;
DROP TRIGGER search_conversation_title;
DROP TRIGGER search_conversation_delete;
DROP TRIGGER search_turn_insert;
DROP TRIGGER search_turn_end;
DROP TRIGGER search_turn_update;
DROP TRIGGER search_turn_delete;
DROP TABLE search_fts;

CREATE VIEW search_content (doc, title, user_message, assistant_message) AS
  SELECT d.doc, c.title, '', ''
    FROM search_docs d JOIN conversations c ON c.id = d.conversation_id
    WHERE d.turn_id IS NULL
  UNION ALL
  SELECT d.doc, '', t.user_message,
         CASE WHEN t.state = 'completed' THEN coalesce(t.assistant_message, '') ELSE '' END
    FROM search_docs d JOIN turns t ON t.id = d.turn_id;

CREATE VIRTUAL TABLE search_fts USING fts5(
  title, user_message, assistant_message, tokenize = 'unicode61 remove_diacritics 2',
  content = 'search_content', content_rowid = 'doc'
);

CREATE TRIGGER search_conversation_insert AFTER INSERT ON conversations BEGIN
  INSERT INTO search_docs (conversation_id, turn_id) VALUES (new.id, NULL);
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, new.title, '', '' FROM search_docs
    WHERE conversation_id = new.id AND turn_id IS NULL;
END;

CREATE TRIGGER search_conversation_title AFTER UPDATE OF title ON conversations BEGIN
  INSERT INTO search_fts (search_fts, rowid, title, user_message, assistant_message)
    SELECT 'delete', doc, old.title, '', '' FROM search_docs
    WHERE conversation_id = old.id AND turn_id IS NULL;
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, new.title, '', '' FROM search_docs
    WHERE conversation_id = new.id AND turn_id IS NULL;
END;

CREATE TRIGGER search_conversation_delete AFTER DELETE ON conversations BEGIN
  INSERT INTO search_fts (search_fts, rowid, title, user_message, assistant_message)
    SELECT 'delete', doc, old.title, '', '' FROM search_docs
    WHERE conversation_id = old.id AND turn_id IS NULL;
  DELETE FROM search_docs WHERE conversation_id = old.id AND turn_id IS NULL;
END;

-- A Turn is indexed once it has ended (0015): inserted ended (import, branch copies) or at
-- its terminal.
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
  INSERT INTO search_fts (search_fts, rowid, title, user_message, assistant_message)
    SELECT 'delete', doc, '', old.user_message,
           CASE WHEN old.state = 'completed' THEN coalesce(old.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = old.id;
  INSERT INTO search_fts (rowid, title, user_message, assistant_message)
    SELECT doc, '', new.user_message,
           CASE WHEN new.state = 'completed' THEN coalesce(new.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = new.id;
END;

CREATE TRIGGER search_turn_delete AFTER DELETE ON turns BEGIN
  INSERT INTO search_fts (search_fts, rowid, title, user_message, assistant_message)
    SELECT 'delete', doc, '', old.user_message,
           CASE WHEN old.state = 'completed' THEN coalesce(old.assistant_message, '') ELSE '' END
    FROM search_docs WHERE turn_id = old.id;
  DELETE FROM search_docs WHERE turn_id = old.id;
END;

-- Index what exists from the view (the docs 0006/0015 kept: titles and ended Turns).
INSERT INTO search_fts (search_fts) VALUES ('rebuild');
