-- [LC-3] Skills installed on this Agent: the verified archive's manifest, its SHA-256 (the
-- operator's X-Skill-SHA256) and the entry script's bytes. The script is materialised into a
-- private, read-only directory for each call; nothing of a skill lives in the workspace.
CREATE TABLE skills (
  name          TEXT PRIMARY KEY CHECK (length(name) BETWEEN 2 AND 32),
  description   TEXT NOT NULL CHECK (length(description) <= 1024),
  entry         TEXT NOT NULL CHECK (length(entry) BETWEEN 1 AND 64),
  manifest_json TEXT NOT NULL CHECK (length(manifest_json) <= 4096),
  digest        TEXT NOT NULL CHECK (length(digest) = 64),
  archive_bytes INTEGER NOT NULL CHECK (archive_bytes > 0),
  script        BLOB NOT NULL CHECK (length(script) <= 16384),
  installed_at  INTEGER NOT NULL
) STRICT;
