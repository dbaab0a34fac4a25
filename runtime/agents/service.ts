/**
 * Agent registry service [AG-1..4]: create, list, get, rename, upgrade,
 * delete, restart recovery, and the admission fence the Run service uses.
 *
 * Lifecycle (every transition is a durable registry write before its effects):
 *   create : insert `provisioning` → Capsule dirs + state.sqlite + manifest → `active`
 *   upgrade: `active` → `upgrading` (fence, pending_generation = g+1) → cancel and
 *            drain admitted Runs → stage (fresh runtime dir, re-opened/migrated
 *            state.sqlite, instruction file, manifest g+1) → promote (`active`, g+1)
 *   delete : `active` (or a `provisioning` left by a failed create) → `deleting`
 *            (fence) → cancel and drain → close db → remove
 *            data dir → remove runtime dir → residual audit → row removed
 * Recovery converges every half-done transition forward (see `recover`).
 * The system Agent always exists and refuses rename, upgrade and delete.
 *
 * Admission fence (called by the Run service before it starts a Run):
 *   const adm = agents.admit(agentId);   // throws agent_not_found | agent_unavailable | agent_busy
 *   try { … start and run; check agents.isCurrentGeneration(agentId, adm.generation)
 *         before committing generation-bound effects … } finally { adm.release(); }
 * `admit` succeeds only while the Agent is `active`; once upgrade/delete have
 * fenced, no new admission is granted. Upgrade/delete then call
 * `runControl.cancelAgentWork(agentId, reason)` (attached by the Run service
 * with `attachRunControl`) and wait until every admission is released, at most
 * AGENT_DRAIN_TIMEOUT_MS; an upgrade whose drain times out lifts the fence
 * (`agent_busy`), a delete stays fenced and is resumed by a retry or restart.
 * An upgrade whose staging fails also stays fenced and is resumed the same way.
 *
 * [AG-5] Unavailable Agents: `recover` checks every registry row and every
 * Agent's files one Agent at a time (availability.ts); one that fails is held
 * in memory as `unavailable` with a fixed reason and recovery moves on, so no
 * Agent's data can stop start-up. An unavailable Agent is listed (state
 * `unavailable`, `unavailable_reason`), every request that would touch its
 * state is refused with `agent_unavailable` (409), and `delete` removes it:
 * the registry row always, its folders when they can be removed without
 * following a link (a symlinked folder: the link itself). The state is not
 * written to the registry: the next start checks again, so a repaired Agent
 * serves again.
 */
import { escapeName } from "../display_name.ts";
import { AppError } from "../errors.ts";
import { isValidId } from "../path_safety.ts";
import { AGENT_DRAIN_TIMEOUT_MS, AGENTS_MAX, SYSTEM_AGENT_ID } from "../limits.ts";
import type { Logger } from "../log.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import * as reg from "../store/registry_store.ts";
import type { AgentRow } from "../store/registry_store.ts";
import { interruptRunningTurns } from "../store/agent_state_store.ts";
import {
  type CapsuleFs,
  countResidue,
  countResidueOf,
  listCapsuleIds,
  provisionCapsuleDirs,
  readManifestGeneration,
  rebuildRuntimeDir,
  removeAgentTreesForce,
  removeDataDir,
  removeRuntimeDir,
  writeManifest,
} from "./capsule.ts";
import type { AgentDbPool } from "./db_pool.ts";
import { createAdmissionTracker } from "./admission.ts";
import type { FaultInjector } from "./test_fault.ts";
import {
  checkAgentPaths,
  isRemovableRawId,
  reasonOf,
  type UnavailableReason,
  validateRegistryRow,
  viewIdOf,
} from "./availability.ts";
import { errorName } from "../log.ts";

export const SYSTEM_AGENT_NAME = "System Agent";

export interface AgentView {
  id: string;
  name: string;
  /** The registry state, or `unavailable` when start-up found the Agent broken [AG-5]. */
  state: reg.AgentState | "unavailable";
  generation: number;
  is_system: boolean;
  created_at: string;
  updated_at: string;
  /** Why the Agent is unavailable (null when it serves) [AG-5]. */
  unavailable_reason: UnavailableReason | null;
  /** The Agent's default catalog model (null: the catalog default) [MB-14]. */
  default_model_id: string | null;
  /** Reasoning (`think`) for thinking models [MB-12]. */
  reasoning: boolean;
  /** The Agent's own agent-loop bounds (null: the product's 32 / 24 / 900 s) [SB-8]. */
  max_model_calls: number | null;
  max_tool_calls: number | null;
  run_deadline_s: number | null;
  /** The external ACP runner this Agent's Turns run on (null: native) [LC-6]. */
  runner: string | null;
  /** document/extract_text offered to its Runs [LC-4]. */
  documents: boolean;
}

/** An Agent start-up found broken [AG-5]. */
interface UnavailableAgent {
  reason: UnavailableReason;
  /** The row as stored (its id may be malformed). */
  rawId: unknown;
  /** The validated row, or null when the row itself failed validation. */
  row: AgentRow | null;
  view: AgentView;
}

/** Provided by the Run service: stop every Run and Task of an Agent. */
export interface AgentRunControl {
  /** Requests cancellation of all active Runs/Tasks; admissions are released as they end. */
  cancelAgentWork(agentId: string, reason: "upgrade" | "delete"): Promise<void>;
}

export interface AgentAdmission {
  agentId: string;
  generation: number;
  /** Idempotent. Must be called when the admitted Run reaches its terminal state. */
  release(): void;
}

export interface AgentServiceOptions {
  registryDb: DatabaseSync;
  pool: AgentDbPool;
  capsule: CapsuleFs;
  log: Logger;
  faults: FaultInjector;
  /** @default Date.now */
  now?: () => number;
  /** @default AGENT_DRAIN_TIMEOUT_MS */
  drainTimeoutMs?: number;
}

export type AgentService = ReturnType<typeof createAgentService>;

export function toAgentView(row: AgentRow): AgentView {
  return {
    id: row.id,
    // A name the operator reads: hidden characters escaped [OP-1].
    name: escapeName(row.name),
    state: row.state,
    generation: row.generation,
    is_system: row.is_system === 1,
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    unavailable_reason: null,
    default_model_id: row.default_model_id ?? null,
    reasoning: (row.reasoning ?? 1) === 1,
    max_model_calls: row.max_model_calls ?? null,
    max_tool_calls: row.max_tool_calls ?? null,
    run_deadline_s: row.run_deadline_s ?? null,
    runner: row.runner ?? null,
    documents: (row.documents ?? 1) === 1,
  };
}

/** The view of a row that failed validation: only what is safe to show. */
function invalidRowView(raw: Record<string, unknown>, id: string): AgentView {
  const name = typeof raw.name === "string" && raw.name.length >= 1 ? raw.name.slice(0, 256) : "";
  const time = (v: unknown) =>
    new Date(typeof v === "number" && Math.abs(v) <= 8.64e15 ? v : 0).toISOString();
  const generation = raw.generation;
  return {
    id,
    name: name ? escapeName(name) : "(invalid registry row)",
    state: "unavailable",
    generation: typeof generation === "number" && Number.isSafeInteger(generation) ? generation : 0,
    is_system: false,
    created_at: time(raw.created_at),
    updated_at: time(raw.updated_at),
    unavailable_reason: "registry_row_invalid",
    default_model_id: null,
    reasoning: true,
    max_model_calls: null,
    max_tool_calls: null,
    run_deadline_s: null,
    runner: null,
    documents: false,
  };
}

export function createAgentService(opts: AgentServiceOptions) {
  const db = opts.registryDb;
  const now = opts.now ?? Date.now;
  const drainTimeoutMs = opts.drainTimeoutMs ?? AGENT_DRAIN_TIMEOUT_MS;
  const admissions = createAdmissionTracker();
  /** Agents whose upgrade is running in this process (a fenced row without one is resumable). */
  const upgradesInFlight = new Set<string>();
  let runControl: AgentRunControl | null = null;
  /** [AG-5] Agents start-up found broken, by the id the API names them with. */
  const unavailable = new Map<string, UnavailableAgent>();

  function requireRow(id: string): AgentRow {
    if (unavailable.has(id)) throw new AppError("agent_unavailable");
    const row = reg.getAgent(db, id);
    if (!row) throw new AppError("agent_not_found");
    return row;
  }

  function markUnavailable(
    viewId: string,
    reason: UnavailableReason,
    rawId: unknown,
    row: AgentRow | null,
    raw: Record<string, unknown>,
    err?: unknown,
  ): void {
    // The pool refuses it too (a row with a valid id but invalid fields included).
    if (isValidId(rawId)) opts.pool.unavailable(rawId);
    const view = row
      ? { ...toAgentView(row), state: "unavailable" as const, unavailable_reason: reason }
      : invalidRowView(raw, viewId);
    unavailable.set(viewId, { reason, rawId, row, view });
    opts.log.error("agent.unavailable", {
      agent: viewId,
      reason,
      ...(err instanceof Error
        ? {
          error: err instanceof AppError ? err.code : err.name,
          detail: err.message.slice(0, 300),
        }
        : {}),
    });
  }

  /** Removes what can safely be removed; a refusal leaves residue, never an exception. */
  function removeTreesLeavingResidue(component: string): number {
    try {
      removeAgentTreesForce(opts.capsule, component);
    } catch (err) {
      if (!(err instanceof AppError) && !(err instanceof Deno.errors.PermissionDenied)) throw err;
      opts.log.warn("agent.delete_unsafe_left", {
        agent: component.slice(0, 36),
        error: err instanceof AppError ? err.code : err.name,
      });
    }
    return countResidueOf(opts.capsule, component);
  }

  /** Removes what can be removed of an unavailable Agent [AG-5]; returns the residue count. */
  function purgeUnavailable(viewId: string, entry: UnavailableAgent): number {
    let residue = 0;
    if (entry.row) {
      const id = entry.row.id;
      if (!reg.fenceUnavailableForDelete(db, id, now())) throw new AppError("agent_not_found");
      residue = removeTreesLeavingResidue(id);
      reg.finishUnavailableDelete(db, id, residue, now());
    } else {
      // A malformed id names no path, except one that is a single safe component.
      if (isRemovableRawId(entry.rawId)) residue = removeTreesLeavingResidue(entry.rawId);
      reg.deleteInvalidRow(db, entry.rawId);
    }
    unavailable.delete(viewId);
    if (isValidId(entry.rawId)) opts.pool.available(entry.rawId);
    opts.log.info("agent.deleted", { agent: viewId, unavailable: entry.reason, residue });
    return residue;
  }

  function provision(id: string, generation: number): void {
    provisionCapsuleDirs(opts.capsule, id);
    const state = opts.pool.get(id, { create: true });
    interruptRunningTurns(state, now());
    if (readManifestGeneration(opts.capsule, id) !== generation) {
      writeManifest(opts.capsule, id, generation);
    }
  }

  function stage(id: string, generation: number): void {
    opts.pool.close(id);
    rebuildRuntimeDir(opts.capsule, id);
    provision(id, generation);
  }

  function purge(id: string): void {
    opts.pool.close(id);
    removeDataDir(opts.capsule, id);
    opts.faults.hit("agent.delete.after_remove_data");
    removeRuntimeDir(opts.capsule, id);
    const residue = countResidue(opts.capsule, id);
    if (!reg.finishDelete(db, id, residue, now())) {
      opts.log.error("agent.delete_residue", { agent: id, residue });
      throw new AppError("internal_error", "delete left residue");
    }
    opts.log.info("agent.deleted", { agent: id });
  }

  /**
   * Cancels the Agent's work and waits until every admission is released. The
   * whole wait (the Run service's cancel included) is bounded by drainTimeoutMs:
   * a Run that never finishes cannot hold the fenced operation open.
   */
  async function drain(id: string, reason: "upgrade" | "delete"): Promise<boolean> {
    const deadline = performance.now() + drainTimeoutMs;
    if (runControl) {
      const cancelling = runControl.cancelAgentWork(id, reason);
      // A cancel that fails after the wait gave up is still reported, never dropped.
      cancelling.catch((err: unknown) =>
        opts.log.error("agent.cancel_failed", {
          agent: id,
          error: errorName(err),
        })
      );
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<boolean>((r) =>
        timer = setTimeout(() => r(true), drainTimeoutMs)
      );
      try {
        if (await Promise.race([cancelling.then(() => false), timedOut])) return false;
      } finally {
        clearTimeout(timer);
      }
    }
    return await admissions.waitDrained(id, Math.max(0, deadline - performance.now()));
  }

  function createRow(id: string, name: string, isSystem: boolean): AgentRow {
    if (!reg.insertProvisioningAgent(db, { id, name, isSystem, now: now() }, AGENTS_MAX)) {
      throw new AppError("agent_limit");
    }
    opts.faults.hit("agent.create.after_insert");
    provision(id, 1);
    opts.faults.hit("agent.create.after_provisioning");
    reg.markActive(db, id, now());
    opts.log.info("agent.created", { agent: id });
    return requireRow(id);
  }

  const service = {
    pool: opts.pool,

    /** Every Agent, the unavailable ones included (marked) [AG-5]. */
    list(): AgentView[] {
      const out: AgentView[] = [];
      for (const raw of reg.listAgentRowsRaw(db)) {
        const row = validateRegistryRow(raw);
        const viewId = row ? row.id : viewIdOf(raw.id);
        const broken = unavailable.get(viewId);
        if (broken) out.push(broken.view);
        else if (row) out.push(toAgentView(row));
        // A row that became invalid after start-up is not served; the next start marks it.
      }
      return out;
    },

    get(id: string): AgentView {
      const broken = unavailable.get(id);
      if (broken) return broken.view;
      return toAgentView(requireRow(id));
    },

    /** The registry row, when the Agent's state may be read or written (active/upgrading). */
    requireUsable(id: string): AgentRow {
      const row = requireRow(id);
      if (row.state === "provisioning") throw new AppError("agent_not_found");
      if (row.state === "deleting") throw new AppError("agent_busy");
      return row;
    },

    create(name: string): AgentView {
      return toAgentView(createRow(crypto.randomUUID(), name, false));
    },

    rename(id: string, name: string): AgentView {
      const row = requireRow(id);
      if (row.is_system === 1) throw new AppError("agent_protected");
      if (!reg.renameAgent(db, id, name, now())) throw new AppError("agent_busy");
      return toAgentView(requireRow(id));
    },

    /**
     * PATCH [MB-12, MB-14]: name and/or model settings in one write. The system
     * Agent keeps its name but takes model settings. The caller validated the model id.
     */
    updateSettings(id: string, patch: reg.AgentSettingsPatch): AgentView {
      const row = requireRow(id);
      if (patch.name !== undefined && row.is_system === 1) throw new AppError("agent_protected");
      if (!reg.updateAgentSettings(db, id, patch, now())) throw new AppError("agent_busy");
      return toAgentView(requireRow(id));
    },

    async upgrade(id: string): Promise<AgentView> {
      const row = requireRow(id);
      if (row.is_system === 1) throw new AppError("agent_protected");
      // An upgrade left fenced by a failed staging (and not running now) is resumed.
      const resume = row.state === "upgrading" && !upgradesInFlight.has(id);
      const staged = resume ? row.pending_generation : reg.fenceForUpgrade(db, id, now());
      if (staged === null) throw new AppError("agent_busy");
      upgradesInFlight.add(id);
      try {
        opts.faults.hit("agent.upgrade.after_fence");
        if (!(await drain(id, "upgrade"))) {
          reg.abortUpgrade(db, id, now());
          throw new AppError("agent_busy", "upgrade drain timed out");
        }
        stage(id, staged);
        opts.faults.hit("agent.upgrade.after_stage");
        if (!reg.promoteUpgrade(db, id, staged, now())) throw new AppError("agent_busy");
      } finally {
        upgradesInFlight.delete(id);
      }
      opts.log.info("agent.upgraded", { agent: id, generation: staged });
      return toAgentView(requireRow(id));
    },

    async delete(id: string): Promise<void> {
      const broken = unavailable.get(id);
      if (broken) {
        // [AG-5] Nothing can be admitted for an unavailable Agent: no drain, just remove.
        // [AG-2] The system Agent's id is never deleted, whatever its row holds.
        if (id === SYSTEM_AGENT_ID) throw new AppError("agent_protected");
        purgeUnavailable(id, broken);
        // An invalid row may have held the system flag and kept the system Agent from being
        // created at start-up: with the row gone, it is created now.
        if (!reg.getAgent(db, SYSTEM_AGENT_ID)) ensureSystemAgent();
        return;
      }
      const row = requireRow(id);
      if (row.is_system === 1) throw new AppError("agent_protected");
      // A delete already fenced (a timed-out drain) is resumed, not refused.
      if (row.state !== "deleting" && !reg.fenceForDelete(db, id, now())) {
        throw new AppError("agent_busy");
      }
      opts.faults.hit("agent.delete.after_fence");
      if (!(await drain(id, "delete"))) throw new AppError("agent_busy", "delete drain timed out");
      // A concurrent delete of the same Agent (a retry while this one drained) may have
      // purged it meanwhile: the Agent is gone, which is not a residue.
      if (reg.getAgent(db, id)?.state !== "deleting") throw new AppError("agent_not_found");
      purge(id);
    },

    /**
     * [AG-5] A later start-up step (e.g. Run recovery) failed on this Agent's data:
     * it becomes unavailable with the reason for `err`, like a failure in `recover`.
     */
    markBroken(agentId: string, err: unknown): void {
      const raw = reg.listAgentRowsRaw(db).find((r) => r.id === agentId);
      const row = raw ? validateRegistryRow(raw) : null;
      if (!raw || !row || unavailable.has(agentId)) return;
      markUnavailable(agentId, reasonOf(err), agentId, row, raw, err);
    },

    /** The admission fence: see the file header. */
    admit(agentId: string): AgentAdmission {
      const row = requireRow(agentId);
      if (row.state !== "active") throw new AppError("agent_busy");
      const release = admissions.acquire(agentId);
      return { agentId, generation: row.generation, release };
    },

    /** Whether `generation` is still the Agent's active generation (false once fenced). */
    isCurrentGeneration(agentId: string, generation: number): boolean {
      const row = reg.getAgent(db, agentId);
      return row !== null && row.state === "active" && row.generation === generation;
    },

    /** Number of unreleased admissions (for tests and diagnostics). */
    activeAdmissions(agentId: string): number {
      return admissions.count(agentId);
    },

    attachRunControl(ctrl: AgentRunControl): void {
      runControl = ctrl;
    },

    /**
     * Startup convergence, before the server accepts requests. No Run survives
     * a restart, so drains are trivially complete; every half-done transition is
     * completed forward: provisioning → active, upgrading → staged + promoted,
     * deleting → purged. Active Agents get missing Capsule parts added (never
     * overwritten) and their running Turns interrupted [CV-6]. Capsule
     * directories without a registry row are reported, never deleted silently.
     */
    recover(): void {
      for (const u of unavailable.values()) if (isValidId(u.rawId)) opts.pool.available(u.rawId);
      unavailable.clear();
      if (!reg.getAgent(db, SYSTEM_AGENT_ID)) ensureSystemAgent();
      const known = new Set<string>();
      for (const raw of reg.listAgentRowsRaw(db)) {
        if (typeof raw.id === "string") known.add(raw.id);
        const row = validateRegistryRow(raw);
        if (!row) {
          markUnavailable(viewIdOf(raw.id), "registry_row_invalid", raw.id, null, raw);
          continue;
        }
        // [AG-5] One Agent at a time: whatever its files do, the others still recover.
        const pathReason = checkAgentPaths(opts.capsule.root, row.id);
        if (pathReason) {
          markUnavailable(row.id, pathReason, row.id, row, raw);
          continue;
        }
        try {
          recoverRow(row);
          if (row.state === "deleting" && row.is_system !== 1) known.delete(row.id);
        } catch (err) {
          markUnavailable(row.id, reasonOf(err), row.id, row, raw, err);
        }
      }
      for (const id of listCapsuleIds(opts.capsule)) {
        if (known.has(id)) continue;
        opts.log.warn("agent.orphan_capsule", { dir: id.slice(0, 64) });
        if (id.length === 36) reg.appendAudit(db, id, "orphan_found", now());
      }
    },
  };
  return service;

  /** Creates the missing system Agent; a failure is logged (the next start retries). */
  function ensureSystemAgent(): void {
    try {
      createRow(SYSTEM_AGENT_ID, SYSTEM_AGENT_NAME, true);
    } catch (err) {
      // At start-up its row (if inserted) is then recovered, or marked unavailable.
      opts.log.error("agent.system_create_failed", { error: failureName(err) });
    }
  }

  /** Converges one valid row forward (see `recover`); throws when its files are broken. */
  function recoverRow(row: AgentRow): void {
    const t = now();
    switch (row.state) {
      case "provisioning":
        provision(row.id, row.generation);
        reg.markActive(db, row.id, t);
        reg.appendAudit(db, row.id, "recovered", t, { generation: row.generation });
        break;
      case "upgrading": {
        const staged = row.pending_generation ?? row.generation + 1;
        stage(row.id, staged);
        reg.promoteUpgrade(db, row.id, staged, t);
        reg.appendAudit(db, row.id, "recovered", t, { generation: staged });
        break;
      }
      case "deleting":
        if (row.is_system === 1) {
          // [AG-2] The system Agent is never purged, whatever the registry says.
          reg.unfenceSystemAgent(db, row.id, t);
          provision(row.id, row.generation);
          opts.log.warn("agent.system_unfenced", { agent: row.id });
          break;
        }
        purge(row.id);
        break;
      case "active":
        provision(row.id, row.generation);
        break;
      default: {
        const never: never = row.state;
        throw new Error(`unknown agent state ${never}`);
      }
    }
    if (row.state !== "active") {
      opts.log.info("agent.recovered", { agent: row.id, from: row.state });
    }
  }
}

function failureName(err: unknown): string {
  if (err instanceof AppError) return err.code;
  return errorName(err);
}
