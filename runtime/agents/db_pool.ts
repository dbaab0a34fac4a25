/**
 * AgentDbPool: the one owner of every Agent's `state.sqlite` handle [CV-1].
 * Services (conversations, runs, events) ask the pool for a handle instead of
 * opening the file themselves, so a delete or an upgrade can close the handle
 * in one place. Each open goes through `openDatabase`, which re-checks file
 * modes and applies the embedded agent-state migrations.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { AppError } from "../errors.ts";
import { agentDataRel } from "../home.ts";
import { type DatabaseSync, openDatabase } from "../store/sqlite.ts";

export interface AgentDbPool {
  /**
   * The open handle of an Agent's state database, opening it on first use.
   * `create` (default false) creates a missing file; otherwise a missing file
   * throws `database_unsafe`. Callers must have checked the registry first.
   */
  get(agentId: string, opts?: { create?: boolean }): DatabaseSync;
  /** Closes the Agent's handle if open (before delete, or to re-open after upgrade). */
  close(agentId: string): void;
  /**
   * [AG-5] Closes the Agent's handle and refuses every later `get` with
   * agent_unavailable, so no caller can reach a broken Agent's files by
   * skipping the registry check; `available` lifts it.
   */
  unavailable(agentId: string): void;
  available(agentId: string): void;
  /** Whether a handle is currently open (for tests and diagnostics). */
  isOpen(agentId: string): boolean;
  closeAll(): void;
}

export function stateDbRel(agentId: string): string {
  return `${agentDataRel(agentId)}/state.sqlite`;
}

export function createAgentDbPool(root: string): AgentDbPool {
  const open = new Map<string, DatabaseSync>();
  const refused = new Set<string>();
  return {
    get(agentId, opts = {}) {
      if (refused.has(agentId)) throw new AppError("agent_unavailable");
      const existing = open.get(agentId);
      if (existing) return existing;
      const db = openDatabase({
        root,
        relative: stateDbRel(agentId),
        migrations: AGENT_MIGRATIONS,
        create: opts.create ?? false,
      });
      open.set(agentId, db);
      return db;
    },
    close(agentId) {
      const db = open.get(agentId);
      if (!db) return;
      open.delete(agentId);
      db.close();
    },
    unavailable(agentId) {
      refused.add(agentId);
      this.close(agentId);
    },
    available(agentId) {
      refused.delete(agentId);
    },
    isOpen(agentId) {
      return open.has(agentId);
    },
    closeAll() {
      for (const [id, db] of open) {
        open.delete(id);
        db.close();
      }
    },
  };
}
