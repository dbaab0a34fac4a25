-- Runs, the canonical event journal, the usage ledger, permissions and the
-- operation ledger [CV-2, EV-1..5, MB-9, TL-2]. Bounds are CHECKs so a bug in
-- the Run engine cannot exceed them.
CREATE TABLE runs (
  id              TEXT PRIMARY KEY CHECK (length(id) = 36),
  conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
  turn_id         TEXT NOT NULL UNIQUE REFERENCES turns(id) ON DELETE CASCADE,
  state           TEXT NOT NULL
    CHECK (state IN ('running','completed','failed','cancelled','interrupted')),
  -- full: every durable event kept; snapshot_only: reduced by retention; tombstone: pruned [EV-5]
  journal         TEXT NOT NULL DEFAULT 'full'
    CHECK (journal IN ('full','snapshot_only','tombstone')),
  model_id        TEXT NOT NULL CHECK (length(model_id) BETWEEN 1 AND 64),
  started_summary TEXT NOT NULL CHECK (length(started_summary) <= 4096),
  snapshot        TEXT CHECK (snapshot IS NULL OR length(snapshot) <= 16384),
  event_count     INTEGER NOT NULL DEFAULT 0 CHECK (event_count BETWEEN 0 AND 512),
  durable_bytes   INTEGER NOT NULL DEFAULT 0 CHECK (durable_bytes BETWEEN 0 AND 262144),
  last_digest     TEXT NOT NULL,
  terminal_code   TEXT CHECK (terminal_code IS NULL OR length(terminal_code) <= 64),
  created_at      INTEGER NOT NULL,
  finished_at     INTEGER
) STRICT;

-- [CV-2] one active Run per Conversation, enforced by the database.
CREATE UNIQUE INDEX runs_one_active ON runs(conversation_id) WHERE state = 'running';
CREATE INDEX runs_retention ON runs(journal, created_at);

CREATE TABLE run_events (
  run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq     INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 512),
  kind    TEXT NOT NULL CHECK (length(kind) <= 64),
  body    TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 65536),
  digest  TEXT NOT NULL CHECK (length(digest) = 71),
  PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

-- [MB-9] one row per logical model call; ≤ 64 per Run.
CREATE TABLE usage_ledger (
  run_id         TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  call           INTEGER NOT NULL CHECK (call BETWEEN 1 AND 64),
  state          TEXT NOT NULL CHECK (state IN ('started','complete','incomplete')),
  model_id       TEXT NOT NULL,
  scope_digest   TEXT NOT NULL,
  token_estimate INTEGER NOT NULL,
  input_tokens   INTEGER,
  output_tokens  INTEGER,
  price          REAL,
  created_at     INTEGER NOT NULL,
  updated_at     INTEGER NOT NULL,
  PRIMARY KEY (run_id, call)
) STRICT;
CREATE INDEX usage_scope ON usage_ledger(scope_digest, state, updated_at);

-- [TL-2] pending approvals (bounded, with a preview).
CREATE TABLE permissions (
  id         TEXT PRIMARY KEY CHECK (length(id) = 36),
  run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  call_id    TEXT NOT NULL,
  tool_id    TEXT NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('pending','approved','denied','expired')),
  preview    TEXT NOT NULL CHECK (length(CAST(preview AS BLOB)) <= 4096),
  created_at INTEGER NOT NULL,
  decided_at INTEGER
) STRICT;
CREATE INDEX permissions_state ON permissions(state, created_at);

-- [TL-2] operation ledger: intent → dispatched → outcome | outcome_unknown.
CREATE TABLE operations (
  id            TEXT PRIMARY KEY CHECK (length(id) = 36),
  run_id        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  call_id       TEXT NOT NULL,
  tool_id       TEXT NOT NULL,
  state         TEXT NOT NULL
    CHECK (state IN ('intent','dispatched','succeeded','failed','outcome_unknown')),
  executor      TEXT,
  args_digest   TEXT NOT NULL,
  result_digest TEXT,
  code          TEXT,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  UNIQUE (run_id, call_id)
) STRICT;
CREATE INDEX operations_state ON operations(state);
CREATE INDEX operations_run ON operations(run_id, created_at);
