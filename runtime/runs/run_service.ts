/**
 * The Run service: admission, execution, cancel and restart recovery of Runs
 * [CV-2, CV-5, CV-6, SB-1, EV-1, EV-2, TL-2].
 *
 * What this file enforces:
 * - admission: message ≤ 8192 UTF-8 bytes (413), ≤ 4 active Runs (503
 *   runs_busy), the Agent's admission fence (agent_busy), one active Run per
 *   Conversation (409 conversation_busy — checked in memory, then by the
 *   revision CAS and the `runs_one_active`/`turns_one_running` unique indexes
 *   inside the transaction), a qualified model, a readable instruction file,
 *   and context admission of the first call (413 model_context_limit);
 * - the Turn, the Run row and `run.started` are written in ONE transaction;
 * - the Worker is spawned confined and attested (supervisor) before the turn
 *   frame; no unsandboxed fallback exists;
 * - cancel (202) aborts the model stream and sends `cancel` to the Worker; a
 *   Worker that does not finish within the grace is killed; the 240 s deadline
 *   does the same with `model_turn_deadline`;
 * - recovery at start: every `running` Run gets a `run.failed/run_interrupted`
 *   terminal and becomes `interrupted`, dispatched operations become
 *   `outcome_unknown` (never re-dispatched), usage leftovers `incomplete`, and
 *   every Run root is removed.
 */
import type { AgentService } from "../agents/service.ts";
import { admit } from "../context/admission.ts";
import { compileContextPlan, type ContextPlan, type HistoryBundle } from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { RunJournal, validateJournal, writeStaged } from "../events/journal.ts";
import { LiveHub } from "../events/live_hub.ts";
import { agentDataRel, agentRuntimeRel, type HomeLayout } from "../home.ts";
import {
  ACTIVE_RUNS_TOTAL_MAX,
  LIVE_RUNS_IN_MEMORY,
  RUN_DEADLINE_MS,
  SHUTDOWN_GRACE_MS,
  USER_MESSAGE_MAX_BYTES,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { canonicalJson, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import {
  parseWorkerFrame,
  type TurnRuntimeSnapshot,
  type WorkerToControl,
} from "../protocol/worker_frames.ts";
import {
  beginTurnInTransaction,
  finishTurnInTransaction,
  getConversation,
  pageTurns,
} from "../store/agent_state_store.ts";
import {
  expirePermissions,
  getRun,
  insertRun,
  listEvents,
  operationsOutcomeUnknown,
  pruneToTombstone,
  runningRuns,
  setRunTerminal,
  usageCloseRun,
} from "../store/run_store.ts";
import { type DatabaseSync, transaction } from "../store/sqlite.ts";
import { sealCatalog, type ToolCatalog } from "../tools/catalog.ts";
import { type EffectiveToolSet, resolveToolSet } from "../tools/policy.ts";
import { spawnConfinedWorker, type WorkerHandle } from "../worker/supervisor.ts";
import { readInstructionFile } from "../workspace/instruction_file.ts";
import { Approvals } from "./approvals.ts";
import { RunRecorder, type Terminal } from "./run_recorder.ts";
import type { ApprovalContext } from "./tool_call.ts";
import { driveTurn } from "./turn_driver.ts";

/** Completed Turns read for history per Run (collapse keeps what fits). */
export const HISTORY_TURNS_READ_MAX = 256;
/** Grace for a Worker to report `cancelled` before it is killed. */
export const CANCEL_GRACE_MS = 2000;
export const PROTOCOL_FEATURES = ["ipc-v2", "tool-refs", "finalize-marker", "approvals"];
/** exec/run needs the runner sandbox [TL-7], which this build does not dispatch to: deny it. */
const NO_RUNNER_RULES = [{ tool_id: "exec/run", decision: "deny" as const }];

type AbortReason = "user" | "shutdown" | "deadline" | "agent_upgrade" | "agent_delete";

export type SpawnWorker = (runRoot: string) => Promise<WorkerHandle<WorkerToControl>>;

export interface RunServiceOptions {
  home: HomeLayout;
  agents: AgentService;
  broker: ModelBroker;
  log: Logger;
  /** @default the built-in sealed catalog */
  catalog?: ToolCatalog;
  /** @default spawnConfinedWorker with the production worker command */
  spawnWorker?: SpawnWorker;
  /** @default Date.now */
  now?: () => number;
  /** @default RUN_DEADLINE_MS */
  deadlineMs?: number;
}

interface ActiveRun {
  agentId: string;
  conversationId: string;
  runId: string;
  turnId: string;
  controller: AbortController;
  reason: AbortReason | null;
  worker: WorkerHandle<WorkerToControl> | null;
  done: Promise<void>;
}

export interface SubmitBody {
  message: string;
  model_id?: string;
  compact?: boolean;
}

export type RunService = ReturnType<typeof createRunService>;

export function createRunService(opts: RunServiceOptions) {
  const now = opts.now ?? Date.now;
  const catalog = opts.catalog ?? sealCatalog();
  const deadlineMs = opts.deadlineMs ?? RUN_DEADLINE_MS;
  const hub = new LiveHub();
  const approvals = new Approvals();
  const active = new Map<string, ActiveRun>();
  /** Plans of recent Runs for inspection [CX-4]; bounded like the live hub. */
  const plans = new Map<string, ContextPlan>();
  /** Every Run not yet fully cleaned up (Worker reaped, Run root removed). */
  const pendingExits = new Set<Promise<void>>();
  let shuttingDown = false;
  const spawnWorker: SpawnWorker = opts.spawnWorker ?? ((runRoot) =>
    spawnConfinedWorker({
      runRoot,
      deadlineMs: deadlineMs + 10_000,
      log: opts.log,
      parseFrame: parseWorkerFrame,
    }));

  function stateDb(agentId: string): DatabaseSync {
    opts.agents.requireUsable(agentId);
    return opts.agents.pool.get(agentId);
  }

  function workspaceDir(agentId: string): string {
    return `${opts.home.root}/${agentDataRel(agentId)}/workspace`;
  }

  function rememberPlan(runId: string, plan: ContextPlan): void {
    plans.set(runId, plan);
    while (plans.size > LIVE_RUNS_IN_MEMORY) plans.delete(plans.keys().next().value!);
  }

  function defaultModelId(): string {
    const p = opts.broker.publicProfiles();
    return (p.find((x) => x.default) ?? p[0]).id;
  }

  function history(db: DatabaseSync, conversationId: string): HistoryBundle[] {
    // Only completed Turns with a committed answer enter history [CV-5].
    return pageTurns(db, conversationId, null, HISTORY_TURNS_READ_MAX)
      .slice(0, HISTORY_TURNS_READ_MAX)
      .filter((t) => t.state === "completed" && typeof t.assistant_message === "string")
      .reverse()
      .map((t) => ({ turnId: t.id, user: t.user_message, assistant: t.assistant_message! }));
  }

  function toolsetFor(toolsCapable: boolean): EffectiveToolSet {
    const rules = toolsCapable
      ? NO_RUNNER_RULES
      : catalog.specs.map((s) => ({ tool_id: s.id, decision: "deny" as const }));
    // Browser Runs are interactive: `ask` tools wait for the operator's approval [TL-2].
    return resolveToolSet({ catalog, rules, interactive: true, id: crypto.randomUUID() });
  }

  function usageScope(modelId: string, toolset: EffectiveToolSet): string {
    return domainDigest(
      "agent-builder/usage-scope/v1",
      canonicalJson({ model: modelId, toolset: toolset.digest, renderer: "v1" }),
    );
  }

  /** Inputs shared by a Run and the NextTurnProjection. */
  async function prepare(agentId: string, conversationId: string, modelId: string) {
    const db = stateDb(agentId);
    const conv = getConversation(db, conversationId);
    if (!conv) throw new AppError("conversation_not_found");
    const prof = await opts.broker.profile(modelId);
    if (!prof.ok) throw new AppError(prof.code);
    const instr = readInstructionFile(workspaceDir(agentId));
    if (!instr.ok) throw new AppError(instr.code, "instruction file refused");
    const toolset = toolsetFor(prof.profile.capabilities.tools);
    return {
      db,
      conv,
      profile: prof.profile,
      toolset,
      instructions: instr.present ? instr.text : null,
      history: history(db, conversationId),
    };
  }

  async function submit(agentId: string, conversationId: string, body: SubmitBody) {
    if (utf8Bytes(body.message) > USER_MESSAGE_MAX_BYTES) throw new AppError("message_too_large");
    if (body.message.length === 0) throw new AppError("schema_violation", "empty message");
    if (shuttingDown) throw new AppError("shutting_down");
    if (active.size >= ACTIVE_RUNS_TOTAL_MAX) throw new AppError("runs_busy");
    for (const r of active.values()) {
      if (r.agentId === agentId && r.conversationId === conversationId) {
        throw new AppError("conversation_busy");
      }
    }
    const admission = opts.agents.admit(agentId);
    let started = false;
    try {
      const modelId = body.model_id ?? defaultModelId();
      const p = await prepare(agentId, conversationId, modelId);
      const runId = crypto.randomUUID();
      const turnId = crypto.randomUUID();
      const plan = compileContextPlan({
        planId: crypto.randomUUID(),
        instructions: p.instructions,
        now: new Date(now()),
        history: p.history,
        userMessage: body.message,
        toolset: p.toolset,
        window: p.profile.window,
        budget: p.profile.budget,
        modelId,
        compact: body.compact ?? false,
      });
      if (!admit(plan, { exchanges: [], narrowed: false }).ok) {
        throw new AppError("model_context_limit");
      }
      // Re-checked after the awaits above: a concurrent submit may have won meanwhile.
      if (active.size >= ACTIVE_RUNS_TOTAL_MAX) throw new AppError("runs_busy");
      for (const r of active.values()) {
        if (r.agentId === agentId && r.conversationId === conversationId) {
          throw new AppError("conversation_busy");
        }
      }
      const ids = { run_id: runId, agent_id: agentId, conversation_id: conversationId };
      const journal = new RunJournal(ids, now);
      const startedPayload = {
        turn_id: turnId,
        model_id: modelId,
        plan_id: plan.id,
        plan_digest: plan.digest,
        toolset_digest: p.toolset.digest,
        tool_ids: p.toolset.tools.map((t) => t.spec.id),
        section_count: plan.sections.length,
        history_count: plan.history.length,
        window: plan.window,
        budget: plan.budget,
        protocol_features: PROTOCOL_FEATURES,
      };
      const staged = journal.stage("run.started", startedPayload);
      const at = now();
      try {
        transaction(p.db, () => {
          const t = beginTurnInTransaction(p.db, {
            conversationId,
            expectedRevision: p.conv.revision,
            turnId,
            runId,
            userMessage: body.message,
            now: at,
          });
          if (t.result === "missing") throw new AppError("conversation_not_found");
          if (t.result !== "ok") throw new AppError("conversation_busy");
          insertRun(p.db, {
            id: runId,
            conversation_id: conversationId,
            turn_id: turnId,
            model_id: modelId,
            started_summary: canonicalJson(startedPayload),
            last_digest: journal.head,
            created_at: at,
          });
          writeStaged(p.db, journal, [staged]);
        });
      } catch (err) {
        if (err instanceof AppError) throw err;
        if (err instanceof Error && /UNIQUE constraint failed/.test(err.message)) {
          throw new AppError("conversation_busy", "unique index");
        }
        throw err;
      }
      journal.accept([staged]);
      rememberPlan(runId, plan);
      const live = hub.create(runId, agentId);
      live.push(staged.envelope);
      const run: ActiveRun = {
        agentId,
        conversationId,
        runId,
        turnId,
        controller: new AbortController(),
        reason: null,
        worker: null,
        done: Promise.resolve(),
      };
      active.set(runId, run);
      started = true;
      const recorder = new RunRecorder({
        db: p.db,
        journal,
        live,
        turnId,
        log: opts.log,
        now,
        startedAt: at,
      });
      const snapshot: TurnRuntimeSnapshot = {
        run_id: runId,
        model_id: modelId,
        plan: { id: plan.id, digest: plan.digest },
        toolset: {
          id: p.toolset.id,
          digest: p.toolset.digest,
          tool_ids: p.toolset.tools.map((t) => t.spec.id),
        },
        model_calls_max: WORKER_MODEL_CALLS_MAX,
        tool_calls_max: WORKER_TOOL_CALLS_MAX,
        deadline_ms: RUN_DEADLINE_MS,
      };
      run.done = execute(run, recorder, {
        db: p.db,
        plan,
        snapshot,
        scope: usageScope(modelId, p.toolset),
        deadline: at + deadlineMs,
        approvals: {
          approvals,
          agentId,
          generation: admission.generation,
          generationCurrent: () => opts.agents.isCurrentGeneration(agentId, admission.generation),
          receipts: new Map(),
        },
      }).finally(() => {
        active.delete(runId);
        admission.release();
        pendingExits.delete(run.done);
      });
      pendingExits.add(run.done);
      return { turn_id: turnId, run_id: runId };
    } finally {
      if (!started) admission.release();
    }
  }

  async function execute(
    run: ActiveRun,
    recorder: RunRecorder,
    x: {
      db: DatabaseSync;
      plan: ContextPlan;
      snapshot: TurnRuntimeSnapshot;
      scope: string;
      deadline: number;
      approvals: ApprovalContext;
    },
  ): Promise<void> {
    const rootRel = `${agentRuntimeRel(run.agentId)}/runs/${run.runId}`;
    const runRoot = `${opts.home.root}/${rootRel}`;
    const timer = setTimeout(() => abort(run, "deadline"), Math.max(0, x.deadline - now()));
    let terminal: Terminal;
    try {
      ensurePrivateDir(opts.home.root, rootRel);
      const worker = await spawnWorker(runRoot);
      run.worker = worker;
      if (run.controller.signal.aborted) {
        await worker.send({ v: 2, type: "cancel", reason: cancelFrameReason(run.reason) });
      }
      terminal = await driveTurn({
        // A Worker that already exited (cancel, crash) shows up as end of input on receive.
        send: (f) =>
          worker.send(f).catch((err) => {
            if (!(err instanceof Deno.errors.BrokenPipe)) throw err;
          }),
        receive: (ms) => worker.receive(ms),
      }, {
        snapshot: x.snapshot,
        plan: x.plan,
        workspaceDir: workspaceDir(run.agentId),
        broker: opts.broker,
        recorder,
        db: x.db,
        log: opts.log,
        now,
        deadline: x.deadline,
        signal: run.controller.signal,
        abortReason: () => run.reason,
        scope: x.scope,
        approvals: x.approvals,
      });
    } catch (err) {
      if (err instanceof AppError) {
        const stage = err.code.startsWith("sandbox") ? "sandbox" : "worker";
        terminal = run.reason && run.reason !== "deadline"
          ? { state: "cancelled", reason: run.reason }
          : { state: "failed", code: err.code === "run_event_limit" ? err.code : err.code, stage };
      } else {
        opts.log.error("run.execute_failed", {
          kind: err instanceof Error ? err.name : typeof err,
        });
        terminal = { state: "failed", code: "internal_error", stage: "worker" };
      }
    } finally {
      clearTimeout(timer);
    }
    recorder.finish(terminal);
    // The Run is no longer active once its terminal is durable; the Worker's
    // exit and Run-root removal still hold the Agent's admission until done.
    active.delete(run.runId);
    const w = run.worker;
    if (w) await w.cancel(CANCEL_GRACE_MS);
    else await removeRunRoot(runRoot);
  }

  async function removeRunRoot(path: string): Promise<void> {
    try {
      await Deno.remove(path, { recursive: true });
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }

  function cancelFrameReason(r: AbortReason | null): "user" | "shutdown" | "deadline" {
    return r === "deadline" ? "deadline" : r === "user" ? "user" : "shutdown";
  }

  function abort(run: ActiveRun, reason: AbortReason): void {
    if (run.reason !== null) return;
    run.reason = reason;
    run.controller.abort();
    const w = run.worker;
    if (!w) return;
    w.send({ v: 2, type: "cancel", reason: cancelFrameReason(reason) }).catch((err) => {
      opts.log.warn("run.cancel_send_failed", { kind: err instanceof Error ? err.name : "x" });
    });
    // A Worker that does not report within the grace is killed; the driver then sees EOF.
    setTimeout(() => {
      if (active.has(run.runId)) w.kill("cancelled").catch(() => undefined);
    }, CANCEL_GRACE_MS);
  }

  /** POST …/runs/<run>/cancel: 202 = accepted, not stopped. */
  function cancel(agentId: string, runId: string): { run_id: string; state: "cancelling" } {
    const db = stateDb(agentId);
    const run = active.get(runId);
    if (!run || run.agentId !== agentId) {
      if (!getRun(db, runId)) throw new AppError("run_not_found");
      throw new AppError("run_not_active");
    }
    abort(run, "user");
    return { run_id: runId, state: "cancelling" };
  }

  /** AgentRunControl: cancel every Run of an Agent and wait for them to end. */
  async function cancelAgentWork(agentId: string, reason: "upgrade" | "delete"): Promise<void> {
    const mine = [...active.values()].filter((r) => r.agentId === agentId);
    for (const r of mine) abort(r, reason === "upgrade" ? "agent_upgrade" : "agent_delete");
    await Promise.all(mine.map((r) => r.done));
    hub.dropAgent(agentId);
  }

  /** Stops admission, cancels every Run and waits (bounded) for them to converge [OP-2]. */
  async function shutdown(): Promise<void> {
    shuttingDown = true;
    for (const r of active.values()) abort(r, "shutdown");
    let t: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([...pendingExits]),
      new Promise((res) => (t = setTimeout(res, SHUTDOWN_GRACE_MS))),
    ]);
    clearTimeout(t);
  }

  /** [CV-6] Startup: converge every Run left running by a previous process. */
  function recover(): { interrupted: number; unknownOperations: number } {
    let interrupted = 0;
    let unknown = 0;
    for (const agent of opts.agents.list()) {
      if (agent.state !== "active") continue;
      const db = opts.agents.pool.get(agent.id);
      const at = now();
      for (const run of runningRuns(db)) {
        interrupted++;
        const rows = listEvents(db, run.id);
        const v = validateJournal(run, agent.id, rows);
        const ids = { run_id: run.id, agent_id: agent.id, conversation_id: run.conversation_id };
        transaction(db, () => {
          if (v.ok) {
            const j = RunJournal.restore(ids, rows, now);
            const s = j.stage("run.failed", {
              code: "run_interrupted",
              stage: "recovery",
              retryable: true,
              duration_ms: Math.min(86_400_000, Math.max(0, at - run.created_at)),
            });
            writeStaged(db, j, [s]);
          } else {
            opts.log.warn("run.recovery_invalid_journal", { reason: v.reason });
            pruneToTombstone(
              db,
              run.id,
              canonicalJson({ v: 1, run_id: run.id, state: "interrupted", valid: false }),
            );
          }
          setRunTerminal(db, run.id, "interrupted", "run_interrupted", at);
          // Usually already done by the agents' recovery (interruptRunningTurns); a no-op then.
          finishTurnInTransaction(db, run.turn_id, {
            state: "interrupted",
            code: "run_interrupted",
            stage: "restart",
            retryable: true,
          }, at);
          usageCloseRun(db, run.id, at);
          expirePermissions(db, run.id, at);
        });
      }
      unknown += operationsOutcomeUnknown(db, at);
      const runsRel = `${agentRuntimeRel(agent.id)}/runs`;
      try {
        Deno.removeSync(`${opts.home.root}/${runsRel}`, { recursive: true });
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    if (interrupted > 0 || unknown > 0) {
      opts.log.info("runs.recovered", { interrupted, unknown_operations: unknown });
    }
    return { interrupted, unknownOperations: unknown };
  }

  return {
    hub,
    plans,
    approvals,
    submit,
    cancel,
    cancelAgentWork,
    shutdown,
    recover,
    stateDb,
    prepare,
    usageScope,
    activeCount: () => active.size,
    isActive: (runId: string) => active.has(runId),
    activeRunOf(agentId: string, conversationId: string): string | null {
      for (const r of active.values()) {
        if (r.agentId === agentId && r.conversationId === conversationId) return r.runId;
      }
      return null;
    },
    defaultModelId,
    catalog,
  };
}
