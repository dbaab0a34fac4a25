/**
 * The only SQL for Runs, the event journal, the usage ledger, permissions and
 * the operation ledger in an Agent's `state.sqlite` (migration 0003).
 *
 * What this file enforces: statements are bounded (journal reads LIMIT 513,
 * audit pages LIMIT ≤ 128, usage samples LIMIT 16); callers compose these
 * inside `transaction()` where the SPEC requires atomicity (Turn + run.started,
 * completed assistant + Turn terminal, usage row + boundary event, retention);
 * the schema's CHECKs and the `runs_one_active` unique index are the last line
 * for every bound. No statement here runs VACUUM.
 */
import type { DatabaseSync } from "node:sqlite";
import { RUN_EVENTS_MAX } from "../limits.ts";
import { expectOneChange } from "./sqlite.ts";
import type { RUN_STATES } from "../protocol/api.ts";

export type RunState = typeof RUN_STATES[number];
export type JournalState = "full" | "snapshot_only" | "tombstone";

export interface RunRow {
  id: string;
  conversation_id: string;
  turn_id: string;
  state: RunState;
  journal: JournalState;
  model_id: string;
  started_summary: string;
  snapshot: string | null;
  event_count: number;
  durable_bytes: number;
  last_digest: string;
  terminal_code: string | null;
  created_at: number;
  finished_at: number | null;
}

export interface EventRow {
  seq: number;
  kind: string;
  body: string;
  digest: string;
}

const RUN_COLS = "id, conversation_id, turn_id, state, journal, model_id, started_summary, " +
  "snapshot, event_count, durable_bytes, last_digest, terminal_code, created_at, finished_at";

export function insertRun(
  db: DatabaseSync,
  r:
    & Pick<
      RunRow,
      "id" | "conversation_id" | "turn_id" | "model_id" | "started_summary" | "last_digest"
    >
    & { created_at: number },
): void {
  db.prepare(
    `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
       last_digest, created_at) VALUES (?, ?, ?, 'running', ?, ?, ?, ?)`,
  ).run(
    r.id,
    r.conversation_id,
    r.turn_id,
    r.model_id,
    r.started_summary,
    r.last_digest,
    r.created_at,
  );
}

export function getRun(db: DatabaseSync, id: string): RunRow | null {
  return (db.prepare(`SELECT ${RUN_COLS} FROM runs WHERE id = ?`).get(id) as RunRow | undefined) ??
    null;
}

export function runningRuns(db: DatabaseSync): RunRow[] {
  return db.prepare(`SELECT ${RUN_COLS} FROM runs WHERE state = 'running' LIMIT 1024`)
    .all() as unknown as RunRow[];
}

export function insertEvent(db: DatabaseSync, runId: string, e: EventRow): void {
  db.prepare("INSERT INTO run_events (run_id, seq, kind, body, digest) VALUES (?, ?, ?, ?, ?)")
    .run(runId, e.seq, e.kind, e.body, e.digest);
}

export function updateJournalHead(
  db: DatabaseSync,
  runId: string,
  count: number,
  bytes: number,
  lastDigest: string,
): void {
  expectOneChange(
    db.prepare(
      "UPDATE runs SET event_count = ?, durable_bytes = ?, last_digest = ? WHERE id = ?",
    ).run(count, bytes, lastDigest, runId),
    "updateJournalHead",
  );
}

/** Every durable event of a Run, in seq order; one more than the cap so overflow is visible. */
export function listEvents(db: DatabaseSync, runId: string): EventRow[] {
  return db.prepare(
    "SELECT seq, kind, body, digest FROM run_events WHERE run_id = ? ORDER BY seq LIMIT ?",
  ).all(runId, RUN_EVENTS_MAX + 1) as unknown as EventRow[];
}

export function setRunTerminal(
  db: DatabaseSync,
  runId: string,
  state: Exclude<RunState, "running">,
  code: string | null,
  now: number,
): boolean {
  return db.prepare(
    `UPDATE runs SET state = ?, terminal_code = ?, finished_at = ?
     WHERE id = ? AND state = 'running'`,
  ).run(state, code, now, runId).changes === 1;
}

/** Finished Runs with a full journal beyond the newest `keep`, oldest first. */
export function retentionCandidates(db: DatabaseSync, keep: number, limit: number): RunRow[] {
  return db.prepare(
    `SELECT ${RUN_COLS} FROM runs WHERE journal = 'full' AND state <> 'running'
     ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
  ).all(limit, keep) as unknown as RunRow[];
}

export function reduceToSnapshot(db: DatabaseSync, runId: string, snapshot: string): void {
  db.prepare("DELETE FROM run_events WHERE run_id = ?").run(runId);
  expectOneChange(
    db.prepare("UPDATE runs SET journal = 'snapshot_only', snapshot = ? WHERE id = ?")
      .run(snapshot, runId),
    "reduceToSnapshot",
  );
}

/** Drops a Run's events for a tombstone snapshot (and, when given, the tombstone's head digest). */
export function pruneToTombstone(
  db: DatabaseSync,
  runId: string,
  snapshot: string,
  lastDigest?: string,
): void {
  db.prepare("DELETE FROM run_events WHERE run_id = ?").run(runId);
  expectOneChange(
    db.prepare(
      `UPDATE runs SET journal = 'tombstone', snapshot = ?, event_count = 0, durable_bytes = 0,
         last_digest = coalesce(?, last_digest)
       WHERE id = ?`,
    ).run(snapshot, lastDigest ?? null, runId),
    "pruneToTombstone",
  );
}

// ── usage ledger [MB-9] ─────────────────────────────────────────────────────

export function usageStarted(
  db: DatabaseSync,
  u: { runId: string; call: number; modelId: string; scope: string; estimate: number; now: number },
): void {
  db.prepare(
    `INSERT INTO usage_ledger (run_id, call, state, model_id, scope_digest, token_estimate,
       created_at, updated_at) VALUES (?, ?, 'started', ?, ?, ?, ?, ?)`,
  ).run(u.runId, u.call, u.modelId, u.scope, u.estimate, u.now, u.now);
}

export function usageFinished(
  db: DatabaseSync,
  u: { runId: string; call: number; complete: boolean; input: number; output: number; now: number },
): void {
  expectOneChange(
    db.prepare(
      `UPDATE usage_ledger SET state = ?, input_tokens = ?, output_tokens = ?, updated_at = ?
       WHERE run_id = ? AND call = ? AND state = 'started'`,
    ).run(u.complete ? "complete" : "incomplete", u.input, u.output, u.now, u.runId, u.call),
    "usageFinished",
  );
}

/** Terminal: leftovers become `incomplete` (idempotent on purpose: any number, none included). */
export function usageCloseRun(db: DatabaseSync, runId: string, now: number): void {
  db.prepare(
    "UPDATE usage_ledger SET state = 'incomplete', updated_at = ? WHERE run_id = ? AND state = 'started'",
  ).run(now, runId);
}

/** The latest complete usages of one scope (for NextTurnProjection calibration). */
export function usageSamples(
  db: DatabaseSync,
  scope: string,
  limit: number,
): { estimate: number; inputTokens: number }[] {
  return db.prepare(
    `SELECT token_estimate AS estimate, input_tokens AS inputTokens FROM usage_ledger
     WHERE scope_digest = ? AND state = 'complete' ORDER BY updated_at DESC LIMIT ?`,
  ).all(scope, limit) as unknown as { estimate: number; inputTokens: number }[];
}

// ── operation ledger [TL-2] ─────────────────────────────────────────────────

export function countOperations(db: DatabaseSync): number {
  return (db.prepare("SELECT count(*) AS n FROM operations").get() as { n: number }).n;
}

/** Keeps the ledger ≤ `max` rows by dropping the oldest settled rows [TL-2]. */
export function trimOperations(db: DatabaseSync, max: number): void {
  const over = countOperations(db) - (max - 1);
  if (over <= 0) return;
  db.prepare(
    `DELETE FROM operations WHERE id IN (SELECT id FROM operations
       WHERE state IN ('succeeded','failed','outcome_unknown') ORDER BY created_at, id LIMIT ?)`,
  ).run(over);
}

export function operationIntent(
  db: DatabaseSync,
  o: { id: string; runId: string; callId: string; toolId: string; argsDigest: string; now: number },
): void {
  db.prepare(
    `INSERT INTO operations (id, run_id, call_id, tool_id, state, args_digest, created_at,
       updated_at) VALUES (?, ?, ?, ?, 'intent', ?, ?, ?)`,
  ).run(o.id, o.runId, o.callId, o.toolId, o.argsDigest, o.now, o.now);
}

/** intent → dispatched, once. */
export function operationDispatched(db: DatabaseSync, id: string, executor: string, now: number) {
  expectOneChange(
    db.prepare(
      "UPDATE operations SET state = 'dispatched', executor = ?, updated_at = ? WHERE id = ? AND state = 'intent'",
    ).run(executor, now, id),
    "operationDispatched",
  );
}

export function operationOutcome(
  db: DatabaseSync,
  o: { id: string; ok: boolean; resultDigest: string | null; code: string | null; now: number },
): void {
  expectOneChange(
    db.prepare(
      `UPDATE operations SET state = ?, result_digest = ?, code = ?, updated_at = ?
       WHERE id = ? AND state = 'dispatched'`,
    ).run(o.ok ? "succeeded" : "failed", o.resultDigest, o.code, o.now, o.id),
    "operationOutcome",
  );
}

/** An intent that was never dispatched (invalid arguments, no executor). */
export function operationRefused(db: DatabaseSync, id: string, code: string, now: number): void {
  expectOneChange(
    db.prepare(
      "UPDATE operations SET state = 'failed', code = ?, updated_at = ? WHERE id = ? AND state = 'intent'",
    ).run(code, now, id),
    "operationRefused",
  );
}

/** Restart: leftover dispatched (and intent) operations become outcome_unknown; never re-run. */
export function operationsOutcomeUnknown(db: DatabaseSync, now: number): number {
  return Number(
    db.prepare(
      `UPDATE operations SET state = 'outcome_unknown', updated_at = ?
       WHERE state IN ('intent','dispatched')`,
    ).run(now).changes,
  );
}

/** [EV-5] A tombstoned Run's unsettled operations: their outcome is unknown, never re-dispatched. */
export function runOperationsOutcomeUnknown(db: DatabaseSync, runId: string, now: number): number {
  return Number(
    db.prepare(
      `UPDATE operations SET state = 'outcome_unknown', updated_at = ?
       WHERE run_id = ? AND state IN ('intent','dispatched')`,
    ).run(now, runId).changes,
  );
}

export interface AuditRow {
  kind: "operation" | "permission";
  id: string;
  call_id: string;
  tool_id: string;
  state: string;
  executor: string | null;
  code: string | null;
  created_at: number;
  updated_at: number;
}

/** One page of the capability audit of a Run (operations and permissions, oldest first). */
export function capabilityAudit(
  db: DatabaseSync,
  runId: string,
  offset: number,
  limit: number,
): AuditRow[] {
  return db.prepare(
    `SELECT 'operation' AS kind, id, call_id, tool_id, state, executor, code, created_at,
       updated_at FROM operations WHERE run_id = ?
     UNION ALL
     SELECT 'permission' AS kind, id, call_id, tool_id, state, NULL, NULL, created_at,
       coalesce(decided_at, created_at) FROM permissions WHERE run_id = ?
     ORDER BY created_at, id LIMIT ? OFFSET ?`,
  ).all(runId, runId, limit, offset) as unknown as AuditRow[];
}

export interface PermissionRow {
  id: string;
  run_id: string;
  call_id: string;
  tool_id: string;
  state: string;
  preview: string;
  created_at: number;
  /** The "Always allow" rule as JSON [TL-10]; null: none offered. */
  always_rule: string | null;
  /** Bytes of the kept full diff [TL-12]; null: none kept. */
  full_diff_bytes: number | null;
}

export function insertPermission(
  db: DatabaseSync,
  p: {
    id: string;
    runId: string;
    callId: string;
    toolId: string;
    preview: string;
    now: number;
    /** ≤ 256 KiB [TL-12]. @default null */
    fullDiff?: string | null;
    /** JSON of the narrowed rule [TL-10]. @default null */
    alwaysRule?: string | null;
  },
): void {
  db.prepare(
    `INSERT INTO permissions
       (id, run_id, call_id, tool_id, state, preview, created_at, full_diff, always_rule)
     VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
  ).run(
    p.id,
    p.runId,
    p.callId,
    p.toolId,
    p.preview,
    p.now,
    p.fullDiff ?? null,
    p.alwaysRule ?? null,
  );
}

/** The full diff of an approval [TL-12]; null when the row or its diff is absent. */
export function permissionFullDiff(
  db: DatabaseSync,
  id: string,
): { tool_id: string; full_diff: string | null } | null {
  return (db.prepare("SELECT tool_id, full_diff FROM permissions WHERE id = ?").get(id) as
    | { tool_id: string; full_diff: string | null }
    | undefined) ?? null;
}

const PERMISSION_COLUMNS = "id, run_id, call_id, tool_id, state, preview, created_at, " +
  "always_rule, length(CAST(full_diff AS BLOB)) AS full_diff_bytes";

export function countPendingPermissions(db: DatabaseSync): number {
  return (db.prepare("SELECT count(*) AS n FROM permissions WHERE state = 'pending'").get() as {
    n: number;
  }).n;
}

export function pendingPermissions(db: DatabaseSync, limit: number): PermissionRow[] {
  return db.prepare(
    `SELECT ${PERMISSION_COLUMNS} FROM permissions
     WHERE state = 'pending' ORDER BY created_at LIMIT ?`,
  ).all(limit) as unknown as PermissionRow[];
}

export function getPermission(db: DatabaseSync, id: string): PermissionRow | null {
  return (db.prepare(
    `SELECT ${PERMISSION_COLUMNS} FROM permissions WHERE id = ?`,
  ).get(id) as PermissionRow | undefined) ?? null;
}

export function decidePermission(
  db: DatabaseSync,
  id: string,
  decision: "approved" | "denied",
  now: number,
): boolean {
  return db.prepare(
    "UPDATE permissions SET state = ?, decided_at = ? WHERE id = ? AND state = 'pending'",
  ).run(decision, now, id).changes === 1;
}

/** Terminal: a Run's still-pending approvals expire with it (idempotent on purpose: any number). */
export function expirePermissions(db: DatabaseSync, runId: string, now: number): void {
  db.prepare(
    "UPDATE permissions SET state = 'expired', decided_at = ? WHERE run_id = ? AND state = 'pending'",
  ).run(now, runId);
}
