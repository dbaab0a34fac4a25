-- Extensions [LC-5]: MCP servers the operator added through the API (servers
-- given with `serve --mcp` live only in the process), and which of them each
-- Agent enabled (default: none). The CHECKs restate runtime/extensions rules.
CREATE TABLE extensions (
  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 16),
  url TEXT NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  ca_pem TEXT CHECK (ca_pem IS NULL OR length(ca_pem) <= 16384),
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE agent_extensions (
  agent_id TEXT NOT NULL,
  name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 16),
  position INTEGER NOT NULL CHECK (position BETWEEN 0 AND 7),
  PRIMARY KEY (agent_id, name)
) STRICT;
