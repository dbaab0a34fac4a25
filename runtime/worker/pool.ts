/**
 * The pre-warmed Worker pool [PF-1]: a few confined, attested, never-used
 * Workers waiting for a Run, so a submit does not pay for two Deno start-ups.
 *
 * What this file enforces:
 * - a pooled Worker is spawned through the supervisor like any other (it is
 *   returned only after its confinement is verified on every thread), into
 *   an empty root under `.runtime/workers/` that belongs to no Agent, and it
 *   receives no frame before it is taken: it never holds Agent data while
 *   pooled;
 * - `take` hands each Worker out exactly once (it leaves the pool for good)
 *   and `claim`s it for the Run — its root is renamed to the Run root and the
 *   Run's deadline is armed; a replacement starts in the background once the
 *   taker says so (its Run's first model call ended, or the Run did) and at
 *   the latest WORKER_POOL_REFILL_DEFER_MAX_MS after the take — two Deno
 *   start-ups of CPU never compete with the Run's way to its model;
 * - an empty pool (size 0, or all taken) spawns on demand — the cold path,
 *   the same sequence — and a taker waits for a spawn already under way
 *   rather than starting a second one;
 * - a pooled Worker that dies is replaced; spawns that keep failing back off
 *   (WORKER_POOL_RETRY_MIN_MS doubling to WORKER_POOL_RETRY_MAX_MS) instead
 *   of spinning; one idle longer than WORKER_POOL_IDLE_MAX_MS is retired and
 *   replaced, well before its own wait for a first frame would end it;
 * - `shutdown` kills every pooled Worker, waits for spawns under way and
 *   kills what they produce: the pool shrinks to zero.
 */
import { nextLoopTurn } from "../loop_turns.ts";
import {
  WORKER_POOL_IDLE_MAX_MS,
  WORKER_POOL_REFILL_DEFER_MAX_MS,
  WORKER_POOL_RETRY_MAX_MS,
  WORKER_POOL_RETRY_MIN_MS,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { errorName } from "../log.ts";
import { checkManagedPath, ensurePrivateDir } from "../path_safety.ts";
import type { WorkerHandle } from "./supervisor.ts";

/** Where pooled Workers live until taken (relative to the home). */
export const WORKER_POOL_REL = ".runtime/workers";

export interface WorkerPoolOptions<T> {
  /** The home root (absolute). */
  root: string;
  /** How many Workers wait ready (0 = none: every Run spawns its own). */
  size: number;
  log: Logger;
  /** Spawns one confined Worker in `workerRoot` with no deadline (the supervisor). */
  spawn(workerRoot: string): Promise<WorkerHandle<T>>;
  /** The longest a take defers the refill. @default WORKER_POOL_REFILL_DEFER_MAX_MS */
  refillDeferMaxMs?: number;
}

interface Pooled<T> {
  worker: WorkerHandle<T>;
  gone: boolean;
  retire: ReturnType<typeof setTimeout>;
}

interface Waiter<T> {
  resolve(w: WorkerHandle<T>): void;
  reject(err: unknown): void;
}

export class WorkerPool<T> {
  readonly #opts: WorkerPoolOptions<T>;
  #idle: Pooled<T>[] = [];
  #waiters: Waiter<T>[] = [];
  /** Background spawns under way (they count towards the pool's size). */
  #spawning = 0;
  #inFlight = new Set<Promise<void>>();
  #failures = 0;
  #retry: ReturnType<typeof setTimeout> | undefined;
  /** Refills deferred by takes (their bound timers). */
  #deferred = new Set<ReturnType<typeof setTimeout>>();
  #closed = false;
  #seq = 0;

  constructor(opts: WorkerPoolOptions<T>) {
    this.#opts = opts;
  }

  /** Workers ready to be taken now. */
  get ready(): number {
    return this.#idle.length;
  }

  /** Clears what a previous process left behind and starts filling. */
  start(): void {
    const rel = WORKER_POOL_REL;
    if (checkManagedPath(this.#opts.root, rel, "dir", true)) {
      Deno.removeSync(`${this.#opts.root}/${rel}`, { recursive: true });
    }
    ensurePrivateDir(this.#opts.root, rel);
    this.#fill();
  }

  /**
   * A confined, never-used Worker claimed for `runRoot` (which must not exist
   * yet; its parent must) with the Run's deadline armed. Rejects with the
   * supervisor's code when no Worker can be started. The pool refills once
   * `refillAfter` settles (at once without it), at the latest after the bound.
   */
  async take(
    runRoot: string,
    deadlineMs: number,
    refillAfter?: Promise<unknown>,
  ): Promise<WorkerHandle<T>> {
    if (this.#closed) throw new Error("worker pool is shut down");
    let worker: WorkerHandle<T> | null = null;
    while (worker === null) {
      const p = this.#idle.shift();
      if (p === undefined) break;
      clearTimeout(p.retire);
      if (!p.gone) worker = p.worker;
    }
    if (worker === null) {
      worker = this.#spawning > this.#waiters.length
        ? await new Promise<WorkerHandle<T>>((resolve, reject) =>
          this.#waiters.push({ resolve, reject })
        )
        : await this.#spawnForTaker();
    }
    this.#refillAfter(refillAfter);
    worker.claim(runRoot, deadlineMs);
    return worker;
  }

  /** Kills every pooled Worker and whatever spawns under way produce; resolves when all are gone. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    for (const t of this.#deferred) clearTimeout(t);
    this.#deferred.clear();
    for (const w of this.#waiters.splice(0)) w.reject(new Error("worker pool is shut down"));
    const idle = this.#idle.splice(0);
    for (const p of idle) clearTimeout(p.retire);
    await Promise.all([
      ...idle.map((p) => p.worker.kill("cancelled")),
      ...this.#inFlight,
    ]);
  }

  /** The cold path: a spawn for this taker alone, on a loop turn of its own (see #spawnOne). */
  async #spawnForTaker(): Promise<WorkerHandle<T>> {
    await nextLoopTurn();
    if (this.#closed) throw new Error("worker pool is shut down");
    return await this.#opts.spawn(this.#newRoot());
  }

  #newRoot(): string {
    const rel = `${WORKER_POOL_REL}/w${Deno.pid}-${++this.#seq}`;
    return ensurePrivateDir(this.#opts.root, rel);
  }

  /** Fills the pool once `after` settles or the bound passes, whichever comes first. */
  #refillAfter(after: Promise<unknown> | undefined): void {
    if (after === undefined) return this.#fill();
    let done = false;
    const go = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.#deferred.delete(timer);
      this.#fill();
    };
    const timer = setTimeout(go, this.#opts.refillDeferMaxMs ?? WORKER_POOL_REFILL_DEFER_MAX_MS);
    this.#deferred.add(timer);
    after.then(go, go);
  }

  #fill(): void {
    if (this.#closed || this.#retry !== undefined) return;
    while (this.#idle.length + this.#spawning - this.#waiters.length < this.#opts.size) {
      this.#spawnOne();
    }
  }

  #spawnOne(): void {
    this.#spawning++;
    const done = (async () => {
      let worker: WorkerHandle<T>;
      try {
        // [PF-2] A spawn's synchronous part (the bundle's freshness check, the fork and exec:
        // 3–13 ms on a loaded 2-core host) runs on a loop turn of its own instead of lengthening
        // the section that asked for it — a Run's first model call ending, a take, a submit.
        await nextLoopTurn();
        if (this.#closed) {
          this.#spawning--;
          return;
        }
        worker = await this.#opts.spawn(this.#newRoot());
      } catch (err) {
        this.#spawning--;
        this.#failed(err);
        return;
      }
      this.#spawning--;
      this.#failures = 0;
      if (this.#closed) {
        await worker.kill("cancelled");
        return;
      }
      const waiter = this.#waiters.shift();
      if (waiter !== undefined) {
        waiter.resolve(worker);
        return;
      }
      this.#park(worker);
    })();
    this.#inFlight.add(done);
    done.finally(() => this.#inFlight.delete(done));
  }

  #park(worker: WorkerHandle<T>): void {
    const p: Pooled<T> = {
      worker,
      gone: false,
      retire: setTimeout(() => {
        this.#drop(p);
        worker.kill("cancelled");
      }, WORKER_POOL_IDLE_MAX_MS),
    };
    this.#idle.push(p);
    worker.exited.then(() => {
      p.gone = true;
      if (this.#drop(p)) this.#opts.log.warn("worker_pool_member_exited", { pid: worker.pid });
    });
  }

  /** Removes a pooled Worker (if still pooled) and starts its replacement. */
  #drop(p: Pooled<T>): boolean {
    const i = this.#idle.indexOf(p);
    if (i < 0) return false;
    this.#idle.splice(i, 1);
    clearTimeout(p.retire);
    this.#fill();
    return true;
  }

  #failed(err: unknown): void {
    this.#failures++;
    this.#opts.log.error("worker_pool_spawn_failed", {
      error: errorName(err),
      failures: this.#failures,
    });
    // A taker waiting for this spawn gets its error (the cold path fails closed too).
    this.#waiters.shift()?.reject(err);
    if (this.#closed) return;
    const delay = Math.min(
      WORKER_POOL_RETRY_MAX_MS,
      WORKER_POOL_RETRY_MIN_MS * 2 ** (this.#failures - 1),
    );
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#fill();
    }, delay);
  }
}
