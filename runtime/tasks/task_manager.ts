/**
 * Background Tasks [EX-6]: an approved `exec/command` with `background: true`
 * becomes a Task of the Agent — the one owner of every running Task in the
 * server. The Task is the server's, not the Run's: it runs on its own scratch
 * copy (`.runtime/agents/<agent>/tasks/<task>/exec`), its output is spooled to
 * `…/<task>/output.log`, and it goes on after the starting Run ended.
 *
 * What this file enforces:
 * - ≤ TASKS_ACTIVE_PER_AGENT_MAX running per Agent (`task_limit`) and
 *   ≤ TASKS_ACTIVE_SERVER_MAX in the server (`tasks_busy`; the runner's own
 *   background pool, separate from the 2 foreground slots) — checked before
 *   the approval is asked and again at the start, nothing created on refusal;
 * - the wall limit is TASK_WALL_MAX_MS (the test entry may lower it, never
 *   raise it); cancel aborts the runner, which kills every process;
 * - the output spool is bounded (output_spool.ts: ≤ 1 MiB, the tail kept);
 * - a Task leaves `running` exactly once; at shutdown every running Task is
 *   killed and becomes `interrupted`; at start-up (`recover`) every Task left
 *   `running` by a previous process becomes `interrupted` and every Task's
 *   scratch copy is removed — a Task is never re-run;
 * - a finished Task keeps its scratch (its change set, for `exec/apply
 *   {task_id}`) only when the set is not empty, for the newest
 *   TASK_SCRATCHES_KEPT_PER_AGENT of the Agent; retention (runtime/store/task_store.ts)
 *   removes the rows and roots of old Tasks.
 */
import type { DatabaseSync } from "node:sqlite";
import type { z } from "zod";
import { AppError, type ErrorCode } from "../errors.ts";
import { agentRuntimeRel, taskRootRel } from "../home.ts";
import {
  TASK_OUTPUT_MAX_BYTES,
  TASK_ROUTE_TAIL_BYTES,
  TASK_ROW_TAIL_BYTES,
  TASK_SCRATCHES_KEPT_PER_AGENT,
  TASK_WALL_MAX_MS,
  TASKS_ACTIVE_PER_AGENT_MAX,
  TASKS_ACTIVE_SERVER_MAX,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { isValidId } from "../path_safety.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import type { TaskViewSchema } from "../protocol/api.ts";
import type { CommandRequest } from "../exec/command_args.ts";
import { type ExecResult, RunExec, type RunnerPort } from "../exec/run_exec.ts";
import { OutputSpool, readSpoolTail } from "./output_spool.ts";
import {
  finishTask,
  getTask,
  insertTask,
  interruptRunningTasks,
  listTasks,
  pruneTasks,
  setSpooledBytes,
  type TaskRow,
  type TaskStatus,
} from "../store/task_store.ts";

export interface TaskManagerOptions {
  /** The home's root directory. */
  root: string;
  /** The Agent's state database (throws when the Agent is not usable). */
  db(agentId: string): DatabaseSync;
  workspaceDir(agentId: string): string;
  runner: RunnerPort;
  log: Logger;
  /** Test entry only: a shorter wall limit (≤ TASK_WALL_MAX_MS). */
  wallMs?: number | null;
  /** @default Date.now */
  now?: () => number;
}

/** What the API and the Tasks panel show of one Task: the protocol's shape (api.ts). */
export type TaskView = z.infer<typeof TaskViewSchema>;

/** A Task's change set as the view summarises it. */
export type ChangeSetSummaryView = NonNullable<TaskView["change_set"]>;

/** A Run's port to its Agent's Tasks (the exec tools and task/status, task/output) [EX-6]. */
export interface RunTasks {
  /** The refusal a new Task would get now (checked before the approval is asked). */
  refusal(): ErrorCode | null;
  start(callId: string, req: CommandRequest): ExecResult;
  execOf(taskId: unknown): { ok: true; exec: RunExec } | { ok: false; code: ErrorCode };
  status(taskId: unknown): ExecResult;
  output(taskId: unknown): ExecResult;
}

interface Active {
  agentId: string;
  id: string;
  exec: RunExec;
  spool: OutputSpool;
  abort: AbortController;
  done: Promise<void>;
}

export class TaskManager {
  readonly #o: TaskManagerOptions;
  readonly #active = new Map<string, Active>();
  /** Finished Tasks whose scratch (non-empty change set) is kept, oldest first. */
  readonly #kept = new Map<string, { agentId: string; exec: RunExec }>();
  #stopping = false;

  constructor(o: TaskManagerOptions) {
    this.#o = o;
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #root(agentId: string, taskId: string): string {
    return `${this.#o.root}/${taskRootRel(agentId, taskId)}`;
  }

  #wallS(timeoutS: number): number {
    const w = Math.min(TASK_WALL_MAX_MS, this.#o.wallMs ?? TASK_WALL_MAX_MS);
    return Math.max(1, Math.min(timeoutS, Math.floor(w / 1000)));
  }

  /** Start-up [EX-6]: running ⇒ interrupted, every scratch removed, retention applied. */
  recover(agentIds: readonly string[]): void {
    for (const agentId of agentIds) {
      try {
        const db = this.#o.db(agentId);
        const ids = interruptRunningTasks(db, this.#now());
        if (ids.length > 0) this.#o.log.info("tasks.interrupted", { count: ids.length });
        for (const id of ids) {
          const size = spoolSize(`${this.#root(agentId, id)}/output.log`);
          if (size > 0) setSpooledBytes(db, id, size);
        }
        const dir = `${this.#o.root}/${agentRuntimeRel(agentId)}/tasks`;
        for (const e of readDirOrEmpty(dir)) {
          if (!isValidId(e)) continue;
          removeQuiet(`${dir}/${e}/exec`);
          if (getTask(db, e) === null) removeQuiet(`${dir}/${e}`);
        }
        this.#prune(agentId, db);
      } catch (err) {
        this.#o.log.warn("tasks.recover_failed", { error: String(err) });
      }
    }
  }

  /** The refusal a new Task of `agentId` would get now, or null. */
  refusal(agentId: string): ErrorCode | null {
    let mine = 0;
    for (const a of this.#active.values()) if (a.agentId === agentId) mine++;
    if (mine >= TASKS_ACTIVE_PER_AGENT_MAX) return "task_limit";
    if (this.#active.size >= TASKS_ACTIVE_SERVER_MAX) return "tasks_busy";
    if (this.#stopping) return "tasks_busy";
    return null;
  }

  /** Starts an approved background command; the result carries the task_id at once. */
  start(
    s: {
      agentId: string;
      runId: string;
      conversationId: string | null;
      callId: string;
      req: CommandRequest;
    },
  ): ExecResult {
    const refused = this.refusal(s.agentId);
    if (refused !== null) return { ok: false, code: refused };
    const db = this.#o.db(s.agentId);
    const id = crypto.randomUUID();
    const root = this.#root(s.agentId, id);
    const timeoutS = this.#wallS(s.req.timeoutS);
    Deno.mkdirSync(root, { recursive: true, mode: 0o700 });
    insertTask(db, {
      id,
      runId: s.runId,
      conversationId: s.conversationId,
      callId: s.callId,
      argv: s.req.argv,
      cwd: s.req.cwdPath,
      timeoutS,
      now: this.#now(),
    });
    const exec = new RunExec({
      agentId: s.agentId,
      runId: id,
      workspaceDir: this.#o.workspaceDir(s.agentId),
      rootDir: `${root}/exec`,
      db,
      runner: this.#o.runner,
      record: false,
      background: true,
    });
    const spool = new OutputSpool(`${root}/output.log`);
    const abort = new AbortController();
    const a: Active = {
      agentId: s.agentId,
      id,
      exec,
      spool,
      abort,
      done: Promise.resolve(),
    };
    this.#active.set(id, a);
    a.done = this.#run(a, db, { ...s.req, timeoutS }, s.callId);
    return {
      ok: true,
      text: canonicalJson({
        task_id: id,
        status: "running",
        background: true,
        argv: s.req.argv,
        timeout_s: timeoutS,
        read_with: ["task/status", "task/output"],
      }),
    };
  }

  async #run(a: Active, db: DatabaseSync, req: CommandRequest, callId: string): Promise<void> {
    // Let start() return (and the tool call complete) before the command begins.
    await Promise.resolve();
    let r: ExecResult;
    try {
      r = await a.exec.command(req, callId, a.abort.signal, (d) => {
        try {
          a.spool.append(d.text);
        } catch (err) {
          this.#o.log.warn("tasks.spool_failed", { error: String(err) });
        }
      });
    } catch (err) {
      this.#o.log.warn("tasks.failed", { error: String(err) });
      r = { ok: false, code: err instanceof AppError ? err.code : "internal_error" };
    }
    a.spool.close();
    const cmd = a.exec.lastCommand;
    let status: Exclude<TaskStatus, "running">;
    if (!r.ok) status = "failed";
    else status = cmd?.outcome ?? "outcome_unknown";
    if (this.#stopping && (status === "cancelled" || status === "failed")) status = "interrupted";
    const summary = r.ok ? a.exec.latestSummary() : null;
    try {
      finishTask(db, a.id, {
        status,
        exitCode: cmd?.exit_code ?? null,
        signal: cmd?.signal ?? null,
        errorCode: r.ok ? null : r.code,
        outputBytes: a.spool.total,
        outputOmitted: a.spool.omitted,
        result: r.ok ? r.text : null,
        changeSet: summary === null ? null : JSON.stringify(summary),
        now: this.#now(),
      });
    } catch (err) {
      this.#o.log.warn("tasks.finish_failed", { error: String(err) });
    }
    this.#active.delete(a.id);
    if (summary !== null && summary.total > 0 && !this.#stopping) {
      this.#kept.set(a.id, { agentId: a.agentId, exec: a.exec });
      const mine = [...this.#kept].filter(([, k]) => k.agentId === a.agentId);
      for (
        const [id, k] of mine.slice(0, Math.max(0, mine.length - TASK_SCRATCHES_KEPT_PER_AGENT))
      ) {
        k.exec.dispose();
        this.#kept.delete(id);
      }
    } else {
      a.exec.dispose();
    }
    try {
      this.#prune(a.agentId, db);
    } catch (err) {
      this.#o.log.warn("tasks.prune_failed", { error: String(err) });
    }
  }

  #prune(agentId: string, db: DatabaseSync): void {
    for (const id of pruneTasks(db, this.#now())) {
      const k = this.#kept.get(id);
      if (k) {
        k.exec.dispose();
        this.#kept.delete(id);
      }
      removeQuiet(this.#root(agentId, id));
    }
  }

  /** Cancel [EX-6]: kills every process of the Task; `task_not_active` when it is not running. */
  cancel(agentId: string, taskId: string): Promise<void> {
    const a = this.#active.get(taskId);
    if (!a || a.agentId !== agentId) {
      if (!isValidId(taskId) || getTask(this.#o.db(agentId), taskId) === null) {
        throw new AppError("task_not_found");
      }
      throw new AppError("task_not_active");
    }
    a.abort.abort();
    return a.done;
  }

  /** The Agent is being deleted or rebuilt: its Tasks end (their roots go with the Agent). */
  async cancelAgent(agentId: string): Promise<void> {
    const mine = [...this.#active.values()].filter((a) => a.agentId === agentId);
    for (const a of mine) a.abort.abort();
    await Promise.all(mine.map((a) => a.done));
    for (const [id, k] of [...this.#kept]) {
      if (k.agentId !== agentId) continue;
      k.exec.dispose();
      this.#kept.delete(id);
    }
  }

  /** Shutdown: every running Task is killed and becomes `interrupted`. */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    const all = [...this.#active.values()];
    for (const a of all) a.abort.abort();
    await Promise.all(all.map((a) => a.done));
    for (const k of this.#kept.values()) k.exec.dispose();
    this.#kept.clear();
  }

  /** Active Tasks in the server (for tests and health). */
  get activeCount(): number {
    return this.#active.size;
  }

  #view(agentId: string, row: TaskRow, tailMax: number): TaskView {
    const a = this.#active.get(row.id);
    const now = this.#now();
    let tail: { text: string; earlier: number } | null;
    if (a) tail = a.spool.tail(tailMax);
    else {
      tail = readSpoolTail(
        `${this.#root(agentId, row.id)}/output.log`,
        tailMax,
        row.output_omitted,
      );
    }
    const cs = row.change_set === null ? null : JSON.parse(row.change_set) as {
      total: number;
      truncated: boolean;
      counts: { added: number; modified: number; deleted: number };
      entries: { path: string; kind: string; note: string | null }[];
    };
    return {
      task_id: row.id,
      run_id: row.run_id,
      conversation_id: row.conversation_id,
      call_id: row.call_id,
      argv: JSON.parse(row.argv),
      cwd: row.cwd,
      timeout_s: row.timeout_s,
      status: row.status,
      exit_code: row.exit_code,
      signal: row.signal,
      error_code: row.error_code,
      created_at: row.created_at,
      ended_at: row.ended_at,
      elapsed_ms: Math.max(0, (row.ended_at ?? now) - row.created_at),
      output_bytes: a ? a.spool.total : row.output_bytes,
      output_omitted_bytes: a ? a.spool.omitted : row.output_omitted,
      output_tail: tail?.text ?? "",
      output_tail_earlier_bytes: tail?.earlier ?? 0,
      change_set: cs === null ? null : {
        total: cs.total,
        truncated: cs.truncated,
        counts: cs.counts,
        entries: cs.entries.map((e) => ({ path: e.path, kind: e.kind, note: e.note })),
      },
      applicable: this.#kept.has(row.id),
    };
  }

  /** The Agent's Tasks, newest first (each with a short output tail). */
  list(agentId: string): TaskView[] {
    return listTasks(this.#o.db(agentId)).map((r) => this.#view(agentId, r, TASK_ROW_TAIL_BYTES));
  }

  /** One Task with a longer output tail; `task_not_found` otherwise. */
  get(agentId: string, taskId: string): TaskView {
    const row = isValidId(taskId) ? getTask(this.#o.db(agentId), taskId) : null;
    if (row === null) throw new AppError("task_not_found");
    return this.#view(agentId, row, TASK_ROUTE_TAIL_BYTES);
  }

  /** `task/status {task_id}` [EX-6]: the model's view, ≤ one projection. */
  statusTool(agentId: string, taskId: unknown): ExecResult {
    const v = this.#toolView(agentId, taskId, 0);
    if (!v.ok) return v;
    const t = v.view;
    const cs = t.change_set;
    const shape = (paths: string[]) =>
      canonicalJson({
        task_id: t.task_id,
        status: t.status,
        argv: t.argv,
        cwd: t.cwd,
        exit_code: t.exit_code,
        signal: t.signal,
        error: t.error_code,
        elapsed_ms: t.elapsed_ms,
        output_bytes: t.output_bytes,
        output_omitted_bytes: t.output_omitted_bytes,
        changes: cs === null ? null : {
          ...cs.counts,
          total: cs.total,
          truncated: cs.truncated,
          paths,
          apply_with: t.applicable ? `exec/apply {"task_id": "${t.task_id}"}` : null,
        },
        read_output_with: "task/output",
      });
    let paths = (cs?.entries ?? []).slice(0, 16).map((e) => `${e.kind[0].toUpperCase()} ${e.path}`);
    let text = shape(paths);
    while (utf8Bytes(text) > TOOL_RESULT_PROJECTION_MAX_BYTES && paths.length > 0) {
      paths = paths.slice(0, paths.length - 1);
      text = shape(paths);
    }
    return { ok: true, text };
  }

  /** `task/output {task_id}` [EX-6]: the output's tail, ≤ one projection, the cut said. */
  outputTool(agentId: string, taskId: unknown): ExecResult {
    const v = this.#toolView(agentId, taskId, TOOL_RESULT_PROJECTION_MAX_BYTES);
    if (!v.ok) return v;
    const t = v.view;
    const shape = (text: string, earlier: number) =>
      canonicalJson({
        task_id: t.task_id,
        status: t.status,
        output_bytes: t.output_bytes,
        spool_max_bytes: TASK_OUTPUT_MAX_BYTES,
        earlier_bytes_omitted: earlier,
        output: earlier > 0 ? `[… ${earlier} earlier bytes omitted …]\n${text}` : text,
      });
    const enc = new TextEncoder();
    let body = enc.encode(t.output_tail);
    let earlier = t.output_tail_earlier_bytes;
    for (;;) {
      const text = shape(new TextDecoder().decode(body), earlier);
      const over = utf8Bytes(text) - TOOL_RESULT_PROJECTION_MAX_BYTES;
      if (over <= 0 || body.length === 0) return { ok: true, text };
      let cut = Math.min(body.length, over + 64);
      while (cut < body.length && (body[cut] & 0xc0) === 0x80) cut++;
      body = body.subarray(cut);
      earlier += cut;
    }
  }

  #toolView(
    agentId: string,
    taskId: unknown,
    tailMax: number,
  ): { ok: true; view: TaskView } | { ok: false; code: ErrorCode } {
    if (typeof taskId !== "string" || !isValidId(taskId)) {
      return { ok: false, code: "task_not_found" };
    }
    const row = getTask(this.#o.db(agentId), taskId);
    if (row === null) return { ok: false, code: "task_not_found" };
    return { ok: true, view: this.#view(agentId, row, tailMax) };
  }

  /** What one Run's tool calls use: its Agent's Tasks, started with this Run as their origin. */
  forRun(agentId: string, runId: string, conversationId: string | null): RunTasks {
    return {
      refusal: () => this.refusal(agentId),
      start: (callId, req) => this.start({ agentId, runId, conversationId, callId, req }),
      execOf: (taskId) => this.execOf(agentId, taskId),
      status: (taskId) => this.statusTool(agentId, taskId),
      output: (taskId) => this.outputTool(agentId, taskId),
    };
  }

  /** The RunExec holding a finished Task's change set, for `exec/apply {task_id}`. */
  execOf(agentId: string, taskId: unknown): { ok: true; exec: RunExec } | {
    ok: false;
    code: ErrorCode;
  } {
    if (typeof taskId !== "string" || !isValidId(taskId)) {
      return { ok: false, code: "task_not_found" };
    }
    const a = this.#active.get(taskId);
    if (a && a.agentId === agentId) return { ok: false, code: "task_running" };
    const k = this.#kept.get(taskId);
    if (k && k.agentId === agentId) return { ok: true, exec: k.exec };
    if (getTask(this.#o.db(agentId), taskId) === null) return { ok: false, code: "task_not_found" };
    return { ok: false, code: "change_set_not_found" };
  }
}

function spoolSize(path: string): number {
  try {
    return Deno.statSync(path).size;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return 0;
    throw err;
  }
}

function readDirOrEmpty(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
}

function removeQuiet(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}
