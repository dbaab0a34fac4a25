/**
 * The only SQL for exec records [EX-4, EX-5] in an Agent's `state.sqlite`
 * (migration 0005): one row per exec/command or exec/apply call, and the
 * unified diffs of a command's change set by path.
 *
 * What this file enforces: a record and its diffs are written in one
 * transaction; retention keeps the records of the newest
 * EXEC_RECORDS_RUNS_RETAINED Runs that have any (older Runs' rows are
 * deleted with their diffs); reads are bounded (one Run's records, ≤ 1024).
 */
import type { DatabaseSync } from "node:sqlite";
import { EXEC_RECORDS_RUNS_RETAINED } from "../limits.ts";
import { transaction } from "./sqlite.ts";

export interface ExecRecordRow {
  call_id: string;
  seq: number;
  kind: "command" | "apply";
  body: string;
  created_at: number;
}

export function insertExecRecord(
  db: DatabaseSync,
  r: {
    runId: string;
    callId: string;
    seq: number;
    kind: "command" | "apply";
    body: string;
    diffs: ReadonlyMap<string, string>;
    now: number;
  },
): void {
  transaction(db, () => {
    db.prepare(
      `INSERT INTO exec_records (run_id, call_id, seq, kind, body, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ).run(r.runId, r.callId, r.seq, r.kind, r.body, r.now);
    const ins = db.prepare(
      "INSERT INTO exec_diffs (run_id, call_id, path, diff) VALUES (?, ?, ?, ?)",
    );
    for (const [path, diff] of r.diffs) ins.run(r.runId, r.callId, path, diff);
    // Retention: only the newest Runs with records keep them.
    db.prepare(
      `DELETE FROM exec_records WHERE run_id NOT IN (
         SELECT run_id FROM exec_records GROUP BY run_id
         ORDER BY max(created_at) DESC, run_id DESC LIMIT ?)`,
    ).run(EXEC_RECORDS_RUNS_RETAINED);
  });
}

/** A Run's records in call order. */
export function execRecords(db: DatabaseSync, runId: string): ExecRecordRow[] {
  return db.prepare(
    `SELECT call_id, seq, kind, body, created_at FROM exec_records
     WHERE run_id = ? ORDER BY seq LIMIT 1024`,
  ).all(runId) as unknown as ExecRecordRow[];
}

export function execDiff(
  db: DatabaseSync,
  runId: string,
  callId: string,
  path: string,
): string | null {
  const row = db.prepare(
    "SELECT diff FROM exec_diffs WHERE run_id = ? AND call_id = ? AND path = ?",
  ).get(runId, callId, path) as { diff: string } | undefined;
  return row?.diff ?? null;
}
