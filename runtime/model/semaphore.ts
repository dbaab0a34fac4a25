/**
 * The global stream semaphore [MB-4]: at most MODEL_STREAMS_MAX concurrent
 * Ollama streams. A waiter waits at most its own bound (30 s by default), then
 * gets `busy`; a cancelled waiter leaves the queue at once. The queue is
 * bounded by `maxWaiters` (the Control Plane's 4 active Runs cap, [CV-2]), so
 * it can never grow without bound.
 */
import { ACTIVE_RUNS_TOTAL_MAX, MODEL_STREAMS_MAX } from "../limits.ts";

export type AcquireResult =
  | { kind: "acquired"; release: () => void }
  | { kind: "busy" }
  | { kind: "aborted" };

export interface SemaphoreOptions {
  /** @default MODEL_STREAMS_MAX (2) */
  permits?: number;
  /** Waiters beyond this are refused at once as busy. @default ACTIVE_RUNS_TOTAL_MAX (4) */
  maxWaiters?: number;
}

interface Waiter {
  grant: () => void;
}

export class StreamSemaphore {
  readonly permits: number;
  readonly maxWaiters: number;
  #inUse = 0;
  #waiters: Waiter[] = [];

  constructor(opts: SemaphoreOptions = {}) {
    this.permits = opts.permits ?? MODEL_STREAMS_MAX;
    this.maxWaiters = opts.maxWaiters ?? ACTIVE_RUNS_TOTAL_MAX;
  }

  get inUse(): number {
    return this.#inUse;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  /** Waits up to `waitMs` for a permit. `release` is idempotent. */
  acquire(waitMs: number, signal: AbortSignal): Promise<AcquireResult> {
    if (signal.aborted) return Promise.resolve({ kind: "aborted" });
    if (this.#inUse < this.permits && this.#waiters.length === 0) {
      this.#inUse++;
      return Promise.resolve({ kind: "acquired", release: this.#releaser() });
    }
    if (this.#waiters.length >= this.maxWaiters) return Promise.resolve({ kind: "busy" });
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: () => {
          cleanup();
          resolve({ kind: "acquired", release: this.#releaser() });
        },
      };
      const leave = (result: AcquireResult) => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        cleanup();
        resolve(result);
      };
      const timer = setTimeout(
        () => leave({ kind: "busy" }),
        Math.min(Math.max(0, waitMs || 0), 2 ** 31 - 1),
      );
      const onAbort = () => leave({ kind: "aborted" });
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (next) next.grant(); // the permit passes straight to the next waiter
      else this.#inUse--;
    };
  }
}
