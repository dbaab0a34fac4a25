-- [EX-6] Background Tasks of an Agent: an exec/command with `background: true` that
-- outlives the Run that started it. One row per Task; its output is spooled to the Task
-- root (.runtime/agents/<agent>/tasks/<task>/output.log, ≤ 1 MiB, tail kept). run_id is
-- the starting Run (no foreign key: the Task outlives the Run's retention). Retention:
-- the newest 128 finished Tasks, none older than 7 days (runtime/store/task_store.ts).
CREATE TABLE tasks (
  id              TEXT PRIMARY KEY CHECK (length(id) = 36),
  run_id          TEXT NOT NULL CHECK (length(run_id) <= 64),
  conversation_id TEXT CHECK (conversation_id IS NULL OR length(conversation_id) <= 64),
  call_id         TEXT NOT NULL CHECK (length(call_id) <= 128),
  argv            TEXT NOT NULL CHECK (length(CAST(argv AS BLOB)) <= 65536),
  cwd             TEXT NOT NULL CHECK (length(CAST(cwd AS BLOB)) <= 1024),
  timeout_s       INTEGER NOT NULL CHECK (timeout_s BETWEEN 1 AND 1800),
  status          TEXT NOT NULL CHECK (status IN ('running','exited','signaled','timeout',
                    'cancelled','interrupted','outcome_unknown','failed')),
  exit_code       INTEGER,
  signal          TEXT CHECK (signal IS NULL OR length(signal) <= 32),
  error_code      TEXT CHECK (error_code IS NULL OR length(error_code) <= 64),
  output_bytes    INTEGER NOT NULL DEFAULT 0 CHECK (output_bytes >= 0),
  output_omitted  INTEGER NOT NULL DEFAULT 0 CHECK (output_omitted >= 0),
  result          TEXT CHECK (result IS NULL OR length(CAST(result AS BLOB)) <= 8192),
  change_set      TEXT CHECK (change_set IS NULL OR length(CAST(change_set AS BLOB)) <= 524288),
  created_at      INTEGER NOT NULL,
  ended_at        INTEGER
) STRICT;
CREATE INDEX tasks_created ON tasks(created_at);
CREATE INDEX tasks_status ON tasks(status);
