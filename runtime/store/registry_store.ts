/**
 * The only SQL for `data/agent-registry.sqlite` [AG-1]: Agent rows, their
 * lifecycle state and generation, and the append-only lifecycle audit.
 *
 * Every state change is a compare-and-swap on the current state (and, for
 * upgrades, the generation), so two concurrent lifecycle operations can never
 * both win; callers turn a lost swap into `agent_busy`. The audit keeps the
 * newest AGENT_AUDIT_ROWS_MAX rows.
 */
import type { DatabaseSync } from "node:sqlite";
import { AGENT_AUDIT_ROWS_MAX } from "../limits.ts";
import { expectOneChange, transaction } from "./sqlite.ts";

export type AgentState = "provisioning" | "active" | "upgrading" | "deleting";

export type AuditEvent =
  | "created"
  | "renamed"
  | "upgrade_fenced"
  | "upgraded"
  | "upgrade_aborted"
  | "delete_fenced"
  | "deleted"
  | "delete_residue"
  | "recovered"
  | "orphan_found"
  | "policy_changed";

export interface AgentRow {
  id: string;
  name: string;
  state: AgentState;
  generation: number;
  pending_generation: number | null;
  is_system: number;
  created_at: number;
  updated_at: number;
  /** The Agent's default catalog model; null ⇒ the catalog default [MB-14]. */
  default_model_id?: string | null;
  /** 1 ⇒ `think` on for thinking models [MB-12]. */
  reasoning?: number;
  /** The Agent's own lower agent-loop bounds; null ⇒ the product's [SB-8]. */
  max_model_calls?: number | null;
  max_tool_calls?: number | null;
  run_deadline_s?: number | null;
  /** The external ACP runner the Agent's Turns run on; null ⇒ native [LC-6]. */
  runner?: string | null;
  /** 1 ⇒ document/extract_text offered to its Runs [LC-4]. */
  documents?: number;
}

export interface AuditRow {
  id: number;
  agent_id: string;
  event: AuditEvent;
  generation: number | null;
  residue: number | null;
  at: number;
}

const COLUMNS =
  "id, name, state, generation, pending_generation, is_system, created_at, updated_at, " +
  "default_model_id, reasoning, max_model_calls, max_tool_calls, run_deadline_s, runner, documents";

export function getAgent(db: DatabaseSync, id: string): AgentRow | null {
  const row = db.prepare(`SELECT ${COLUMNS} FROM agents WHERE id = ?`).get(id);
  return (row as AgentRow | undefined) ?? null;
}

/** All Agents, system Agent first, then by creation time (bounded by AGENTS_MAX). */
export function listAgents(db: DatabaseSync): AgentRow[] {
  return db.prepare(
    `SELECT ${COLUMNS} FROM agents ORDER BY is_system DESC, created_at, id`,
  ).all() as unknown as AgentRow[];
}

/**
 * Every registry row as stored, unvalidated (bounded by AGENTS_MAX): the caller
 * validates each row, so one malformed row never hides the others [AG-5].
 */
export function listAgentRowsRaw(db: DatabaseSync): Record<string, unknown>[] {
  return db.prepare(`SELECT ${COLUMNS} FROM agents ORDER BY is_system DESC, created_at, id`)
    .all() as Record<string, unknown>[];
}

/**
 * Fence for deleting an Agent that is unavailable [AG-5]: any state → deleting
 * (no Run can be admitted for it, so there is nothing to drain). Never the system Agent.
 */
export function fenceUnavailableForDelete(db: DatabaseSync, id: string, now: number): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE agents SET state = 'deleting', pending_generation = NULL, updated_at = ?
       WHERE id = ? AND is_system = 0`,
    ).run(now, id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "delete_fenced", now);
    return true;
  });
}

/**
 * Final step of deleting an unavailable Agent [AG-5]: the row goes whatever the
 * residue (what could not be removed safely stays on disk as an orphan the
 * start-up audit reports), with the residual audit, in one transaction.
 */
export function finishUnavailableDelete(
  db: DatabaseSync,
  id: string,
  residue: number,
  now: number,
): boolean {
  return transaction(db, () => {
    if (residue > 0) appendAudit(db, id, "delete_residue", now, { residue });
    const r = db.prepare("DELETE FROM agents WHERE id = ? AND state = 'deleting'").run(id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "deleted", now, { residue });
    return true;
  });
}

/**
 * Removes a registry row whose id failed validation [AG-5], by its stored value.
 * Nothing else names it (its id cannot name a path); the audit records no row
 * for it since its id may not fit the audit's id column.
 */
export function deleteInvalidRow(db: DatabaseSync, rawId: unknown): boolean {
  if (typeof rawId !== "string" && typeof rawId !== "number") return false;
  return db.prepare("DELETE FROM agents WHERE id = ?").run(rawId).changes >= 1;
}

export function countAgents(db: DatabaseSync): number {
  return (db.prepare("SELECT count(*) AS n FROM agents").get() as { n: number }).n;
}

export function appendAudit(
  db: DatabaseSync,
  agentId: string,
  event: AuditEvent,
  at: number,
  extra: { generation?: number; residue?: number; detail?: string } = {},
): void {
  db.prepare(
    "INSERT INTO agent_audit (agent_id, event, generation, residue, at, detail) VALUES (?, ?, ?, ?, ?, ?)",
  ).run(agentId, event, extra.generation ?? null, extra.residue ?? null, at, extra.detail ?? null);
  // Bounded history [OP-3]: only the newest AGENT_AUDIT_ROWS_MAX rows are kept (a primary-key
  // range delete, so at most one row per append in steady state).
  db.prepare("DELETE FROM agent_audit WHERE id <= (SELECT max(id) FROM agent_audit) - ?").run(
    AGENT_AUDIT_ROWS_MAX,
  );
}

/** Audit rows of one Agent, oldest first (bounded by the caller's limit). */
export function listAudit(db: DatabaseSync, agentId: string, limit: number): AuditRow[] {
  return db.prepare(
    "SELECT id, agent_id, event, generation, residue, at FROM agent_audit WHERE agent_id = ? ORDER BY id LIMIT ?",
  ).all(agentId, limit) as unknown as AuditRow[];
}

/**
 * Inserts a new Agent in `provisioning` when fewer than `max` Agents exist.
 * Returns false when the cap is reached (checked inside the same transaction).
 */
export function insertProvisioningAgent(
  db: DatabaseSync,
  row: { id: string; name: string; isSystem: boolean; now: number },
  max: number,
): boolean {
  return transaction(db, () => {
    if (countAgents(db) >= max) return false;
    db.prepare(
      `INSERT INTO agents (id, name, state, generation, is_system, created_at, updated_at)
       VALUES (?, ?, 'provisioning', 1, ?, ?, ?)`,
    ).run(row.id, row.name, row.isSystem ? 1 : 0, row.now, row.now);
    appendAudit(db, row.id, "created", row.now, { generation: 1 });
    return true;
  });
}

/** provisioning → active. */
export function markActive(db: DatabaseSync, id: string, now: number): boolean {
  const r = db.prepare(
    "UPDATE agents SET state = 'active', updated_at = ? WHERE id = ? AND state = 'provisioning'",
  ).run(now, id);
  return r.changes === 1;
}

/** Display metadata only; never touches state or generation [AG-3]. */
export function renameAgent(db: DatabaseSync, id: string, name: string, now: number): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE agents SET name = ?, updated_at = ?
       WHERE id = ? AND is_system = 0 AND state IN ('active','upgrading')`,
    ).run(name, now, id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "renamed", now);
    return true;
  });
}

/** The fields PATCH /api/agents/<agent> may change. */
export interface AgentSettingsPatch {
  name?: string;
  default_model_id?: string | null;
  reasoning?: boolean;
  max_model_calls?: number | null;
  max_tool_calls?: number | null;
  run_deadline_s?: number | null;
  runner?: string | null;
  documents?: boolean;
}

/**
 * Name and model settings in one statement (all or nothing) [MB-12, MB-14];
 * never touches state or generation. A rename is audited.
 */
export function updateAgentSettings(
  db: DatabaseSync,
  id: string,
  p: AgentSettingsPatch,
  now: number,
): boolean {
  return transaction(db, () => {
    const sets: string[] = ["updated_at = ?"];
    const args: (string | number | null)[] = [now];
    if (p.name !== undefined) (sets.push("name = ?"), args.push(p.name));
    if (p.default_model_id !== undefined) {
      sets.push("default_model_id = ?");
      args.push(p.default_model_id);
    }
    if (p.reasoning !== undefined) (sets.push("reasoning = ?"), args.push(p.reasoning ? 1 : 0));
    if (p.documents !== undefined) (sets.push("documents = ?"), args.push(p.documents ? 1 : 0));
    for (const k of ["max_model_calls", "max_tool_calls", "run_deadline_s", "runner"] as const) {
      const v = p[k];
      if (v !== undefined) (sets.push(`${k} = ?`), args.push(v));
    }
    const r = db.prepare(
      `UPDATE agents SET ${sets.join(", ")} WHERE id = ? AND state IN ('active','upgrading')`,
    ).run(...args, id);
    if (r.changes !== 1) return false;
    if (p.name !== undefined) appendAudit(db, id, "renamed", now);
    return true;
  });
}

/** Admission fence for an upgrade: active → upgrading with the next generation staged. */
export function fenceForUpgrade(db: DatabaseSync, id: string, now: number): number | null {
  return transaction(db, () => {
    const row = getAgent(db, id);
    if (!row || row.state !== "active" || row.is_system === 1) return null;
    const next = row.generation + 1;
    expectOneChange(
      db.prepare(
        `UPDATE agents SET state = 'upgrading', pending_generation = ?, updated_at = ?
         WHERE id = ? AND state = 'active' AND generation = ?`,
      ).run(next, now, id, row.generation),
      "fenceForUpgrade",
    );
    appendAudit(db, id, "upgrade_fenced", now, { generation: next });
    return next;
  });
}

/** Promotion: upgrading → active at the staged generation, in one transaction. */
export function promoteUpgrade(db: DatabaseSync, id: string, staged: number, now: number): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE agents SET state = 'active', generation = pending_generation,
         pending_generation = NULL, updated_at = ?
       WHERE id = ? AND state = 'upgrading' AND pending_generation = ?`,
    ).run(now, id, staged);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "upgraded", now, { generation: staged });
    return true;
  });
}

/** An upgrade whose drain did not finish lifts the fence at the old generation. */
export function abortUpgrade(db: DatabaseSync, id: string, now: number): boolean {
  return transaction(db, () => {
    const row = getAgent(db, id);
    const r = db.prepare(
      `UPDATE agents SET state = 'active', pending_generation = NULL, updated_at = ?
       WHERE id = ? AND state = 'upgrading'`,
    ).run(now, id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "upgrade_aborted", now, { generation: row?.generation });
    return true;
  });
}

/**
 * Admission fence for a delete: active → deleting, and provisioning → deleting for
 * a create whose provisioning failed (provisioning never yields, so a provisioning
 * row a request can see is never one still in progress). The system Agent never matches.
 */
export function fenceForDelete(db: DatabaseSync, id: string, now: number): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE agents SET state = 'deleting', pending_generation = NULL, updated_at = ?
       WHERE id = ? AND state IN ('active', 'provisioning') AND is_system = 0`,
    ).run(now, id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "delete_fenced", now);
    return true;
  });
}

/**
 * Nothing fences the system Agent for delete (see fenceForDelete), so a system row in
 * `deleting` comes from a hand-edited registry: it goes back to `active`, never purged [AG-2].
 */
export function unfenceSystemAgent(db: DatabaseSync, id: string, now: number): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE agents SET state = 'active', pending_generation = NULL, updated_at = ?
       WHERE id = ? AND is_system = 1 AND state = 'deleting'`,
    ).run(now, id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "recovered", now);
    return true;
  });
}

/**
 * Final step of a delete: records the residual audit and removes the row, in
 * one transaction. With residue > 0 the row stays `deleting` (recovery retries).
 */
export function finishDelete(db: DatabaseSync, id: string, residue: number, now: number): boolean {
  return transaction(db, () => {
    if (residue > 0) {
      appendAudit(db, id, "delete_residue", now, { residue });
      return false;
    }
    const r = db.prepare("DELETE FROM agents WHERE id = ? AND state = 'deleting'").run(id);
    if (r.changes !== 1) return false;
    appendAudit(db, id, "deleted", now, { residue: 0 });
    return true;
  });
}
