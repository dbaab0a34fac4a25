-- [LC-2] Delegations this Agent made (it is the PARENT): one row per agent/delegate call
-- that started a child Run in another Agent, and its two-message mailbox. A refused
-- delegation writes nothing. Rows go with the parent Run; retention keeps the newest 128.
CREATE TABLE delegations (
  id                    TEXT PRIMARY KEY CHECK (length(id) = 36),
  parent_run_id         TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  parent_conversation_id TEXT NOT NULL CHECK (length(parent_conversation_id) = 36),
  call_id               TEXT NOT NULL CHECK (length(call_id) <= 16),
  child_agent_id        TEXT NOT NULL CHECK (length(child_agent_id) = 36),
  child_conversation_id TEXT NOT NULL CHECK (length(child_conversation_id) = 36),
  child_run_id          TEXT CHECK (child_run_id IS NULL OR length(child_run_id) = 36),
  state                 TEXT NOT NULL CHECK (state IN
    ('running','completed','failed','cancelled','timeout','interrupted')),
  code                  TEXT CHECK (code IS NULL OR length(code) <= 64),
  created_at            INTEGER NOT NULL,
  finished_at           INTEGER,
  -- [LC-2] one delegation per parent Run, enforced by the database as well.
  UNIQUE (parent_run_id)
) STRICT;
CREATE INDEX delegations_created ON delegations(created_at);
CREATE INDEX delegations_running ON delegations(state) WHERE state = 'running';

-- The mailbox: exactly two directions, at most one message each (so at most two per
-- delegation): the parent's message (≤ 4 KiB) and the child's answer (≤ 8 KiB).
CREATE TABLE delegation_mailbox (
  delegation_id TEXT NOT NULL REFERENCES delegations(id) ON DELETE CASCADE,
  direction     TEXT NOT NULL CHECK (direction IN ('parent_to_child','child_to_parent')),
  body          TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 8192),
  bytes         INTEGER NOT NULL CHECK (bytes BETWEEN 0 AND 1048576),
  truncated     INTEGER NOT NULL CHECK (truncated IN (0, 1)),
  digest        TEXT NOT NULL CHECK (length(digest) <= 80),
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (delegation_id, direction)
) STRICT, WITHOUT ROWID;
