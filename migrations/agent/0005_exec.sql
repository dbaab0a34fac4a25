-- [EX-4, EX-5] What exec/command and exec/apply did, per tool call: the command's argv,
-- cwd, outcome, bounded output and change set (command), or the per-path outcomes
-- (apply). Unified diffs per path live in exec_diffs. Retention keeps the newest Runs
-- with records (runtime/store/exec_store.ts); a Run's rows go with the Run.
CREATE TABLE exec_records (
  run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  call_id    TEXT NOT NULL CHECK (length(call_id) <= 128),
  seq        INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 1024),
  kind       TEXT NOT NULL CHECK (kind IN ('command','apply')),
  body       TEXT NOT NULL CHECK (length(CAST(body AS BLOB)) <= 524288),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, call_id)
) STRICT;
CREATE INDEX exec_records_created ON exec_records(created_at);

CREATE TABLE exec_diffs (
  run_id  TEXT NOT NULL,
  call_id TEXT NOT NULL,
  path    TEXT NOT NULL CHECK (length(CAST(path AS BLOB)) <= 1024),
  diff    TEXT NOT NULL CHECK (length(CAST(diff AS BLOB)) <= 4194304),
  PRIMARY KEY (run_id, call_id, path),
  FOREIGN KEY (run_id, call_id) REFERENCES exec_records(run_id, call_id) ON DELETE CASCADE
) STRICT;
