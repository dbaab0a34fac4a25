-- Per-Agent tool policy [TL-9]: the Agent's rules as one validated JSON document on its row
-- (deleted with the row), and policy changes in the lifecycle audit with what changed.
ALTER TABLE agents ADD COLUMN policy TEXT CHECK (policy IS NULL OR length(policy) <= 262144);

-- SQLite cannot widen a CHECK in place: the audit is rebuilt with the new event and a detail
-- column (ids, order and rows kept).
CREATE TABLE agent_audit_v6 (
  id          INTEGER PRIMARY KEY,
  agent_id    TEXT NOT NULL CHECK (length(agent_id) = 36),
  event       TEXT NOT NULL CHECK (event IN (
                'created','renamed','upgrade_fenced','upgraded','upgrade_aborted',
                'delete_fenced','deleted','delete_residue','recovered','orphan_found',
                'policy_changed')),
  generation  INTEGER,
  residue     INTEGER CHECK (residue IS NULL OR residue >= 0),
  at          INTEGER NOT NULL,
  detail      TEXT CHECK (detail IS NULL OR length(detail) <= 262144)
) STRICT;
INSERT INTO agent_audit_v6 (id, agent_id, event, generation, residue, at)
  SELECT id, agent_id, event, generation, residue, at FROM agent_audit;
DROP TABLE agent_audit;
ALTER TABLE agent_audit_v6 RENAME TO agent_audit;
CREATE INDEX agent_audit_agent ON agent_audit(agent_id, id);
