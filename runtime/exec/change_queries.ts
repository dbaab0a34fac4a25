/**
 * The read side of exec records [EX-4]: `GET …/runs/<run>/changes` (a Run's
 * latest change set, or one command's with `call_id`) and
 * `GET …/changes/diff?path=` (one path's full unified diff).
 *
 * What this file enforces: records are read only from the named Agent's own
 * database and only for a Run that exists there (else `run_not_found`); a Run
 * without a command, an unknown call id or a path that is not in the change
 * set is `change_set_not_found`; each path carries what exec/apply later did
 * with it (`applied`, or the fixed refusal code), so the view is the truth
 * after a reload too.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import { execDiff, type ExecRecordRow, execRecords } from "../store/exec_store.ts";
import { getRun } from "../store/run_store.ts";

interface CommandBody {
  change_set: {
    entries: { path: string; [k: string]: unknown }[];
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

interface ApplyBody {
  command_call_id: string;
  results: { path: string; outcome: string }[];
}

function commandOf(db: DatabaseSync, runId: string, callId: string | null) {
  if (!getRun(db, runId)) throw new AppError("run_not_found");
  const rows = execRecords(db, runId);
  const commands = rows.filter((r) => r.kind === "command");
  const cmd: ExecRecordRow | undefined = callId === null
    ? commands.at(-1)
    : commands.find((r) => r.call_id === callId);
  if (cmd === undefined) throw new AppError("change_set_not_found");
  return { rows, cmd };
}

/** The change set of the latest command of a Run (or of `callId`), with apply outcomes. */
export function changesOf(db: DatabaseSync, runId: string, callId: string | null) {
  const { rows, cmd } = commandOf(db, runId, callId);
  const body = JSON.parse(cmd.body) as CommandBody;
  const outcome = new Map<string, string>();
  for (const r of rows) {
    if (r.kind !== "apply" || r.seq < cmd.seq) continue;
    const a = JSON.parse(r.body) as ApplyBody;
    if (a.command_call_id !== cmd.call_id) continue;
    for (const x of a.results) outcome.set(x.path, x.outcome);
  }
  const { change_set, ...command } = body;
  return {
    run_id: runId,
    call_id: cmd.call_id,
    command,
    change_set: {
      ...change_set,
      entries: change_set.entries.map((e) => ({ ...e, applied: outcome.get(e.path) ?? null })),
    },
  };
}

/** One path's full unified diff from a command's change set. */
export function diffOf(db: DatabaseSync, runId: string, callId: string | null, path: string) {
  const { cmd } = commandOf(db, runId, callId);
  const body = JSON.parse(cmd.body) as CommandBody;
  const entry = body.change_set.entries.find((e) => e.path === path);
  if (entry === undefined) throw new AppError("change_set_not_found");
  return {
    run_id: runId,
    call_id: cmd.call_id,
    path,
    diff: execDiff(db, runId, cmd.call_id, path),
    note: entry.note ?? null,
  };
}
