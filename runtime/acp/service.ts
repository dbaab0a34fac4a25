/**
 * External runners as the Run service uses them [LC-6]: the registered
 * runners, the process pool, the scoped gateway, and the execution of one
 * admitted Run of a runner-bound Agent (the counterpart of
 * runs/run_execution.ts for the Worker).
 *
 * What this file enforces: the Run deadline aborts the Run (`deadline`);
 * exactly one terminal is recorded, after which the Run is no longer active;
 * the runner process is released (pooled or reaped) before the Run's
 * admission is; shutdown reaps every process and closes the gateway.
 */
import type { HistoryBundle } from "../context/plan.ts";
import { CANCEL_GRACE_MS } from "../limits.ts";
import type { Logger } from "../log.ts";
import type { ActiveRun, RunHooks } from "../runs/active_runs.ts";
import type { RunRecorder } from "../runs/run_recorder.ts";
import type { ApprovalContext } from "../runs/turn_context.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import type { EffectiveToolSet } from "../tools/policy.ts";
import { driveAcpTurn } from "./acp_turn.ts";
import { ScopedGateway } from "./gateway.ts";
import { RunnerPool } from "./pool.ts";
import { type RunnerSpec, runnerView } from "./runners.ts";

export interface AcpRunInput {
  runner: string;
  workspaceDir: string;
  message: string;
  history: readonly HistoryBundle[];
  db: DatabaseSync;
  deadline: number;
  approvals: ApprovalContext;
  toolset: EffectiveToolSet;
}

export interface AcpService {
  /** The registered runners, as GET /api/runners shows them. */
  list(): ReturnType<typeof runnerView>[];
  has(name: string): boolean;
  execute(
    run: ActiveRun,
    hooks: RunHooks,
    recorder: RunRecorder,
    x: AcpRunInput,
    abort: (runId: string, reason: "deadline") => void,
  ): Promise<void>;
  /** Reaps an Agent's idle runner processes (delete, upgrade). */
  dropAgent(agentId: string): Promise<void>;
  /** Reaps every runner process and closes the gateway (shutdown). */
  close(): Promise<void>;
  readonly gateway: ScopedGateway;
  readonly pool: RunnerPool;
}

export function createAcpService(opts: {
  runners: readonly RunnerSpec[];
  log: Logger;
  now?: () => number;
  /** @default ACP_IDLE_MS */
  idleMs?: number;
}): AcpService {
  const now = opts.now ?? Date.now;
  const runners = new Map(opts.runners.map((r) => [r.name, r]));
  const pool = new RunnerPool(CANCEL_GRACE_MS, opts.idleMs);
  const gateway = new ScopedGateway(opts.log, now);
  return {
    gateway,
    pool,
    list: () => [...runners.values()].map(runnerView),
    has: (name) => runners.has(name),
    async execute(run, hooks, recorder, x, abort) {
      const timer = setTimeout(() => abort(run.runId, "deadline"), Math.max(0, x.deadline - now()));
      let terminal;
      try {
        terminal = await driveAcpTurn({ runners, pool, gateway, log: opts.log, now }, {
          ...x,
          agentId: run.agentId,
          conversationId: run.conversationId,
          runId: run.runId,
          recorder,
          signal: run.signal,
          abortReason: () => run.reason(),
        });
      } finally {
        clearTimeout(timer);
      }
      recorder.finish(terminal);
      hooks.settled();
    },
    dropAgent: (agentId) => pool.dropAgent(agentId),
    async close() {
      await pool.closeAll();
      await gateway.close();
    },
  };
}
