/**
 * The Run service: admission, execution, cancel and restart recovery of Runs
 * [CV-2, CV-5, CV-6, SB-1, EV-1, EV-2, TL-2].
 *
 * What this file enforces:
 * - admission: message ≤ 8192 UTF-8 bytes (413), slash input refused
 *   (`command_invalid`, it belongs to …/commands [SC-1]), ≤ 4 active Runs (503
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
import { isCommandInput } from "../protocol/command_input.ts";
import { admit } from "../context/admission.ts";
import { compileContextPlan, type ContextPlan } from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { LiveHub } from "../events/live_hub.ts";
import { agentRuntimeRel, type HomeLayout } from "../home.ts";
import {
  ACTIVE_RUNS_TOTAL_MAX,
  CONTEXT_PLANS_IN_MEMORY,
  RUN_DEADLINE_MS,
  SHUTDOWN_GRACE_MS,
  USER_MESSAGE_MAX_BYTES,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import {
  parseWorkerFrame,
  type TurnRuntimeSnapshot,
  type WorkerToControl,
} from "../protocol/worker_frames.ts";
import { getRun } from "../store/run_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { sealCatalog, type ToolCatalog } from "../tools/catalog.ts";
import { spawnConfinedWorker, type WorkerHandle } from "../worker/supervisor.ts";
import { Approvals } from "./approvals.ts";
import { recoverRuns } from "./recovery.ts";
import { beginRun, turnSnapshot } from "./run_begin.ts";
import { Preparations } from "./preparation.ts";
import { contextInputsOf, createRunInputs } from "./run_inputs.ts";
import { RunRecorder, type Terminal } from "./run_recorder.ts";
import {
  abortedTerminal,
  type AbortReason,
  cancelFrameReason,
  crashTerminal,
  errorTerminal,
} from "./run_terminal.ts";
import { NO_RUN_TEST_HOOKS, type RunTestHooks } from "./test_hooks.ts";
import type { ApprovalContext } from "./tool_call.ts";
import { driveTurn } from "./turn_driver.ts";

/** Grace for a Worker to report `cancelled` before it is killed. */
export const CANCEL_GRACE_MS = 2000;

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
  /** Test-only hooks (runtime/runs/test_hooks.ts). @default none */
  testHooks?: RunTestHooks;
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
  const hooks = opts.testHooks ?? NO_RUN_TEST_HOOKS;
  const deadlineMs = opts.deadlineMs ?? hooks.runDeadlineMs ?? RUN_DEADLINE_MS;
  const hub = new LiveHub();
  const approvals = new Approvals();
  const preparations = new Preparations(now, hooks.preparationPause);
  const active = new Map<string, ActiveRun>();
  /** Plans of the most recent Runs for inspection [CX-4]; older Runs answer from run.started. */
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

  function rememberPlan(runId: string, plan: ContextPlan): void {
    plans.set(runId, plan);
    while (plans.size > CONTEXT_PLANS_IN_MEMORY) plans.delete(plans.keys().next().value!);
  }

  const inputs = createRunInputs({
    home: opts.home,
    agents: opts.agents,
    broker: opts.broker,
    catalog,
  });
  const { stateDb, workspaceDir, defaultModelId, prepare, usageScope } = inputs;

  /** One active Run per Conversation (409 first, the DB enforces it again), ≤ 4 in all (503). */
  function assertRoomFor(agentId: string, conversationId: string): void {
    if (activeRunOf(agentId, conversationId) !== null) throw new AppError("conversation_busy");
    if (active.size >= ACTIVE_RUNS_TOTAL_MAX) throw new AppError("runs_busy");
  }

  function activeRunOf(agentId: string, conversationId: string): string | null {
    for (const r of active.values()) {
      if (r.agentId === agentId && r.conversationId === conversationId) return r.runId;
    }
    return null;
  }

  async function submit(agentId: string, conversationId: string, body: SubmitBody) {
    if (utf8Bytes(body.message) > USER_MESSAGE_MAX_BYTES) throw new AppError("message_too_large");
    if (body.message.length === 0) throw new AppError("schema_violation", "empty message");
    // [SC-1] Slash input belongs to …/commands: never a Turn, never sent to the model.
    if (isCommandInput(body.message)) throw new AppError("command_invalid", "slash input");
    if (shuttingDown) throw new AppError("shutting_down");
    assertRoomFor(agentId, conversationId);
    const admission = opts.agents.admit(agentId);
    let started = false;
    let op;
    try {
      op = preparations.begin(agentId, conversationId, body.compact ? "compact" : "run");
    } catch (err) {
      admission.release();
      throw err;
    }
    try {
      const modelId = body.model_id ?? defaultModelId();
      await op.enter("reading_inputs");
      const p = await prepare(agentId, conversationId, modelId);
      const runId = crypto.randomUUID();
      const turnId = crypto.randomUUID();
      await op.enter("compiling");
      const plan = compileContextPlan({
        ...contextInputsOf(p, modelId, new Date(now())),
        planId: crypto.randomUUID(),
        userMessage: body.message,
        compact: body.compact ?? false,
      });
      await op.enter("admitting");
      if (!admit(plan, { exchanges: [], narrowed: false }).ok) {
        throw new AppError("model_context_limit");
      }
      // Re-checked after the awaits above: a concurrent submit may have won meanwhile.
      assertRoomFor(agentId, conversationId);
      // An upgrade or delete fenced the Agent while this was preparing: no Run on the old
      // generation (its drain aborts preparations, and this closes the rest of the window).
      if (!opts.agents.isCurrentGeneration(agentId, admission.generation)) {
        throw new AppError("agent_busy");
      }
      // Past this point the preparation cannot be cancelled; the Run's own cancel applies.
      op.commit();
      const { journal, staged, at } = beginRun({
        db: p.db,
        ids: { run_id: runId, agent_id: agentId, conversation_id: conversationId },
        turnId,
        expectedRevision: p.conv.revision,
        message: body.message,
        modelId,
        plan,
        toolset: p.toolset,
        now,
      });
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
        journalFault: hooks.journalFault,
      });
      run.done = execute(run, recorder, {
        db: p.db,
        plan,
        snapshot: turnSnapshot(runId, modelId, plan, p.toolset),
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
    } catch (err) {
      // A preparation aborted by the Agent's upgrade or delete reads as the fence it is.
      const fenced = err instanceof AppError && err.code === "preparation_cancelled" &&
        !opts.agents.isCurrentGeneration(agentId, admission.generation);
      throw fenced ? new AppError("agent_busy", "fenced while preparing") : err;
    } finally {
      op.settle(started ? "committed" : op.signal.aborted ? "cancelled" : "failed");
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
      // Cancelled (or past the deadline) while the Worker was starting: no turn frame at all.
      terminal = run.reason !== null ? abortedTerminal(run.reason) : await driveTurn({
        // A Worker that exited (cancel, crash; the supervisor says `worker_crashed`) shows up
        // as end of input on receive, where the Broker's code still wins [SB-5].
        send: (f) =>
          worker.send(f).catch((err) => {
            if (err instanceof AppError && err.code === "worker_crashed") return;
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
      if (terminal.state === "failed" && terminal.code === "worker_crashed") {
        terminal = await crashTerminal(worker.exited, terminal, CANCEL_GRACE_MS);
      }
    } catch (err) {
      const kind = err instanceof Error ? err.name : typeof err;
      if (!(err instanceof AppError)) opts.log.error("run.execute_failed", { kind });
      terminal = errorTerminal(err, run.reason);
    } finally {
      clearTimeout(timer);
    }
    recorder.finish(terminal);
    // Inactive once the terminal is durable; Worker exit and root removal still hold admission.
    active.delete(run.runId);
    const w = run.worker;
    if (w) await w.cancel(CANCEL_GRACE_MS);
    else {
      await Deno.remove(runRoot, { recursive: true }).catch((err) => {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      });
    }
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
    preparations.abortAgent(agentId);
    const mine = [...active.values()].filter((r) => r.agentId === agentId);
    for (const r of mine) abort(r, reason === "upgrade" ? "agent_upgrade" : "agent_delete");
    await Promise.all(mine.map((r) => r.done));
    // A deleted Agent keeps nothing; after an upgrade (whose drain may have given up and
    // lifted the fence meanwhile) only the Runs cancelled here go, never newer ones.
    if (reason === "delete") hub.dropAgent(agentId);
    else hub.dropRuns(mine.map((r) => r.runId));
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

  return {
    hub,
    plans,
    approvals,
    preparations,
    submit,
    cancel,
    cancelAgentWork,
    shutdown,
    /** [CV-6] Startup: converge every Run left running by a previous process. */
    recover: () => recoverRuns({ home: opts.home, agents: opts.agents, log: opts.log, now }),
    stateDb,
    prepare,
    usageScope,
    activeCount: () => active.size,
    isActive: (runId: string) => active.has(runId),
    activeRunOf,
    defaultModelId,
    catalog,
  };
}
