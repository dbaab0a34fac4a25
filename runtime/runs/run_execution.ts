/**
 * Execution of one admitted Run [SB-1, SB-5, EV-1, CV-2]: Run root, confined
 * Worker, the Turn, the terminal, the Worker's end.
 *
 * What this file enforces: the Run's Worker is a never-used one, confined and
 * attested by the supervisor (no unsandboxed fallback), taken from the pool
 * or spawned on demand, whose root becomes the Run root; a Run aborted while
 * its Worker was being taken gets no turn frame; the Run deadline
 * aborts the Run (`model_turn_deadline`); exactly one terminal is recorded,
 * after which the Run is no longer active; a Worker that exits mid-Turn cuts
 * its in-flight model call at once [OP-5]; the Worker is then closed (killed
 * after the cancel grace) or, without one, the Run root removed.
 */
import type { McpPort, SkillPort } from "./turn_context.ts";
import type { ContextPlan } from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { agentRuntimeRel, type HomeLayout } from "../home.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { nextLoopTurn } from "../loop_turns.ts";
import type { TurnRuntimeSnapshot, WorkerToControl } from "../protocol/worker_frames.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import type { WorkerHandle } from "../worker/supervisor.ts";
import type { ActiveRun, RunHooks } from "./active_runs.ts";
import { CANCEL_GRACE_MS } from "../limits.ts";
import type { RunRecorder, Terminal } from "./run_recorder.ts";
import { abortedTerminal, crashTerminal, errorTerminal } from "./run_terminal.ts";
import type { ApprovalContext } from "./turn_context.ts";
import { driveTurn } from "./turn_driver.ts";
import { RunExec, type RunnerPort } from "../exec/run_exec.ts";
import { scratchRootRel } from "../exec/scratch_root.ts";
import type { TaskManager } from "../tasks/task_manager.ts";
import { errorName } from "../log.ts";
import type { DocumentsPort } from "../documents/documents.ts";
import type { Subagents } from "../subagents/coordinator.ts";

/**
 * A never-used confined Worker claimed for `runRoot` (absent; its parent exists)
 * with the Run's deadline armed; the pool starts its replacement once `refillAfter`
 * settles [PF-1].
 */
export type TakeWorker = (
  runRoot: string,
  refillAfter: Promise<void>,
) => Promise<WorkerHandle<WorkerToControl>>;

/** What every Run of a service shares. */
export interface ExecutionDeps {
  home: HomeLayout;
  broker: ModelBroker;
  log: Logger;
  now: () => number;
  takeWorker: TakeWorker;
  workspaceDir(agentId: string): string;
  /** The runner [EX-1]; null ⇒ the exec tools are denied. */
  runner: RunnerPort | null;
  /** MCP servers [LC-5]; null ⇒ no extension calls. */
  mcp?: McpPort | null;
  /** Skills [LC-3]; null ⇒ no skill calls. */
  skills?: SkillPort | null;
  /** Background Tasks [EX-6]; null ⇒ `background: true` and the task tools are refused. */
  tasks?: TaskManager | null;
  /** document/extract_text [LC-4]; null ⇒ denied. */
  documents?: DocumentsPort | null;
  /** Aborts the Run (once) for `reason`. */
  abort(runId: string, reason: "deadline"): void;
  /** Subagents [LC-2]; null ⇒ agent/delegate is denied. */
  subagents?: Subagents | null;
}

/** What one admitted Run brings. */
export interface AdmittedRun {
  db: DatabaseSync;
  plan: ContextPlan;
  snapshot: TurnRuntimeSnapshot;
  scope: string;
  /** Absolute Run deadline (epoch ms). */
  deadline: number;
  approvals: ApprovalContext;
  /** The Agent's reasoning setting [MB-12]. */
  reasoning: boolean;
}

export async function executeRun(
  deps: ExecutionDeps,
  run: ActiveRun,
  hooks: RunHooks,
  recorder: RunRecorder,
  x: AdmittedRun,
): Promise<void> {
  const runsRel = `${agentRuntimeRel(run.agentId)}/runs`;
  const runRoot = `${deps.home.root}/${runsRel}/${run.runId}`;
  const timer = setTimeout(
    () => deps.abort(run.runId, "deadline"),
    Math.max(0, x.deadline - deps.now()),
  );
  let worker: WorkerHandle<WorkerToControl> | null = null;
  let terminal: Terminal;
  // [EX-3] The Run's scratch copy lives beside the Run root, outside the Worker's tree bound.
  const exec = deps.runner === null ? undefined : new RunExec({
    agentId: run.agentId,
    runId: run.runId,
    workspaceDir: deps.workspaceDir(run.agentId),
    rootDir: `${deps.home.root}/${scratchRootRel(run.agentId)}/${run.runId}`,
    db: x.db,
    runner: deps.runner,
    now: deps.now,
    checkpointMaxBytes: x.approvals.checkpointMaxBytes,
  });
  // [PF-1] The pool's replacement Worker (two Deno start-ups of CPU) starts once this Run's
  // first model call ended (or the Run did), not while the Run is on its way to the model.
  let refill!: () => void;
  const firstCallEnded = new Promise<void>((resolve) => (refill = resolve));
  try {
    // [PF-2] On a loop turn of its own: the submit that started this Run has just begun it (the
    // Run's transaction), and its 202 goes out first; taking the Worker (the Run root, the pool's
    // rename) would lengthen that section — on a fresh server to 15–25 ms.
    await nextLoopTurn();
    ensurePrivateDir(deps.home.root, runsRel);
    const w = await deps.takeWorker(runRoot, firstCallEnded);
    worker = w;
    hooks.attachWorker(w);
    // [OP-5] The Worker's exit (crash, kill, a supervisor bound) cuts its model call at once.
    const workerGone = new AbortController();
    w.exited.then(() => workerGone.abort(), () => workerGone.abort());
    const reason = run.reason();
    // Cancelled (or past the deadline) while the Worker was starting: no turn frame at all.
    terminal = reason !== null ? abortedTerminal(reason) : await driveTurn({
      // A Worker that exited (cancel, crash; the supervisor says `worker_crashed`) shows up
      // as end of input on receive, where the Broker's code still wins [SB-5].
      send: (f) =>
        w.send(f).catch((err) => {
          if (err instanceof AppError && err.code === "worker_crashed") return;
          if (!(err instanceof Deno.errors.BrokenPipe)) throw err;
        }),
      receive: (ms) => w.receive(ms),
    }, {
      snapshot: x.snapshot,
      plan: x.plan,
      workspaceDir: deps.workspaceDir(run.agentId),
      broker: deps.broker,
      recorder,
      db: x.db,
      log: deps.log,
      now: deps.now,
      deadline: x.deadline,
      signal: run.signal,
      abortReason: () => run.reason(),
      workerGone: workerGone.signal,
      scope: x.scope,
      approvals: x.approvals,
      reasoning: x.reasoning,
      exec,
      mcp: deps.mcp ?? undefined,
      skills: deps.skills ?? undefined,
      tasks: deps.tasks?.forRun(run.agentId, run.runId, run.conversationId),
      documents: deps.documents
        ? (args, signal) =>
          deps.documents!.extract({
            agentId: run.agentId,
            workspaceDir: deps.workspaceDir(run.agentId),
            args,
            runKey: `${run.agentId}/${run.runId}`,
            signal,
          })
        : undefined,
      delegate: deps.subagents?.forRun(run) ?? undefined,
      onModelCallEnded: refill,
    });
    if (terminal.state === "failed" && terminal.code === "worker_crashed") {
      terminal = await crashTerminal(w.exited, terminal, CANCEL_GRACE_MS);
    }
  } catch (err) {
    const kind = errorName(err);
    if (!(err instanceof AppError)) deps.log.error("run.execute_failed", { kind });
    terminal = errorTerminal(err, run.reason());
  } finally {
    clearTimeout(timer);
    refill();
  }
  recorder.finish(terminal);
  // [EX-3] The scratch copy is deleted at the Run's terminal (no command runs any more:
  // a tool call always ends before the terminal).
  try {
    exec?.dispose();
  } catch (err) {
    deps.log.error("run.scratch_remove_failed", { kind: errorName(err) });
  }
  // Inactive once the terminal is durable; Worker exit and root removal still hold admission.
  hooks.settled();
  if (worker) await worker.cancel(CANCEL_GRACE_MS);
  else {
    await Deno.remove(runRoot, { recursive: true }).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
  }
}
