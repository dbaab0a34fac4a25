-- Per-Agent private state [CV-1]: Conversations and Turns.
CREATE TABLE conversations (
  id          TEXT PRIMARY KEY CHECK (length(id) = 36),
  title       TEXT NOT NULL,
  revision    INTEGER NOT NULL DEFAULT 0,
  parent_id   TEXT REFERENCES conversations(id) ON DELETE CASCADE,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE turns (
  id              TEXT PRIMARY KEY CHECK (length(id) = 36),
  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  seq             INTEGER NOT NULL,
  state           TEXT NOT NULL CHECK (state IN ('running','completed','failed','cancelled','interrupted')),
  user_message    TEXT NOT NULL,
  assistant_message TEXT,
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER,
  UNIQUE (conversation_id, seq)
) STRICT;

-- [CV-2] at most one running Turn per Conversation, enforced by the database.
CREATE UNIQUE INDEX turns_one_running ON turns(conversation_id) WHERE state = 'running';
