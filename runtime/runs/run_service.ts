/**
 * The Run service: admission, cancel and restart recovery of Runs, and the
 * one interface (`RunService`) the routes, commands and read side use
 * [CV-2, CV-5, CV-6, SB-1, EV-1, EV-2, TL-2]. Active Runs are owned by
 * active_runs.ts; one Run's execution is run_execution.ts.
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
 * - cancel (202) aborts the Run (active_runs.ts: model stream, `cancel`
 *   frame, kill after the grace); the Run deadline does the same with
 *   `model_turn_deadline` (run_execution.ts);
 * - recovery at start: every `running` Run gets a `run.failed/run_interrupted`
 *   terminal and becomes `interrupted`, dispatched operations become
 *   `outcome_unknown` (never re-dispatched), usage leftovers `incomplete`, and
 *   every Run root is removed.
 */
import type { McpPort, SkillPort } from "./turn_context.ts";
import type { AcpService } from "../acp/service.ts";
import type { AgentRule, CallFacts, Decided, PlatformRule } from "../tools/policy.ts";
import type { AgentService } from "../agents/service.ts";
import { isCommandInput } from "../protocol/command_input.ts";
import { admit, countedTexts } from "../context/admission.ts";
import { primeCounter, type TokenizerService } from "../context/tokenizer.ts";
import type { GitCollector } from "../context/git_collector.ts";
import { compileContextPlan, type ContextPlan } from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { LiveHub, type LiveRecord } from "../events/live_hub.ts";
import type { HomeLayout } from "../home.ts";
import {
  CONTEXT_PLANS_IN_MEMORY,
  RUN_DEADLINE_MS,
  SHUTDOWN_GRACE_MS,
  USER_MESSAGE_MAX_BYTES,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import { parseWorkerFrame, type WorkerToControl } from "../protocol/worker_frames.ts";
import { getRun } from "../store/run_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { sealCatalog, type ToolCatalog } from "../tools/catalog.ts";
import { spawnConfinedWorker } from "../worker/supervisor.ts";
import { WorkerPool } from "../worker/pool.ts";
import { ActiveRuns } from "./active_runs.ts";
import { Approvals, type Decision } from "./approvals.ts";
import { recoverRuns } from "./recovery.ts";
import { beginRun, lowerLimits, turnSnapshot } from "./run_begin.ts";
import { executeRun, type TakeWorker } from "./run_execution.ts";
import type { RunnerPort } from "../exec/run_exec.ts";
import type { TaskManager } from "../tasks/task_manager.ts";
import type { DocumentsPort } from "../documents/documents.ts";
import { Preparations, type PreparationView } from "./preparation.ts";
import { contextInputsOf, createRunInputs, type PreparedInputs } from "./run_inputs.ts";
import { RunRecorder } from "./run_recorder.ts";
import { NO_RUN_TEST_HOOKS, type RunTestHooks } from "./test_hooks.ts";
import { Subagents } from "../subagents/coordinator.ts";
import { nextLoopTurn } from "../loop_turns.ts";

export { CANCEL_GRACE_MS } from "../limits.ts";
export type { TakeWorker } from "./run_execution.ts";

export interface RunServiceOptions {
  home: HomeLayout;
  agents: AgentService;
  broker: ModelBroker;
  log: Logger;
  /** @default the built-in sealed catalog */
  catalog?: ToolCatalog;
  /** Pre-warmed Workers [PF-1] (0 = every Run spawns its own). @default 0 */
  workerPool?: number;
  /** @default Date.now */
  now?: () => number;
  /** @default RUN_DEADLINE_MS */
  deadlineMs?: number;
  /** Test-only hooks (runtime/runs/test_hooks.ts). @default none */
  testHooks?: RunTestHooks;
  /** The runner [EX-1]. @default none: the exec tools are denied */
  runner?: RunnerPort;
  /** Background Tasks [EX-6]. @default none: `background: true` and task tools refused */
  tasks?: TaskManager;
  /** MCP servers [LC-5]. @default none: no extension tools */
  mcp?: McpPort;
  /** Skills [LC-3]. @default none: no skill tools */
  skills?: SkillPort;
  /** External ACP runners [LC-6]. @default none: every Agent runs natively */
  acp?: AcpService;
  /** document/extract_text [LC-4]. @default none: the tool is denied */
  documents?: DocumentsPort;
  /** Exact token counting [CX-7]. @default none: the upper bound */
  tokenizers?: TokenizerService;
  /** git status of the workspace [CX-9]. @default none: no git section */
  git?: GitCollector;
  /** Per-Agent policy [TL-9]. @default none: the catalog defaults decide */
  policy?: RunPolicyPort;
}

/** What a Run needs of the per-Agent policy [TL-9]. */
export interface RunPolicyPort {
  decide(agentId: string, facts: CallFacts): Decided;
  toolsetPolicy(agentId: string): { rules: AgentRule[]; platform: readonly PlatformRule[] };
}

export interface SubmitBody {
  message: string;
  model_id?: string;
  compact?: boolean;
}

/**
 * The Run service as its callers see it: commands (submit, cancel, Agent
 * work, shutdown, recovery, approvals and preparation cancel) and the
 * read-only facts the read side (run_queries.ts) needs. Its state — the
 * active Runs, live records, plans, approvals, preparations — stays inside.
 */
export interface RunService {
  submit(agentId: string, conversationId: string, body: SubmitBody): Promise<{
    turn_id: string;
    run_id: string;
  }>;
  /** POST …/runs/<run>/cancel: 202 = accepted, not stopped. */
  cancel(agentId: string, runId: string): { run_id: string; state: "cancelling" };
  /** AgentRunControl: cancel every Run of an Agent and wait for them to end. */
  cancelAgentWork(agentId: string, reason: "upgrade" | "delete"): Promise<void>;
  /** Stops admission, cancels every Run and waits (bounded) for them to converge [OP-2]. */
  shutdown(): Promise<void>;
  /** Whether an active Run uses this catalog model [MB-13]. */
  modelInUse(modelId: string): boolean;
  /** [CV-6] Startup: converge every Run left running by a previous process. */
  recover(): void;
  /** Wakes the Run waiting on permission `id` (its row is already decided). */
  approvalDecided(agentId: string, id: string, decision: Decision): void;
  /** POST …/preparation/cancel. */
  cancelPreparation(
    agentId: string,
    conversationId: string,
    operationId: string,
  ): ReturnType<Preparations["cancel"]>;
  readonly read: RunReadPort;
}

/** What the read side may know of the service; nothing here changes state. */
export interface RunReadPort {
  stateDb(agentId: string): DatabaseSync;
  /** The live record of an active or recent Run of this Agent. */
  live(runId: string, agentId: string): LiveRecord | null;
  /** The plan of one of the most recent Runs [CX-4]; older Runs answer from `run.started`. */
  plan(runId: string): ContextPlan | null;
  activeRunOf(agentId: string, conversationId: string): string | null;
  /** The Conversation's preparation in flight. */
  preparation(
    agentId: string,
    conversationId: string,
  ): { id: string; view: PreparationView } | null;
  prepare(
    agentId: string,
    conversationId: string,
    modelId: string,
    startTokenizerCheck?: boolean,
  ): Promise<PreparedInputs>;
  usageScope: ReturnType<typeof createRunInputs>["usageScope"];
  defaultModelId(agentId?: string): string;
}

export function createRunService(opts: RunServiceOptions): RunService {
  const now = opts.now ?? Date.now;
  const catalog = opts.catalog ?? sealCatalog();
  const hooks = opts.testHooks ?? NO_RUN_TEST_HOOKS;
  const deadlineMs = opts.deadlineMs ?? hooks.runDeadlineMs ?? RUN_DEADLINE_MS;
  const hub = new LiveHub();
  const approvals = new Approvals();
  const preparations = new Preparations(now, hooks.preparationPause);
  const active = new ActiveRuns(opts.log);
  /** Plans of the most recent Runs for inspection [CX-4]; older Runs answer from run.started. */
  const plans = new Map<string, ContextPlan>();
  let shuttingDown = false;
  const workers = new WorkerPool<WorkerToControl>({
    root: opts.home.root,
    size: opts.workerPool ?? 0,
    log: opts.log,
    spawn: (workerRoot) =>
      spawnConfinedWorker({ runRoot: workerRoot, log: opts.log, parseFrame: parseWorkerFrame }),
  });
  workers.start();
  const takeWorker: TakeWorker = (runRoot, refillAfter) =>
    workers.take(runRoot, deadlineMs + 10_000, refillAfter);

  function rememberPlan(runId: string, plan: ContextPlan): void {
    plans.set(runId, plan);
    while (plans.size > CONTEXT_PLANS_IN_MEMORY) plans.delete(plans.keys().next().value!);
  }

  const inputs = createRunInputs({
    home: opts.home,
    agents: opts.agents,
    broker: opts.broker,
    catalog,
    runner: opts.runner !== undefined,
    documents: opts.documents !== undefined,
    // The Agent's skills [LC-3] first (≤ 16), then its enabled MCP tools [LC-5].
    extensionSpecs: opts.mcp || opts.skills
      ? (agentId) => [
        ...(opts.skills?.specsFor(agentId) ?? []),
        ...(opts.mcp?.specsFor(agentId) ?? []),
      ]
      : undefined,
    tokenizers: opts.tokenizers,
    git: opts.git,
    agentPolicy: opts.policy ? (agentId) => opts.policy!.toolsetPolicy(agentId) : undefined,
  });
  const { stateDb, workspaceDir, defaultModelId, reasoningOf, limitsOf, prepare, usageScope } =
    inputs;
  /** The catalog model of every active Run (DELETE of a model in use is refused) [MB-13]. */
  const modelsOfRuns = new Map<string, string>();
  // [LC-2] Child Runs are admitted by `submit` below like any Run; the coordinator only
  // reserves the delegation slot, follows the child and cancels it.
  const subagents: Subagents = new Subagents({
    agents: opts.agents,
    stateDb,
    submit: (agentId, conversationId, message) => submit(agentId, conversationId, { message }),
    abort: (runId) => active.abort(runId, "user"),
    live: (runId, agentId) => hub.get(runId, agentId),
    agentActive: (agentId) => active.hasAgent(agentId),
    log: opts.log,
    now,
    wallMs: hooks.subagentWallMs ?? undefined,
  });
  const execution = {
    home: opts.home,
    subagents,
    broker: opts.broker,
    log: opts.log,
    now,
    takeWorker,
    workspaceDir,
    runner: opts.runner ?? null,
    mcp: opts.mcp ?? null,
    skills: opts.skills ?? null,
    tasks: opts.tasks ?? null,
    documents: opts.documents ?? null,
    abort: (runId: string, reason: "deadline") => active.abort(runId, reason),
  };

  async function submit(agentId: string, conversationId: string, body: SubmitBody) {
    if (utf8Bytes(body.message) > USER_MESSAGE_MAX_BYTES) throw new AppError("message_too_large");
    if (body.message.length === 0) throw new AppError("schema_violation", "empty message");
    // [SC-1] Slash input belongs to …/commands: never a Turn, never sent to the model.
    if (isCommandInput(body.message)) throw new AppError("command_invalid", "slash input");
    if (shuttingDown) throw new AppError("shutting_down");
    active.assertRoom(agentId, conversationId);
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
      const modelId = body.model_id ?? defaultModelId(agentId);
      // [PF-2] Submits that arrive together take turns with the loop: reading the inputs, then
      // compiling and beginning the Run, each section on its own loop turn (loop_turns.ts).
      await nextLoopTurn();
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
      const limits = lowerLimits(
        { modelCallsMax: Infinity, toolCallsMax: Infinity, deadlineMs },
        limitsOf(agentId),
      );
      await nextLoopTurn();
      await op.enter("admitting");
      await primeCounter(plan.counter, countedTexts(plan, { exchanges: [], narrowed: false }));
      if (!admit(plan, { exchanges: [], narrowed: false }).ok) {
        throw new AppError("model_context_limit");
      }
      // Re-checked after the awaits above: a concurrent submit may have won meanwhile, or the
      // server began to stop.
      if (shuttingDown) throw new AppError("shutting_down");
      active.assertRoom(agentId, conversationId);
      // An upgrade or delete fenced the Agent while this was preparing: no Run on the old
      // generation (its drain aborts preparations, and this closes the rest of the window).
      if (!opts.agents.isCurrentGeneration(agentId, admission.generation)) {
        throw new AppError("agent_busy");
      }
      // Past this point the preparation cannot be cancelled; the Run's own cancel applies.
      op.commit();
      // [LC-6] An Agent bound to an external runner runs its Turn there, not in a Worker;
      // its Run names the runner as the model that answered (`acp:<name>`).
      const runner = opts.acp ? opts.agents.requireUsable(agentId).runner ?? null : null;
      const { journal, staged, at } = beginRun({
        db: p.db,
        ids: { run_id: runId, agent_id: agentId, conversation_id: conversationId },
        turnId,
        expectedRevision: p.conv.revision,
        message: body.message,
        modelId: runner !== null ? `acp:${runner}` : modelId,
        plan,
        toolset: p.toolset,
        chatOnly: p.profile.state === "chat_only",
        now,
      });
      rememberPlan(runId, plan);
      const live = hub.create(runId, agentId);
      live.push(staged.envelope);
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
      const admitted = {
        db: p.db,
        plan,
        snapshot: turnSnapshot(runId, modelId, plan, p.toolset, limits),
        scope: usageScope(modelId, p.toolset, plan.counter.id),
        deadline: at + limits.deadlineMs,
        reasoning: reasoningOf(agentId),
        approvals: {
          approvals,
          agentId,
          generation: admission.generation,
          generationCurrent: () => opts.agents.isCurrentGeneration(agentId, admission.generation),
          receipts: new Map(),
          checkpointMaxBytes: hooks.checkpointMaxBytes ?? undefined,
          policy: opts.policy
            ? (facts: CallFacts) => opts.policy!.decide(agentId, facts)
            : undefined,
        },
      };
      modelsOfRuns.set(runId, modelId);
      active.start(
        { agentId, conversationId, runId },
        (run, runHooks) =>
          runner !== null && opts.acp
            ? opts.acp.execute(run, runHooks, recorder, {
              runner,
              workspaceDir: workspaceDir(agentId),
              message: body.message,
              history: p.history,
              db: p.db,
              deadline: admitted.deadline,
              approvals: admitted.approvals,
              toolset: p.toolset,
            }, execution.abort)
            : executeRun(execution, run, runHooks, recorder, admitted),
        () => {
          modelsOfRuns.delete(runId);
          admission.release();
        },
      );
      started = true;
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

  return {
    submit,
    cancel(agentId, runId) {
      const db = stateDb(agentId);
      if (!active.get(agentId, runId)) {
        if (!getRun(db, runId)) throw new AppError("run_not_found");
        throw new AppError("run_not_active");
      }
      active.abort(runId, "user");
      return { run_id: runId, state: "cancelling" };
    },
    async cancelAgentWork(agentId, reason) {
      preparations.abortAgent(agentId);
      const mine = await active.abortAgent(
        agentId,
        reason === "upgrade" ? "agent_upgrade" : "agent_delete",
      );
      // A deleted Agent keeps nothing; after an upgrade (whose drain may have given up and
      // lifted the fence meanwhile) only the Runs cancelled here go, never newer ones.
      if (reason === "delete") hub.dropAgent(agentId);
      else hub.dropRuns(mine);
      await opts.acp?.dropAgent(agentId);
    },
    // [MB-13] In use while a Run of it is active: once its terminal is durable the Run calls no
    // model any more, though its Worker may still be exiting (admission waits for that).
    modelInUse: (modelId: string) =>
      [...modelsOfRuns].some(([runId, m]) => m === modelId && active.has(runId)),
    async shutdown() {
      shuttingDown = true;
      await active.abortAll("shutdown", SHUTDOWN_GRACE_MS);
      await opts.acp?.close();
      await workers.shutdown();
    },
    recover: () => recoverRuns({ home: opts.home, agents: opts.agents, log: opts.log, now }),
    approvalDecided(agentId, id, decision) {
      approvals.decide(agentId, id, decision);
    },
    cancelPreparation: (agentId, conversationId, operationId) =>
      preparations.cancel(agentId, conversationId, operationId),
    read: {
      stateDb,
      live: (runId, agentId) => hub.get(runId, agentId),
      plan: (runId) => plans.get(runId) ?? null,
      activeRunOf: (agentId, conversationId) => active.runOf(agentId, conversationId),
      preparation(agentId, conversationId) {
        const op = preparations.current(agentId, conversationId);
        return op ? { id: op.id, view: op.view() } : null;
      },
      prepare,
      usageScope,
      defaultModelId,
    },
  };
}
