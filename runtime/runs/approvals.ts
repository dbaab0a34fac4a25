/**
 * In-memory rendezvous between a Run waiting on an approval and the browser's
 * decision [TL-2]. The durable record is the `permissions` row; this only
 * wakes the waiting Run.
 *
 * What this file enforces: a decision reaches only an EXISTING pending id of
 * the SAME Agent, exactly once; a waiter ends on its decision, on the Run's
 * abort signal (cancel, deadline, shutdown) — never by itself approving.
 */

export type Decision = "approve" | "deny";

interface Waiter {
  agentId: string;
  resolve(d: Decision | "aborted"): void;
}

export class Approvals {
  readonly #waiters = new Map<string, Waiter>();

  /** Waits for the decision on `id`; resolves "aborted" when `signal` aborts first. */
  wait(agentId: string, id: string, signal: AbortSignal): Promise<Decision | "aborted"> {
    return new Promise((resolve) => {
      const done = (d: Decision | "aborted") => {
        this.#waiters.delete(id);
        signal.removeEventListener("abort", onAbort);
        resolve(d);
      };
      const onAbort = () => done("aborted");
      if (signal.aborted) return done("aborted");
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.set(id, { agentId, resolve: done });
    });
  }

  /** Delivers a decision; false when no Run of this Agent waits on `id`. */
  decide(agentId: string, id: string, d: Decision): boolean {
    const w = this.#waiters.get(id);
    if (!w || w.agentId !== agentId) return false;
    w.resolve(d);
    return true;
  }

  get waiting(): number {
    return this.#waiters.size;
  }
}
