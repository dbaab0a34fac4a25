/**
 * How a Run that did not complete on its own ends: the terminal for an abort
 * reason, the `cancel` frame reason the Worker is told, and the terminal for
 * an error thrown while the Worker was spawned or driven [CV-2, EV-1].
 */
import { AppError } from "../errors.ts";
import type { WorkerExit } from "../worker/supervisor.ts";
import type { Terminal } from "./run_recorder.ts";

export type AbortReason = "user" | "shutdown" | "deadline" | "agent_upgrade" | "agent_delete";

/** The terminal of a Run stopped before or instead of its turn. */
export function abortedTerminal(r: AbortReason): Terminal {
  return r === "deadline"
    ? { state: "failed", code: "model_turn_deadline", stage: "model" }
    : { state: "cancelled", reason: r };
}

/** What the Worker's `cancel` frame says; Agent transitions read as a shutdown to it. */
export function cancelFrameReason(r: AbortReason | null): "user" | "shutdown" | "deadline" {
  return r === "deadline" ? "deadline" : r === "user" ? "user" : "shutdown";
}

/**
 * The terminal for an error out of spawning or driving the Worker. A Run the
 * user or an Agent transition already aborted ends cancelled whatever broke
 * on the way down; anything that is not an AppError is an `internal_error`.
 */
export function errorTerminal(err: unknown, reason: AbortReason | null): Terminal {
  if (!(err instanceof AppError)) {
    return { state: "failed", code: "internal_error", stage: "worker" };
  }
  if (reason !== null && reason !== "deadline") return { state: "cancelled", reason };
  const stage = err.code.startsWith("sandbox")
    ? "sandbox"
    : err.code === "run_event_limit"
    ? "journal"
    : "worker";
  return { state: "failed", code: err.code, stage };
}

/**
 * The terminal of a Turn whose Worker input ended with no code decided
 * (`worker_crashed`): if the supervisor killed the Worker for a resource bound
 * (Run-tree watch [SB-6], CPU/file-size rlimit), that bound is the code. Waits
 * for the exit at most `graceMs` (a Worker may close stdout and live on).
 */
export async function crashTerminal(
  exited: Promise<WorkerExit>,
  crashed: Terminal,
  graceMs: number,
): Promise<Terminal> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const exit = await Promise.race([
    exited,
    new Promise<null>((res) => (t = setTimeout(() => res(null), graceMs))),
  ]);
  clearTimeout(t);
  return exit?.errorCode === "worker_resource_limit"
    ? { state: "failed", code: "worker_resource_limit", stage: "worker" }
    : crashed;
}
