/**
 * The only SQL for Runs, the event journal, the usage ledger, permissions and
 * the operation ledger in an Agent's `state.sqlite` (migration 0003).
 *
 * What this file enforces: statements are bounded (journal reads LIMIT RUN_EVENTS_MAX + 1,
 * audit pages LIMIT ≤ 128, usage samples LIMIT 16); callers compose these
 * inside `transaction()` where the SPEC requires atomicity (Turn + run.started,
 * completed assistant + Turn terminal, usage row + boundary event, retention);
 * the schema's CHECKs and the `runs_one_active` unique index are the last line
 * for every bound. No statement here runs VACUUM.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import { EVENT_BODY_DEFLATE_MIN_BYTES, EVENT_MAX_BYTES, RUN_EVENTS_MAX } from "../limits.ts";
import { deflateText, inflateText } from "./deflated_text.ts";
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
  // [PF-4] The Run's journal_key (migration 0019): one more than the largest, through its index.
  db.prepare(
    `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
       last_digest, created_at, journal_key) VALUES (?, ?, ?, 'running', ?, ?, ?, ?,
       (SELECT coalesce(max(journal_key), 0) + 1 FROM runs))`,
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

const ENCODER = new TextEncoder();

/**
 * FROZEN [PF-4]: the fixed part of the preset dictionary every event body is deflated with
 * (agent migration 0020). A stored body inflates only with the exact dictionary it was deflated
 * with: changing one byte here or in `runDictionary` makes every stored body read as '' (its
 * digest then fails). A new dictionary needs a marker in the row, never an edit of this one
 * (tests/integration/run_events_deflate_test.ts pins its digest). It holds the envelope's keys
 * and the common kinds and payload keys; the strings deflate finds cheapest (nearest) come last.
 */
const EVENT_DICTIONARY_FIXED = '"kind":"tool.output.delta","payload":{"call_id":"' +
  '"kind":"permission.requested","payload":{"call_id":"' +
  '"kind":"permission.decided","payload":{"call_id":"' +
  '"kind":"permission.denied","payload":{"call_id":"' +
  '"kind":"subagent.status","payload":{' +
  '"kind":"assistant.reasoning.delta","payload":{"block":' +
  '"kind":"assistant.reasoning.completed","payload":{"block":' +
  '"kind":"run.failed","payload":{"code":"' + '"kind":"run.cancelled","payload":{' +
  '"kind":"tool.call.requested","payload":{"args":{' +
  '"kind":"tool.call.completed","payload":{"call_id":"' +
  '"kind":"model.request.started","payload":{"call":1,"collapsed_bundles":0,' +
  '"collapsed_results":0,"digest":"sha256:' + '","model_id":"' +
  '","phase":"tools","recovery":0,"request_bytes":' + ',"token_estimate":' +
  '"kind":"model.transport.attempt.started","payload":{"attempt":1,"call":1,' +
  '"max_attempts":2,"phase":"tools"}' +
  '"kind":"model.transport.attempt.finished","payload":{"attempt":1,"call":1,"elapsed_ms":' +
  ',"max_attempts":2,"outcome":"ok","phase":"tools","ttfb_ms":' +
  '"kind":"model.response.finished","payload":{"attempts":1,"call":1,"elapsed_ms":' +
  ',"error_code":null,"input_tokens":' + ',"outcome":"completed","output_tokens":' +
  ',"usage_complete":true}' +
  '"kind":"assistant.block.started","payload":{"block":1}' +
  '"kind":"assistant.block.completed","payload":{"block":1,"text":"' +
  '"kind":"run.completed","payload":{"duration_ms":' +
  ',"model_calls":1,"reason":"stop","tool_calls":0}' +
  '"kind":"run.started","payload":';

/**
 * A Run's dictionary: the fixed part, then what every envelope of the Run repeats — its
 * Conversation and Run ids and its `run.started` payload (`runs.started_summary`, which
 * `run.started` carries whole). All three are fixed for the Run's life.
 */
function runDictionary(r: { id: string; conversation_id: string; started_summary: string }) {
  return ENCODER.encode(
    `${EVENT_DICTIONARY_FIXED}${r.started_summary}{"agent_id":"","conversation_id":"` +
      `${r.conversation_id}","kind":"","payload":{},"run_id":"${r.id}","seq":,"ts":,"v":1}`,
  );
}

/**
 * The stored form of an event body [PF-4]: a body of EVENT_BODY_DEFLATE_MIN_BYTES or more is
 * kept raw-deflated with its Run's dictionary when that saves at least a quarter of it. The
 * envelope every event repeats (ids, keys, the Run's start summary) then costs a few bytes, an
 * answer's text 2.5–3× less on prose; the digest covers the text.
 */
function storedBody(body: string, dict: Uint8Array): { body: string; body_z: Uint8Array | null } {
  if (body.length < EVENT_BODY_DEFLATE_MIN_BYTES) return { body, body_z: null };
  const z = deflateText(body, dict);
  return z ? { body: "", body_z: z } : { body, body_z: null };
}

/** The text of a stored body; a deflated one that does not inflate within EVENT_MAX_BYTES reads as '' (its digest then fails). */
function readBody(body: string, z: Uint8Array | null, dict: Uint8Array): string {
  return z === null ? body : inflateText(z, EVENT_MAX_BYTES, dict) ?? "";
}

interface RunOfEvents {
  id: string;
  conversation_id: string;
  started_summary: string;
  /** Null only for a row written outside insertRun (refused by run_events_key_run). */
  journal_key: number | null;
}

/** A Run's range and what its dictionary is made of (null: no such Run). */
function runOfEvents(
  db: DatabaseSync,
  runId: string,
): RunOfEvents | null {
  return (db.prepare(
    "SELECT id, conversation_id, started_summary, journal_key FROM runs WHERE id = ?",
  ).get(runId) as RunOfEvents | undefined) ?? null;
}

/**
 * [PF-4] A Run's events are one rowid range of run_events (migrations 0019, 0022): event_key =
 * journal_key × RUN_EVENT_KEY_SPAN + (seq − 1), so the journal needs no index of its own and the
 * range holds seq 1 … RUN_EVENT_KEY_SPAN. These are the only statements that know the layout;
 * the schema's CHECK (`event_key % 1024 = seq - 1`) and triggers hold the same numbers.
 */
const RUN_EVENT_KEY_SPAN = 1024;
// A journal bound above the span would need a new key layout (a migration), not a new number.
if (RUN_EVENTS_MAX > RUN_EVENT_KEY_SPAN) throw new Error("RUN_EVENTS_MAX outgrows the event key");
const eventKey = (journalKey: number, seq: number) => journalKey * RUN_EVENT_KEY_SPAN + seq - 1;
const RUN_RANGE = `SELECT journal_key * ${RUN_EVENT_KEY_SPAN} AS lo,
  journal_key * ${RUN_EVENT_KEY_SPAN} + ${RUN_EVENT_KEY_SPAN - 1} AS hi FROM runs WHERE id = ?`;

/** Appends one event to its Run's range; a Run that does not exist is a missed transition. */
export function insertEvent(db: DatabaseSync, runId: string, e: EventRow): void {
  const run = runOfEvents(db, runId);
  if (run === null || run.journal_key === null) {
    throw new AppError("state_transition_missed", "insertEvent");
  }
  const stored = storedBody(e.body, runDictionary(run));
  db.prepare(
    `INSERT INTO run_events (event_key, run_id, seq, kind, body, body_z, digest)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    eventKey(run.journal_key, e.seq),
    runId,
    e.seq,
    e.kind,
    stored.body,
    stored.body_z,
    e.digest,
  );
}

/** Removes every event of a Run (its whole range). */
function deleteEvents(db: DatabaseSync, runId: string): void {
  db.prepare(
    `WITH r AS (${RUN_RANGE})
     DELETE FROM run_events WHERE event_key BETWEEN (SELECT lo FROM r) AND (SELECT hi FROM r)`,
  ).run(runId);
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
  const run = runOfEvents(db, runId);
  if (run === null || run.journal_key === null) return [];
  const lo = eventKey(run.journal_key, 1);
  const rows = db.prepare(
    `SELECT seq, kind, body, body_z, digest FROM run_events
     WHERE event_key BETWEEN ? AND ? ORDER BY event_key LIMIT ?`,
  ).all(lo, lo + RUN_EVENT_KEY_SPAN - 1, RUN_EVENTS_MAX + 1) as unknown as (EventRow & {
    body_z: Uint8Array | null;
  })[];
  if (rows.length === 0) return [];
  const dict = runDictionary(run);
  return rows.map((r) => ({
    seq: r.seq,
    kind: r.kind,
    body: readBody(r.body, r.body_z, dict),
    digest: r.digest,
  }));
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
  deleteEvents(db, runId);
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
  deleteEvents(db, runId);
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
