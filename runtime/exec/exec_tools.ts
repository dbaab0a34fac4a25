/**
 * The exec tools behind one approval each [EX-2, EX-5, TL-2]: what the
 * operator is shown and what the approval binds, and the commit that runs
 * only after it. Used by runtime/runs/tool_call.ts exactly like the file
 * mutations' prepare/commit pair.
 *
 * What this file enforces: exec/command's finer argument rules run before
 * any approval is asked (command_args.ts: a bad argv, program or cwd is a
 * fixed tool error and nothing runs; so is a bounded-bash line the parser
 * refuses); the preview of exec/command is the
 * argv, cwd and timeout; the preview of exec/apply is the change-set
 * summary and the diffs in path order (≤ 4 KiB with the fixed truncation
 * marker — the operator's approval view fetches the whole change set from
 * `GET …/runs/<run>/changes`); the approval binds a digest of exactly what
 * will run or be applied.
 */
import { AppError, type ErrorCode } from "../errors.ts";
import { parseBoundedBash } from "./bounded_bash.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { domainDigest } from "../tools/text.ts";
import type { ToolArgs } from "../tools/policy.ts";
import { keptFullDiff, previewOf } from "../tools/mutation_plan.ts";
import { checkCommandArgs } from "./command_args.ts";
import type { ExecResult, RunExec } from "./run_exec.ts";
import type { OutputDelta } from "./runner_types.ts";
import type { RunTasks } from "../tasks/task_manager.ts";

/** The exec tools and their executor identities (operation ledger). */
export const EXEC_TOOL_EXECUTORS: Readonly<Record<string, string>> = Object.freeze({
  "exec/command": "runner/command/v1",
  "exec/apply": "control-plane/exec_apply/v1",
  "exec/run": "runner/exec_run/v1",
});

/** One approval-gated exec call: what is shown, what is bound, what runs after approval. */
export interface GatedExec {
  preview: string;
  planDigest: string;
  executor: string;
  commit(): Promise<ExecResult>;
  /** exec/apply: the planned paths (what the policy decides on) [TL-9]. */
  paths?: string[];
  /** exec/apply: the whole approval text, kept one click away when ≤ 256 KiB [TL-12]. */
  fullDiff?: string | null;
}

export interface ExecCallContext {
  callId: string;
  signal: AbortSignal;
  emit(d: OutputDelta): void;
  /** The Agent's background Tasks [EX-6]; absent ⇒ `background: true` is `tool_denied`. */
  tasks?: RunTasks;
}

/** Shell-like quoting for the preview only (nothing is ever run through a shell). */
export function quoteArg(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`;
}

export function prepareExecTool(
  exec: RunExec,
  toolId: string,
  args: ToolArgs,
  c: ExecCallContext,
): { ok: true; gated: GatedExec } | { ok: false; code: ErrorCode } {
  if (toolId === "exec/command") {
    const r = checkCommandArgs(args);
    if (!r.ok) return r;
    const req = r.request;
    // One shape for both ways a command runs: the approval preview and the plan digest bind
    // the argv, cwd, timeout and (for a background Task) the word "background".
    const gated = (
      how: string,
      digestTail: readonly string[],
      commit: GatedExec["commit"],
    ): { ok: true; gated: GatedExec } => ({
      ok: true,
      gated: {
        preview: previewOf(
          `$ ${req.argv.map(quoteArg).join(" ")}\ncwd: ${req.cwdPath}\ntimeout: ${how}\n` +
            (req.background
              ? "Runs in the background as a Task of the Agent, on its own scratch copy of the " +
                "workspace; it goes on after this answer. Its changes come back as a change set.\n"
              : "Runs on a scratch copy of the workspace; its changes come back as a change set.\n"),
        ),
        planDigest: domainDigest(
          "agent-builder/exec-command/v1",
          canonicalJson([c.callId, req.argv, req.cwdPath, req.timeoutS, ...digestTail]),
        ),
        executor: EXEC_TOOL_EXECUTORS["exec/command"],
        commit,
      },
    });
    if (req.background) {
      // [EX-6] A background Task: refused before the approval when it could not start.
      const tasks = c.tasks;
      if (!tasks) return { ok: false, code: "tool_denied" };
      const refused = tasks.refusal();
      if (refused !== null) return { ok: false, code: refused };
      return gated(
        `${req.timeoutS} s (background Task)`,
        ["background"],
        () => Promise.resolve(tasks.start(c.callId, req)),
      );
    }
    return gated(
      `${req.timeoutS} s`,
      [],
      () => exec.command(req, c.callId, c.signal, c.emit),
    );
  }
  if (toolId === "exec/apply") {
    const paths = args.paths;
    // [EX-6] `task_id`: a finished background Task's change set, applied the same way.
    let source = exec;
    let origin = "";
    if (args.task_id !== undefined) {
      const t = c.tasks?.execOf(args.task_id) ??
        { ok: false as const, code: "tool_denied" as const };
      if (!t.ok) return t;
      source = t.exec;
      origin = `Task ${args.task_id} `;
    }
    const p = source.prepareApply(Array.isArray(paths) ? paths : undefined);
    if (!p.ok) return p;
    const plan = p.plan;
    const sign = { added: "A", modified: "M", deleted: "D" } as const;
    const lines = plan.entries.map((e) =>
      `${sign[e.kind]} ${e.path}${e.note ? ` (${e.note.replaceAll("_", " ")})` : ""}`
    );
    for (const u of plan.unknown) lines.push(`? ${u} (not in the change set)`);
    const diffs = plan.entries.map((e) => source.diffOf(e.path)).filter((d) => d !== null);
    const whole =
      `Apply ${plan.entries.length} path(s) of the change set of ${origin}${plan.command_call_id}:\n` +
      lines.join("\n") + "\n\n" + diffs.join("");
    const preview = previewOf(whole);
    return {
      ok: true,
      gated: {
        preview,
        planDigest: plan.digest,
        paths: plan.entries.map((e) => e.path),
        fullDiff: keptFullDiff(whole),
        executor: EXEC_TOOL_EXECUTORS["exec/apply"],
        commit: () => Promise.resolve(source.commitApply(plan, c.callId)),
      },
    };
  }
  if (toolId === "exec/run") {
    // {profile: "bounded-bash", command} or {profile: "runtime-compile", path} [EX-1].
    const { profile, command, path } = args;
    let req: { profile: "bounded-bash"; command: string } | {
      profile: "runtime-compile";
      path: string;
    };
    if (profile === "bounded-bash" && typeof command === "string" && path === undefined) {
      req = { profile, command };
    } else if (
      profile === "runtime-compile" && typeof path === "string" && command === undefined
    ) {
      req = { profile, path };
    } else return { ok: false, code: "tool_invalid_arguments" };
    if (req.profile === "bounded-bash") {
      // The parser decides before any approval is asked: a refused line never runs.
      try {
        parseBoundedBash(req.command);
      } catch (err) {
        if (err instanceof AppError) return { ok: false, code: err.code };
        throw err;
      }
    }
    const shown = req.profile === "bounded-bash" ? `$ ${req.command}` : `check ${req.path}`;
    return {
      ok: true,
      gated: {
        preview: previewOf(`exec/run ${req.profile}\n${shown}\n`),
        planDigest: domainDigest(
          "agent-builder/exec-run/v1",
          canonicalJson([c.callId, req.profile, "command" in req ? req.command : req.path]),
        ),
        executor: EXEC_TOOL_EXECUTORS["exec/run"],
        commit: () => exec.execRun(req, c.signal),
      },
    };
  }
  return { ok: false, code: "tool_denied" };
}
