/**
 * The start of a Run [CV-2, EV-1]: the Turn, the Run row and `run.started` in
 * ONE `BEGIN IMMEDIATE` transaction.
 *
 * What this file enforces: the Turn is accepted only at the Conversation
 * revision the plan was compiled at (compare-and-swap) and only if no Turn is
 * running (`turns_one_running`); the Run row is the Conversation's only
 * running Run (`runs_one_active`); any of these losing a race is 409
 * `conversation_busy`, and nothing at all is written. `run.started` is
 * content-free: plan/toolset ids and digests, counts, window, budget, features.
 */
import type { ContextPlan } from "../context/plan.ts";
import { AppError } from "../errors.ts";
import { type RunIds, RunJournal, type Staged, writeStaged } from "../events/journal.ts";
import { canonicalJson } from "../protocol/digest.ts";
import type { TurnRuntimeSnapshot } from "../protocol/worker_frames.ts";
import { RUN_DEADLINE_MS, WORKER_MODEL_CALLS_MAX, WORKER_TOOL_CALLS_MAX } from "../limits.ts";
import { beginTurnInTransaction } from "../store/agent_state_store.ts";
import { insertRun } from "../store/run_store.ts";
import { type DatabaseSync, transaction } from "../store/sqlite.ts";
import type { EffectiveToolSet } from "../tools/policy.ts";

export const PROTOCOL_FEATURES = ["ipc-v2", "tool-refs", "finalize-marker", "approvals"];

export interface BeginRunInput {
  db: DatabaseSync;
  ids: RunIds;
  turnId: string;
  /** The Conversation revision the plan's history was read at. */
  expectedRevision: number;
  message: string;
  modelId: string;
  plan: ContextPlan;
  toolset: EffectiveToolSet;
  /** The model has no tools: its Run gets none and `run.started` says so [MB-10]. */
  chatOnly?: boolean;
  now: () => number;
}

/** Writes the Turn, the Run and `run.started`; returns the journal with its first event accepted. */
export function beginRun(x: BeginRunInput): { journal: RunJournal; staged: Staged; at: number } {
  const journal = new RunJournal(x.ids, x.now);
  const startedPayload = {
    turn_id: x.turnId,
    model_id: x.modelId,
    plan_id: x.plan.id,
    plan_digest: x.plan.digest,
    toolset_digest: x.toolset.digest,
    tool_ids: x.toolset.tools.map((t) => t.spec.id),
    section_count: x.plan.sections.length,
    history_count: x.plan.history.length,
    ...(x.plan.omitted ? { history_omitted: x.plan.omitted.count } : {}),
    window: x.plan.window,
    budget: x.plan.budget,
    protocol_features: PROTOCOL_FEATURES,
    ...(x.chatOnly ? { chat_only: true as const } : {}),
  };
  const staged = journal.stage("run.started", startedPayload);
  const at = x.now();
  try {
    transaction(x.db, () => {
      const t = beginTurnInTransaction(x.db, {
        conversationId: x.ids.conversation_id,
        expectedRevision: x.expectedRevision,
        turnId: x.turnId,
        runId: x.ids.run_id,
        userMessage: x.message,
        now: at,
      });
      if (t.result === "missing") throw new AppError("conversation_not_found");
      if (t.result !== "ok") throw new AppError("conversation_busy");
      insertRun(x.db, {
        id: x.ids.run_id,
        conversation_id: x.ids.conversation_id,
        turn_id: x.turnId,
        model_id: x.modelId,
        started_summary: canonicalJson(startedPayload),
        last_digest: journal.head,
        created_at: at,
      });
      writeStaged(x.db, journal, [staged]);
    });
  } catch (err) {
    if (err instanceof AppError) throw err;
    // The unique partial indexes are the last line against a concurrent Run [CV-2].
    if (err instanceof Error && /UNIQUE constraint failed/.test(err.message)) {
      throw new AppError("conversation_busy", "unique index");
    }
    throw err;
  }
  journal.accept([staged]);
  return { journal, staged, at };
}

/** The Worker's turn frame: references and bounds only, never prompts or endpoints [SB-5]. */
/** A Turn's bounds [SB-8]: the product's, or an Agent's lower ones. */
export interface TurnLimits {
  modelCallsMax: number;
  toolCallsMax: number;
  deadlineMs: number;
}

export const DEFAULT_TURN_LIMITS: TurnLimits = {
  modelCallsMax: WORKER_MODEL_CALLS_MAX,
  toolCallsMax: WORKER_TOOL_CALLS_MAX,
  deadlineMs: RUN_DEADLINE_MS,
};

/** The product's bounds lowered by `base` and an Agent's own (never raised). */
export function lowerLimits(base: TurnLimits, agent: Partial<TurnLimits>): TurnLimits {
  const low = (d: number, b: number, a: number | undefined) => Math.min(d, b, a ?? d);
  return {
    modelCallsMax: low(WORKER_MODEL_CALLS_MAX, base.modelCallsMax, agent.modelCallsMax),
    toolCallsMax: low(WORKER_TOOL_CALLS_MAX, base.toolCallsMax, agent.toolCallsMax),
    deadlineMs: low(RUN_DEADLINE_MS, base.deadlineMs, agent.deadlineMs),
  };
}

export function turnSnapshot(
  runId: string,
  modelId: string,
  plan: ContextPlan,
  toolset: EffectiveToolSet,
  limits: TurnLimits = DEFAULT_TURN_LIMITS,
): TurnRuntimeSnapshot {
  return {
    run_id: runId,
    model_id: modelId,
    plan: { id: plan.id, digest: plan.digest },
    toolset: {
      id: toolset.id,
      digest: toolset.digest,
      tool_ids: toolset.tools.map((t) => t.spec.id),
    },
    model_calls_max: limits.modelCallsMax,
    tool_calls_max: limits.toolCallsMax,
    deadline_ms: limits.deadlineMs,
  };
}
