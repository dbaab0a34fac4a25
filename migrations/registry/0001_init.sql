-- Agent registry [AG-1]: lifecycle authority for every Agent.
CREATE TABLE agents (
  id          TEXT PRIMARY KEY CHECK (length(id) = 36),
  name        TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
  state       TEXT NOT NULL CHECK (state IN ('provisioning','active','upgrading','deleting')),
  generation  INTEGER NOT NULL DEFAULT 1 CHECK (generation >= 1),
  is_system   INTEGER NOT NULL DEFAULT 0 CHECK (is_system IN (0,1)),
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) STRICT;
