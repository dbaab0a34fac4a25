/**
 * The only SQL for per-Agent policy [TL-9]: the Agent's rules (one JSON
 * document on its registry row, so they go with the row) and their audit
 * (`policy_changed` rows of the lifecycle audit, with what changed).
 *
 * What this file enforces: a policy write and its audit row commit in one
 * transaction, or neither does; a write to a missing Agent row changes
 * nothing and says so.
 */
import type { DatabaseSync } from "node:sqlite";
import { appendAudit } from "./registry_store.ts";
import { transaction } from "./sqlite.ts";

/** The stored rules document of an Agent; null when it has none (or no row). */
export function readPolicyJson(db: DatabaseSync, agentId: string): string | null {
  const row = db.prepare("SELECT policy FROM agents WHERE id = ?").get(agentId) as
    | { policy: string | null }
    | undefined;
  return row?.policy ?? null;
}

/**
 * Replaces the rules document when it still equals `expected` (null: none) and appends the
 * audit row, in one transaction. False when the row is gone or changed meanwhile.
 */
export function writePolicyJson(
  db: DatabaseSync,
  agentId: string,
  expected: string | null,
  json: string,
  audit: { at: number; detail: string },
): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      "UPDATE agents SET policy = ? WHERE id = ? AND policy IS ?",
    ).run(json, agentId, expected);
    if (r.changes !== 1) return false;
    appendAudit(db, agentId, "policy_changed", audit.at, { detail: audit.detail });
    return true;
  });
}

/** The newest `policy_changed` audit rows of an Agent, newest first. */
export function listPolicyAudit(
  db: DatabaseSync,
  agentId: string,
  limit: number,
): { at: number; detail: string | null }[] {
  return db.prepare(
    `SELECT at, detail FROM agent_audit WHERE agent_id = ? AND event = 'policy_changed'
     ORDER BY id DESC LIMIT ?`,
  ).all(agentId, limit) as unknown as { at: number; detail: string | null }[];
}
