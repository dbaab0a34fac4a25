-- Agent lifecycle [AG-1..3]: the staged generation of an upgrade, one system Agent,
-- and an append-only audit of lifecycle transitions (including the residual audit
-- written when a deleted Agent's row is removed).
ALTER TABLE agents ADD COLUMN pending_generation INTEGER
  CHECK (pending_generation IS NULL OR pending_generation >= 2);

CREATE UNIQUE INDEX agents_one_system ON agents(is_system) WHERE is_system = 1;

CREATE TABLE agent_audit (
  id          INTEGER PRIMARY KEY,
  agent_id    TEXT NOT NULL CHECK (length(agent_id) = 36),
  event       TEXT NOT NULL CHECK (event IN (
                'created','renamed','upgrade_fenced','upgraded','upgrade_aborted',
                'delete_fenced','deleted','delete_residue','recovered','orphan_found')),
  generation  INTEGER,
  residue     INTEGER CHECK (residue IS NULL OR residue >= 0),
  at          INTEGER NOT NULL
) STRICT;

CREATE INDEX agent_audit_agent ON agent_audit(agent_id, id);
