/**
 * `/compact` [CX-9], the effects: ask the model for a summary of a
 * Conversation's older history, store it as `pending`, and let the operator
 * keep it (history = summary + later Turns), drop it, or undo a kept one.
 *
 * What this file enforces: the request covers completed Turns only and never
 * the latest (compaction.ts); a call that fails, is cancelled, passes
 * COMPACT_SUMMARY_TIMEOUT_MS or answers more than COMPACT_SUMMARY_MAX_BYTES
 * stores nothing and throws its fixed code (the operator is told); the
 * transcript (Turns) is never written; every decision is one conditional
 * state change (compaction_store.ts), so a stale or repeated click is
 * `compaction_decided`, never a second effect.
 */
import { AppError } from "../errors.ts";
import { COMPACT_SUMMARY_TIMEOUT_MS } from "../limits.ts";
import type { ModelBroker } from "../model/types.ts";
import type { CompactionView } from "../protocol/api.ts";
import { utf8Bytes } from "../protocol/utf8.ts";
import {
  type CompactionRow,
  getCompaction,
  insertCompaction,
  keepCompaction,
  moveCompaction,
} from "../store/compaction_store.ts";
import { checkSummary, olderBundles, summaryRequest } from "../context/compaction.ts";
import type { PreparedInputs } from "../runs/run_inputs.ts";
import type { DatabaseSync } from "../store/sqlite.ts";

export interface CompactDeps {
  broker: ModelBroker;
  /** The Run inputs of a Conversation (history after any kept summary, the summary, profile). */
  prepare(agentId: string, conversationId: string, modelId: string): Promise<PreparedInputs>;
  defaultModelId(agentId: string): string;
  stateDb(agentId: string): DatabaseSync;
  now?: () => number;
  /** The summary call's bound. @default COMPACT_SUMMARY_TIMEOUT_MS */
  timeoutMs?: number;
}

export function compactionView(r: CompactionRow): CompactionView {
  return {
    id: r.id,
    state: r.state,
    summary: r.summary,
    turns: r.turns,
    through_turn_id: r.through_turn_id,
    model_id: r.model_id,
    bytes: utf8Bytes(r.summary),
    created_at: new Date(r.created_at).toISOString(),
  };
}

export type CompactService = ReturnType<typeof createCompactService>;

export function createCompactService(deps: CompactDeps) {
  const now = deps.now ?? Date.now;

  function require(agentId: string, conversationId: string, id: string): CompactionRow {
    const row = getCompaction(deps.stateDb(agentId), conversationId, id);
    if (!row) throw new AppError("compaction_not_found");
    return row;
  }

  return {
    /** Asks the model for the summary; stores it `pending` and returns it. */
    async summarize(
      agentId: string,
      conversationId: string,
      modelId: string | null,
      signal?: AbortSignal,
    ): Promise<CompactionView> {
      const id = modelId ?? deps.defaultModelId(agentId);
      const p = await deps.prepare(agentId, conversationId, id);
      const scope = { bundles: olderBundles(p.history), previous: p.summary?.text ?? null };
      if (scope.bundles.length === 0) throw new AppError("compact_nothing_to_summarize");
      const req = summaryRequest(scope, p.profile.budget);
      if (req.included.length === 0) throw new AppError("compact_nothing_to_summarize");
      const ms = deps.timeoutMs ?? COMPACT_SUMMARY_TIMEOUT_MS;
      const timeout = AbortSignal.timeout(ms);
      const out = await deps.broker.chat({
        modelId: id,
        phase: "plain",
        messages: req.messages,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        deadline: now() + ms,
        reasoning: false,
      });
      if (out.kind === "cancelled") {
        throw new AppError(timeout.aborted ? "compact_summary_timeout" : "compact_summary_failed");
      }
      if (out.kind === "failed") {
        throw new AppError(
          out.code === "model_turn_deadline" ? "compact_summary_timeout" : "compact_summary_failed",
          out.code,
        );
      }
      const checked = checkSummary(out.content);
      if (!checked.ok) throw new AppError(checked.code);
      const last = req.included[req.included.length - 1];
      const row: Omit<CompactionRow, "decided_at"> = {
        id: crypto.randomUUID(),
        conversation_id: conversationId,
        through_turn_id: last.turnId,
        through_seq: last.seq ?? 0,
        turns: (p.summary?.turns ?? 0) + req.left_out + req.included.length,
        summary: checked.summary,
        model_id: id,
        state: "pending",
        created_at: now(),
      };
      insertCompaction(p.db, row);
      return compactionView({ ...row, decided_at: null });
    },

    /** Keeps a pending summary: from now on history = summary + later Turns. */
    keep(agentId: string, conversationId: string, id: string): CompactionView {
      require(agentId, conversationId, id);
      if (!keepCompaction(deps.stateDb(agentId), conversationId, id, now())) {
        throw new AppError("compaction_decided");
      }
      return compactionView(require(agentId, conversationId, id));
    },

    /** Drops a pending summary: nothing changes. */
    drop(agentId: string, conversationId: string, id: string): CompactionView {
      require(agentId, conversationId, id);
      if (!moveCompaction(deps.stateDb(agentId), id, "pending", "dropped", now())) {
        throw new AppError("compaction_decided");
      }
      return compactionView(require(agentId, conversationId, id));
    },

    /** Undoes a kept summary: history is the full history again. */
    undo(agentId: string, conversationId: string, id: string): CompactionView {
      require(agentId, conversationId, id);
      if (!moveCompaction(deps.stateDb(agentId), id, "active", "undone", now())) {
        throw new AppError("compaction_decided");
      }
      return compactionView(require(agentId, conversationId, id));
    },
  };
}
