/**
 * Restart recovery of Runs [CV-6, TL-2, EV-1]: runs once at startup, before
 * the server accepts requests, for every active Agent.
 *
 * What this file enforces: every Run left `running` becomes `interrupted` in
 * one transaction per Run — its journal (validated first) gets the terminal
 * `run.failed {code: run_interrupted, stage: recovery}`, or is tombstoned if
 * it no longer validates; its Turn is interrupted (never committed as
 * history), usage leftovers become `incomplete`, pending approvals expire.
 * Operations left `intent`/`dispatched` become `outcome_unknown` and are never
 * re-dispatched. Every Run root of the Agent is removed.
 */
import type { AgentService } from "../agents/service.ts";
import { RunJournal, validateJournal, writeStaged } from "../events/journal.ts";
import { scratchRootRel } from "../exec/scratch_root.ts";
import { agentRuntimeRel, type HomeLayout } from "../home.ts";
import type { Logger } from "../log.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { finishTurnInTransaction } from "../store/agent_state_store.ts";
import {
  expirePermissions,
  listEvents,
  operationsOutcomeUnknown,
  pruneToTombstone,
  runningRuns,
  setRunTerminal,
  usageCloseRun,
} from "../store/run_store.ts";
import { transaction } from "../store/sqlite.ts";
import { interruptRunningDelegations } from "../store/delegation_store.ts";
import { clampDurationMs } from "../protocol/events.ts";

export interface RecoveryOptions {
  home: HomeLayout;
  agents: AgentService;
  log: Logger;
  now: () => number;
}

export function recoverRuns(
  opts: RecoveryOptions,
): { interrupted: number; unknownOperations: number } {
  let interrupted = 0;
  let unknown = 0;
  for (const agent of opts.agents.list()) {
    if (agent.state !== "active") continue;
    try {
      const r = recoverAgentRuns(opts, agent.id);
      interrupted += r.interrupted;
      unknown += r.unknown;
    } catch (err) {
      // [AG-5] One Agent's damaged data (a corrupt page the open checks cannot see)
      // makes that Agent unavailable with its reason; start-up goes on.
      opts.agents.markBroken(agent.id, err);
    }
  }
  if (interrupted > 0 || unknown > 0) {
    opts.log.info("runs.recovered", { interrupted, unknown_operations: unknown });
  }
  return { interrupted, unknownOperations: unknown };
}

function recoverAgentRuns(
  opts: RecoveryOptions,
  agentId: string,
): { interrupted: number; unknown: number } {
  const now = opts.now;
  let interrupted = 0;
  let unknown = 0;
  const db = opts.agents.pool.get(agentId);
  const at = now();
  for (const run of runningRuns(db)) {
    interrupted++;
    const rows = listEvents(db, run.id);
    const v = validateJournal(run, agentId, rows);
    const ids = { run_id: run.id, agent_id: agentId, conversation_id: run.conversation_id };
    transaction(db, () => {
      if (v.ok) {
        const j = RunJournal.restore(ids, rows, now);
        const s = j.stage("run.failed", {
          code: "run_interrupted",
          stage: "recovery",
          retryable: true,
          duration_ms: clampDurationMs(at - run.created_at),
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
  // [LC-2] A delegation left running ends `interrupted` with its Runs; nothing is re-run.
  interruptRunningDelegations(db, at);
  // Every Run root and every scratch copy [EX-3] of a previous process goes.
  for (const rel of [`${agentRuntimeRel(agentId)}/runs`, scratchRootRel(agentId)]) {
    try {
      Deno.removeSync(`${opts.home.root}/${rel}`, { recursive: true });
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return { interrupted, unknown };
}
