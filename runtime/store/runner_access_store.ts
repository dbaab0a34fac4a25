/**
 * Audit-lite rows of external runners [LC-6]: the one owner of `runner_access`.
 *
 * What this file enforces: one row per runner access (method, resource,
 * decision, code), the resource cut to 1 KiB on a code point; rows are
 * written as the access is decided, never updated.
 */
import type { DatabaseSync } from "node:sqlite";
import { utf8Bytes } from "../protocol/digest.ts";

export type RunnerDecision = "allowed" | "approved" | "denied" | "refused" | "expired";

export interface RunnerAccess {
  runId: string;
  runner: string;
  callId: string | null;
  method: string;
  resource: string;
  decision: RunnerDecision;
  code: string | null;
  now: number;
}

const RESOURCE_MAX_BYTES = 1024;

function cut(s: string): string {
  if (utf8Bytes(s) <= RESOURCE_MAX_BYTES) return s;
  let out = "";
  let n = 0;
  for (const ch of s) {
    n += utf8Bytes(ch);
    if (n > RESOURCE_MAX_BYTES - 3) break;
    out += ch;
  }
  return out + "…";
}

export function insertRunnerAccess(db: DatabaseSync, a: RunnerAccess): void {
  db.prepare(
    `INSERT INTO runner_access (id, run_id, runner, call_id, method, resource, decision, code,
       created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    crypto.randomUUID(),
    a.runId,
    a.runner,
    a.callId,
    a.method.slice(0, 64),
    cut(a.resource),
    a.decision,
    a.code,
    a.now,
  );
}

export interface RunnerAccessRow {
  id: string;
  run_id: string;
  runner: string;
  call_id: string | null;
  method: string;
  resource: string;
  decision: RunnerDecision;
  code: string | null;
  created_at: number;
}

export function listRunnerAccess(
  db: DatabaseSync,
  runId: string,
  limit: number,
): RunnerAccessRow[] {
  return db.prepare(
    `SELECT id, run_id, runner, call_id, method, resource, decision, code, created_at
     FROM runner_access WHERE run_id = ? ORDER BY created_at, id LIMIT ?`,
  ).all(runId, limit) as unknown as RunnerAccessRow[];
}
