/**
 * In-memory count of admitted Runs per Agent, and waiting until an Agent's
 * admissions have all been released (the "drain" of an upgrade or delete).
 * The fence itself is the durable registry state; this only tracks what was
 * admitted before the fence went up.
 */

export interface AdmissionTracker {
  /** Records one admission; the returned release is idempotent. */
  acquire(agentId: string): () => void;
  count(agentId: string): number;
  /** Resolves true once the Agent has no admissions, false after `timeoutMs`. */
  waitDrained(agentId: string, timeoutMs: number): Promise<boolean>;
}

export function createAdmissionTracker(): AdmissionTracker {
  const counts = new Map<string, number>();
  const waiters = new Map<string, Set<() => void>>();

  function notify(agentId: string): void {
    const set = waiters.get(agentId);
    if (!set) return;
    waiters.delete(agentId);
    for (const wake of set) wake();
  }

  return {
    acquire(agentId) {
      counts.set(agentId, (counts.get(agentId) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (counts.get(agentId) ?? 1) - 1;
        if (left > 0) {
          counts.set(agentId, left);
        } else {
          counts.delete(agentId);
          notify(agentId);
        }
      };
    },
    count(agentId) {
      return counts.get(agentId) ?? 0;
    },
    waitDrained(agentId, timeoutMs) {
      if (!counts.has(agentId)) return Promise.resolve(true);
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          waiters.get(agentId)?.delete(wake);
          resolve(false);
        }, timeoutMs);
        let set = waiters.get(agentId);
        if (!set) waiters.set(agentId, set = new Set());
        set.add(wake);
      });
    },
  };
}
