/**
 * The only SQL for background Tasks [EX-6] in an Agent's `state.sqlite`
 * (migration 0007): one row per Task — what it runs, where it stands, how it
 * ended, its output counters, the model's result and the change-set summary.
 *
 * What this file enforces: a Task is inserted `running` and leaves that state
 * once (`finishTask` only updates a running row, so a late finish after a
 * restart's `interrupted` changes nothing); reads are bounded (TASKS_LIST_MAX);
 * retention keeps the newest TASKS_RETAINED_PER_AGENT finished Tasks and none
 * older than TASK_RETENTION_MS, and returns the ids it deleted so the caller
 * removes their roots. Running Tasks are never deleted by retention.
 */
import type { DatabaseSync } from "node:sqlite";
import { TASK_RETENTION_MS, TASKS_LIST_MAX, TASKS_RETAINED_PER_AGENT } from "../limits.ts";
import { transaction } from "./sqlite.ts";
import { TaskStatusName } from "../protocol/api.ts";

/** The statuses a Task row may hold: the protocol's list (one owner). */
export const TASK_STATUSES = TaskStatusName.options;
export type TaskStatus = typeof TASK_STATUSES[number];

export interface TaskRow {
  id: string;
  run_id: string;
  conversation_id: string | null;
  call_id: string;
  argv: string;
  cwd: string;
  timeout_s: number;
  status: TaskStatus;
  exit_code: number | null;
  signal: string | null;
  error_code: string | null;
  output_bytes: number;
  output_omitted: number;
  result: string | null;
  change_set: string | null;
  created_at: number;
  ended_at: number | null;
}

const COLUMNS = `id, run_id, conversation_id, call_id, argv, cwd, timeout_s, status, exit_code,
  signal, error_code, output_bytes, output_omitted, result, change_set, created_at, ended_at`;

export function insertTask(
  db: DatabaseSync,
  t: {
    id: string;
    runId: string;
    conversationId: string | null;
    callId: string;
    argv: readonly string[];
    cwd: string;
    timeoutS: number;
    now: number;
  },
): void {
  db.prepare(
    `INSERT INTO tasks (id, run_id, conversation_id, call_id, argv, cwd, timeout_s, status,
       created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)`,
  ).run(
    t.id,
    t.runId,
    t.conversationId,
    t.callId,
    JSON.stringify(t.argv),
    t.cwd,
    t.timeoutS,
    t.now,
  );
}

/** Ends a running Task; false when it was not running (e.g. already interrupted). */
export function finishTask(
  db: DatabaseSync,
  id: string,
  f: {
    status: Exclude<TaskStatus, "running">;
    exitCode: number | null;
    signal: string | null;
    errorCode: string | null;
    outputBytes: number;
    outputOmitted: number;
    result: string | null;
    changeSet: string | null;
    now: number;
  },
): boolean {
  const r = db.prepare(
    `UPDATE tasks SET status = ?, exit_code = ?, signal = ?, error_code = ?, output_bytes = ?,
       output_omitted = ?, result = ?, change_set = ?, ended_at = ?
     WHERE id = ? AND status = 'running'`,
  ).run(
    f.status,
    f.exitCode,
    f.signal,
    f.errorCode,
    f.outputBytes,
    f.outputOmitted,
    f.result,
    f.changeSet,
    f.now,
    id,
  );
  return Number(r.changes) === 1;
}

export function getTask(db: DatabaseSync, id: string): TaskRow | null {
  return (db.prepare(`SELECT ${COLUMNS} FROM tasks WHERE id = ?`).get(id) as unknown as
    | TaskRow
    | undefined) ?? null;
}

/** The Agent's Tasks, newest first (running ones included), ≤ TASKS_LIST_MAX. */
export function listTasks(db: DatabaseSync): TaskRow[] {
  return db.prepare(
    `SELECT ${COLUMNS} FROM tasks ORDER BY created_at DESC, id DESC LIMIT ?`,
  ).all(TASKS_LIST_MAX) as unknown as TaskRow[];
}

/**
 * Restart [EX-6]: every Task left running becomes `interrupted`; returns their ids
 * (idempotent on purpose: a bulk move of any number, none included).
 */
export function interruptRunningTasks(db: DatabaseSync, now: number): string[] {
  return transaction(db, () => {
    const ids = (db.prepare("SELECT id FROM tasks WHERE status = 'running'").all() as {
      id: string;
    }[]).map((r) => r.id);
    db.prepare(
      `UPDATE tasks SET status = 'interrupted', ended_at = ?
       WHERE status = 'running'`,
    ).run(now);
    return ids;
  });
}

/** The output a Task interrupted by a crash had spooled (its counters were never written). */
export function setSpooledBytes(db: DatabaseSync, id: string, bytes: number): void {
  db.prepare("UPDATE tasks SET output_bytes = max(output_bytes, ?) WHERE id = ?").run(bytes, id);
}

/**
 * Retention [EX-6]: finished Tasks beyond the newest TASKS_RETAINED_PER_AGENT, and those
 * that ended more than TASK_RETENTION_MS ago, are deleted. Returns the deleted ids.
 */
export function pruneTasks(db: DatabaseSync, now: number): string[] {
  return transaction(db, () => {
    const old = db.prepare(
      `SELECT id FROM tasks WHERE status != 'running' AND (
         coalesce(ended_at, created_at) < ? OR id NOT IN (
           SELECT id FROM tasks WHERE status != 'running'
           ORDER BY created_at DESC, id DESC LIMIT ?))`,
    ).all(now - TASK_RETENTION_MS, TASKS_RETAINED_PER_AGENT) as { id: string }[];
    const del = db.prepare("DELETE FROM tasks WHERE id = ?");
    for (const r of old) del.run(r.id);
    return old.map((r) => r.id);
  });
}
