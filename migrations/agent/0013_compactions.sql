-- [CX-9] /compact: a model-written summary of a Conversation's older history. `pending` until
-- the operator keeps (`active`) or drops (`dropped`) it; undo turns `active` into `undone`;
-- keeping a newer one makes the older `superseded`. At most one `active` per Conversation.
-- History then = the active summary + the completed Turns after `through_seq`; the Turns
-- themselves (the transcript) never change.
CREATE TABLE compactions (
  id              TEXT PRIMARY KEY CHECK (length(id) = 36),
  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  through_turn_id TEXT NOT NULL,
  through_seq     INTEGER NOT NULL,
  turns           INTEGER NOT NULL CHECK (turns >= 1),
  summary         TEXT NOT NULL CHECK (length(CAST(summary AS BLOB)) BETWEEN 1 AND 8192),
  model_id        TEXT NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('pending','active','dropped','undone','superseded')),
  created_at      INTEGER NOT NULL,
  decided_at      INTEGER
) STRICT;
CREATE INDEX compactions_conversation ON compactions(conversation_id, created_at);
CREATE UNIQUE INDEX compactions_one_active ON compactions(conversation_id) WHERE state = 'active';
