-- [LC-6] Audit-lite: every access of an external ACP runner to what the product owns
-- (fs/read_text_file, fs/write_text_file, session/request_permission, the scoped MCP
-- gateway) with the resource it named and the decision. A Run's rows go with the Run.
CREATE TABLE runner_access (
  id         TEXT PRIMARY KEY,
  run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  runner     TEXT NOT NULL CHECK (length(runner) BETWEEN 1 AND 32),
  call_id    TEXT CHECK (call_id IS NULL OR length(call_id) <= 16),
  method     TEXT NOT NULL CHECK (length(method) BETWEEN 1 AND 64),
  resource   TEXT NOT NULL CHECK (length(CAST(resource AS BLOB)) <= 1024),
  decision   TEXT NOT NULL CHECK (decision IN ('allowed','approved','denied','refused','expired')),
  code       TEXT CHECK (code IS NULL OR length(code) <= 64),
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX runner_access_run ON runner_access(run_id, created_at);
