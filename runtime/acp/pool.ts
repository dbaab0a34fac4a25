/**
 * Runner processes kept between Turns, one per Conversation [LC-6].
 *
 * What this file enforces: a process serves one Turn at a time (taken out of
 * the pool while in use); an idle process is reaped after ACP_IDLE_MS, after
 * ACP_SESSIONS_PER_PROCESS_MAX sessions, when it died, and when more than
 * ACP_PROCESSES_MAX are idle (oldest first); an Agent's delete or upgrade and
 * the server's shutdown reap its processes. A process that faulted (crash,
 * protocol error, flood, cancel) is never put back.
 */
import { ACP_IDLE_MS, ACP_PROCESSES_MAX, ACP_SESSIONS_PER_PROCESS_MAX } from "../limits.ts";
import type { RunnerProcess } from "./process.ts";

interface Idle {
  proc: RunnerProcess;
  timer: ReturnType<typeof setTimeout>;
}

export class RunnerPool {
  readonly #idle = new Map<string, Idle>();
  readonly #busy = new Set<RunnerProcess>();

  constructor(private readonly graceMs: number, private readonly idleMs = ACP_IDLE_MS) {}

  static key(agentId: string, conversationId: string, runner: string): string {
    return `${agentId}/${conversationId}/${runner}`;
  }

  /** The idle process of this key if it is still usable (taken out of the pool). */
  take(key: string): RunnerProcess | null {
    const i = this.#idle.get(key);
    if (!i) return null;
    this.#idle.delete(key);
    clearTimeout(i.timer);
    if (!i.proc.alive || i.proc.sessions >= ACP_SESSIONS_PER_PROCESS_MAX) {
      void i.proc.reap(this.graceMs);
      return null;
    }
    this.#busy.add(i.proc);
    return i.proc;
  }

  /** Marks a freshly started process as in use. */
  use(proc: RunnerProcess): void {
    this.#busy.add(proc);
  }

  /** Ends a Turn's use: a healthy process goes back idle; any other is reaped (awaited). */
  async release(key: string, proc: RunnerProcess, healthy: boolean): Promise<void> {
    this.#busy.delete(proc);
    proc.detach();
    if (!healthy || !proc.alive || proc.sessions >= ACP_SESSIONS_PER_PROCESS_MAX) {
      await proc.reap(this.graceMs);
      return;
    }
    const old = this.#idle.get(key);
    if (old) {
      clearTimeout(old.timer);
      void old.proc.reap(this.graceMs);
    }
    const timer = setTimeout(() => {
      if (this.#idle.get(key)?.proc !== proc) return;
      this.#idle.delete(key);
      void proc.reap(this.graceMs);
    }, this.idleMs);
    this.#idle.set(key, { proc, timer });
    // An idle process that dies or breaks the protocol is reaped at once, not at its timeout.
    proc.conn.ended.then(() => {
      if (this.#idle.get(key)?.proc !== proc) return;
      this.#idle.delete(key);
      clearTimeout(timer);
      void proc.reap(this.graceMs);
    });
    while (this.#idle.size > ACP_PROCESSES_MAX) {
      const [k, i] = this.#idle.entries().next().value!;
      this.#idle.delete(k);
      clearTimeout(i.timer);
      void i.proc.reap(this.graceMs);
    }
  }

  /** Reaps the idle processes of one Agent (delete, upgrade). */
  async dropAgent(agentId: string): Promise<void> {
    const mine = [...this.#idle.entries()].filter(([k]) => k.startsWith(`${agentId}/`));
    for (const [k, i] of mine) {
      this.#idle.delete(k);
      clearTimeout(i.timer);
    }
    await Promise.all(mine.map(([, i]) => i.proc.reap(this.graceMs)));
  }

  /** Reaps every process, idle and busy (shutdown). */
  async closeAll(): Promise<void> {
    const all = [...[...this.#idle.values()].map((i) => i.proc), ...this.#busy];
    for (const i of this.#idle.values()) clearTimeout(i.timer);
    this.#idle.clear();
    this.#busy.clear();
    await Promise.all(all.map((p) => p.reap(this.graceMs)));
  }

  /** Processes alive under the pool's care (idle + busy). */
  get size(): number {
    return this.#idle.size + this.#busy.size;
  }
}
