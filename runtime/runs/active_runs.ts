/**
 * The one owner of the active-Run state [CV-2, OP-2]: which Runs are active,
 * in which Conversation, with which Worker, and how each is aborted.
 *
 * What this file enforces: one active Run per Conversation (409
 * `conversation_busy`) and ≤ ACTIVE_RUNS_TOTAL_MAX in all (503 `runs_busy`);
 * an abort happens once per Run (the first reason stays), aborts the Run's
 * signal, sends the Worker its `cancel` frame and kills a Worker that is still
 * active after the cancel grace; every Run's cleanup promise is tracked until
 * it settled, so shutdown can wait for all of them.
 */
import { AppError } from "../errors.ts";
import { ACTIVE_RUNS_TOTAL_MAX, CANCEL_GRACE_MS } from "../limits.ts";
import type { Logger } from "../log.ts";
import { noteRunEnded, noteRunStarted } from "../heap_trim.ts";
import type { WorkerToControl } from "../protocol/worker_frames.ts";
import type { WorkerHandle } from "../worker/supervisor.ts";
import { type AbortReason, cancelFrameReason } from "./run_terminal.ts";
import { errorName } from "../log.ts";

/** One active Run as the rest of the service sees it. */
export interface ActiveRun {
  readonly agentId: string;
  readonly conversationId: string;
  readonly runId: string;
  /** Aborted on cancel, deadline, shutdown or an Agent transition. */
  readonly signal: AbortSignal;
  /** Why the Run was aborted, once it was. */
  reason(): AbortReason | null;
}

interface Entry extends ActiveRun {
  controller: AbortController;
  why: AbortReason | null;
  worker: WorkerHandle<WorkerToControl> | null;
  done: Promise<void>;
}

export class ActiveRuns {
  readonly #runs = new Map<string, Entry>();
  /** Cleanup (Worker reaped, Run root removed) of every Run not yet settled. */
  readonly #exits = new Set<Promise<void>>();
  readonly #log: Logger;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** 409 when the Conversation has an active Run, 503 when all slots are taken. */
  assertRoom(agentId: string, conversationId: string): void {
    if (this.runOf(agentId, conversationId) !== null) throw new AppError("conversation_busy");
    if (this.#runs.size >= ACTIVE_RUNS_TOTAL_MAX) throw new AppError("runs_busy");
  }

  runOf(agentId: string, conversationId: string): string | null {
    for (const r of this.#runs.values()) {
      if (r.agentId === agentId && r.conversationId === conversationId) return r.runId;
    }
    return null;
  }

  get size(): number {
    return this.#runs.size;
  }

  /** Whether the Agent has an active Run [LC-2: a busy delegate]. */
  hasAgent(agentId: string): boolean {
    for (const r of this.#runs.values()) if (r.agentId === agentId) return true;
    return false;
  }

  has(runId: string): boolean {
    return this.#runs.has(runId);
  }

  /** The Run of `agentId` with this id, if it is active. */
  get(agentId: string, runId: string): ActiveRun | null {
    const r = this.#runs.get(runId);
    return r && r.agentId === agentId ? r : null;
  }

  /**
   * Registers a Run and starts `body` for it. The Run stays active until
   * `body` calls `settled()` (its terminal is durable) or returns; its cleanup
   * is tracked until `body` returns. `onEnd` runs once `body` returned.
   */
  start(
    ids: { agentId: string; conversationId: string; runId: string },
    body: (run: ActiveRun, hooks: RunHooks) => Promise<void>,
    onEnd: () => void,
  ): void {
    const controller = new AbortController();
    const e: Entry = {
      ...ids,
      controller,
      signal: controller.signal,
      why: null,
      reason: () => e.why,
      worker: null,
      done: Promise.resolve(),
    };
    this.#runs.set(ids.runId, e);
    noteRunStarted(); // [PF-2] no heap trim (a full GC) while a Run streams
    const hooks: RunHooks = {
      attachWorker: (w) => (e.worker = w),
      settled: () => this.#runs.delete(ids.runId),
    };
    const done: Promise<void> = body(e, hooks).finally(() => {
      this.#runs.delete(ids.runId);
      noteRunEnded(); // [PF-5] its native memory is free now: let the allocator give it back
      this.#exits.delete(done);
      onEnd();
    });
    e.done = done;
    this.#exits.add(done);
  }

  /** Aborts one Run (once): signal, Worker `cancel` frame, kill after the grace. */
  abort(runId: string, reason: AbortReason): void {
    const run = this.#runs.get(runId);
    if (!run || run.why !== null) return;
    run.why = reason;
    run.controller.abort();
    const w = run.worker;
    if (!w) return;
    w.send({ v: 2, type: "cancel", reason: cancelFrameReason(reason) }).catch((err) => {
      this.#log.warn("run.cancel_send_failed", { kind: errorName(err) });
    });
    // A Worker that does not report within the grace is killed; the driver then sees EOF.
    setTimeout(() => {
      if (this.#runs.has(runId)) w.kill("cancelled").catch(() => undefined);
    }, CANCEL_GRACE_MS);
  }

  /** Aborts every active Run of an Agent; resolves once each Run's work returned. */
  async abortAgent(agentId: string, reason: AbortReason): Promise<string[]> {
    const mine = [...this.#runs.values()].filter((r) => r.agentId === agentId);
    for (const r of mine) this.abort(r.runId, reason);
    await Promise.all(mine.map((r) => r.done));
    return mine.map((r) => r.runId);
  }

  /** Aborts every active Run and waits for all cleanups, at most `graceMs`. */
  async abortAll(reason: AbortReason, graceMs: number): Promise<void> {
    for (const r of this.#runs.values()) this.abort(r.runId, reason);
    let t: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...this.#exits]),
      new Promise((res) => (t = setTimeout(res, graceMs))),
    ]);
    clearTimeout(t);
  }
}

/** What a Run's body tells its owner. */
export interface RunHooks {
  /** The Worker is up: an abort from now on also cancels and, after the grace, kills it. */
  attachWorker(w: WorkerHandle<WorkerToControl>): void;
  /** The terminal is durable: the Run no longer counts as active. */
  settled(): void;
}
