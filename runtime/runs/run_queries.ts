/**
 * Read side of Runs: SSE stream selection, validated replay pages [EV-4],
 * context inspection [CX-4], NextTurnProjection [CX-5], the capability audit
 * and pending approvals [TL-2].
 *
 * What this file enforces: a Run is looked up only in the named Agent's own
 * database (a foreign or unknown id is 404); replay validates the WHOLE
 * journal (binding, schema, state machine, hash chain, head, counts) before
 * returning any page, and a corrupt journal is `journal_corrupt` — never a
 * valid-looking prefix; pages are ≤ 128 events with a cursor ≤ 1,000,000;
 * inspection never returns section bodies; after the plan left memory only
 * the validated `run.started` summary is returned.
 */
import { listRunnerAccess } from "../store/runner_access_store.ts";

/** Audit-lite rows of a runner shown with a Run's capability audit [LC-6]. */
const RUNNER_ACCESS_SHOWN_MAX = 256;
import { AppError } from "../errors.ts";
import { createInspectionKey, inspectPlan, projectNextTurn } from "../context/inspect.ts";
import { validateJournal } from "../events/journal.ts";
import { durableStream, liveStream, parseLastEventId } from "../events/sse.ts";
import {
  CONTEXT_CALIBRATION_USAGES,
  PERMISSIONS_PENDING_MAX,
  REPLAY_CURSOR_MAX,
  REPLAY_PAGE_MAX,
} from "../limits.ts";
import { PAYLOADS } from "../protocol/events.ts";
import { type PolicyRuleJson, PolicyRuleSchema } from "../protocol/api.ts";
import type { EventEnvelope } from "../protocol/events.ts";
import {
  capabilityAudit,
  decidePermission,
  getPermission,
  getRun,
  listEvents,
  pendingPermissions,
  permissionFullDiff,
  type RunRow,
  usageSamples,
} from "../store/run_store.ts";
import { getConversation } from "../store/agent_state_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { contextInputsOf } from "./run_inputs.ts";
import type { RunService } from "./run_service.ts";

export type RunQueries = ReturnType<typeof createRunQueries>;

/** The stored "Always allow" rule of an approval; null when none (or it does not parse). */
function alwaysRuleOf(json: string | null): PolicyRuleJson | null {
  if (json === null) return null;
  try {
    const r = PolicyRuleSchema.safeParse(JSON.parse(json));
    return r.success ? r.data : null;
  } catch {
    return null;
  }
}

/** What the approval route needs of the policy [TL-10]. */
export interface AlwaysAllowPort {
  addAlwaysAllow(agentId: string, rule: PolicyRuleJson): PolicyRuleJson;
}

export function createRunQueries(service: RunService, policy?: AlwaysAllowPort) {
  const runs = service.read;
  const key = createInspectionKey();

  function requireRun(db: DatabaseSync, runId: string): RunRow {
    const run = getRun(db, runId);
    if (!run) throw new AppError("run_not_found");
    return run;
  }

  /** A foreign or unknown Conversation is 404, never an "idle" answer. */
  function requireConversation(db: DatabaseSync, conversationId: string): void {
    if (!getConversation(db, conversationId)) throw new AppError("conversation_not_found");
  }

  function validated(db: DatabaseSync, agentId: string, run: RunRow): EventEnvelope[] {
    if (run.journal !== "full") return [];
    const v = validateJournal(run, agentId, listEvents(db, run.id));
    if (!v.ok) throw new AppError("journal_corrupt", v.reason);
    return v.events;
  }

  return {
    /** GET …/runs/<run>/events */
    events(agentId: string, runId: string, lastEventId: string | null, signal: AbortSignal) {
      const db = runs.stateDb(agentId);
      const run = requireRun(db, runId);
      const last = parseLastEventId(lastEventId);
      const rec = runs.live(runId, agentId);
      if (rec && last.durable === 0) return liveStream(rec, last.live, signal);
      return durableStream({ run, events: validated(db, agentId, run) }, last.durable);
    },

    /** GET …/runs/<run>/replay?cursor= */
    replay(agentId: string, runId: string, cursorParam: string | null) {
      const cursor = cursorParam === null ? 0 : Number(cursorParam);
      if (
        cursorParam !== null && (!/^\d{1,7}$/.test(cursorParam) || cursor > REPLAY_CURSOR_MAX)
      ) throw new AppError("schema_violation", "cursor");
      const db = runs.stateDb(agentId);
      const run = requireRun(db, runId);
      const events = validated(db, agentId, run);
      const page = events.slice(cursor, cursor + REPLAY_PAGE_MAX);
      const next = cursor + page.length;
      return {
        run_id: run.id,
        state: run.state,
        journal: run.journal,
        events: page,
        next_cursor: next < events.length ? next : null,
        snapshot: run.snapshot === null ? null : JSON.parse(run.snapshot),
      };
    },

    /** GET …/runs/<run>/context */
    context(agentId: string, runId: string) {
      const db = runs.stateDb(agentId);
      const run = requireRun(db, runId);
      const plan = runs.plan(runId);
      if (plan) return inspectPlan(plan, key);
      const summary = PAYLOADS["run.started"].safeParse(JSON.parse(run.started_summary));
      if (!summary.success) throw new AppError("journal_corrupt", "started summary");
      return {
        source: "run_started" as const,
        plan_id: summary.data.plan_id,
        model_id: summary.data.model_id,
        section_count: summary.data.section_count,
        history_count: summary.data.history_count,
        history_omitted: summary.data.history_omitted ?? 0,
        window: summary.data.window,
        budget: summary.data.budget,
        tool_ids: summary.data.tool_ids,
        protocol_features: summary.data.protocol_features,
        keyed_digest: key.keyed(summary.data.plan_digest),
      };
    },

    /** GET …/sessions/<conv>/context-preview */
    async preview(agentId: string, conversationId: string, modelId: string | null) {
      const id = modelId ?? runs.defaultModelId(agentId); // the Agent's default [MB-14]
      let p;
      try {
        p = await runs.prepare(agentId, conversationId, id, true);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        if (err.code === "conversation_not_found" || err.code === "agent_not_found") throw err;
        return { available: false as const, reason: err.code };
      }
      const samples = usageSamples(
        p.db,
        runs.usageScope(id, p.toolset, p.counting.counter.id),
        CONTEXT_CALIBRATION_USAGES,
      );
      return await projectNextTurn(contextInputsOf(p, id, new Date()), samples, p.counting.state);
    },

    /** GET …/sessions/<conv>/preparation */
    preparation(agentId: string, conversationId: string) {
      requireConversation(runs.stateDb(agentId), conversationId);
      const op = runs.preparation(agentId, conversationId);
      const runId = runs.activeRunOf(agentId, conversationId);
      return {
        state: op ? "preparing" as const : runId ? "running" as const : "idle" as const,
        run_id: runId,
        operation_id: op?.id ?? null,
        operation: op ? op.view : null,
      };
    },

    /** POST …/sessions/<conv>/preparation/cancel */
    cancelPreparation(agentId: string, conversationId: string, operationId: string) {
      requireConversation(runs.stateDb(agentId), conversationId);
      return service.cancelPreparation(agentId, conversationId, operationId);
    },

    /** GET …/runs/<run>/capability-audit?offset= */
    audit(agentId: string, runId: string, offsetParam: string | null) {
      const offset = offsetParam === null ? 0 : Number(offsetParam);
      if (offsetParam !== null && (!/^\d{1,5}$/.test(offsetParam))) {
        throw new AppError("schema_violation", "offset");
      }
      const db = runs.stateDb(agentId);
      requireRun(db, runId);
      const rows = capabilityAudit(db, runId, offset, REPLAY_PAGE_MAX + 1);
      // [LC-6] An external runner's accesses, with the first page only.
      const access = offset === 0
        ? listRunnerAccess(db, runId, RUNNER_ACCESS_SHOWN_MAX).map(({ run_id: _, ...r }) => r)
        : [];
      return {
        run_id: runId,
        entries: rows.slice(0, REPLAY_PAGE_MAX),
        next_offset: rows.length > REPLAY_PAGE_MAX ? offset + REPLAY_PAGE_MAX : null,
        ...(access.length > 0 ? { runner_access: access } : {}),
      };
    },

    /** GET …/permissions */
    permissions(agentId: string) {
      const db = runs.stateDb(agentId);
      return {
        pending: pendingPermissions(db, PERMISSIONS_PENDING_MAX).map((r) => ({
          id: r.id,
          run_id: r.run_id,
          call_id: r.call_id,
          tool_id: r.tool_id,
          state: r.state,
          preview: r.preview,
          created_at: r.created_at,
          always_allow: alwaysRuleOf(r.always_rule),
          full_diff_bytes: r.full_diff_bytes,
        })),
      };
    },

    /** GET …/permissions/<id>/diff: the full diff kept one click away [TL-12]. */
    permissionDiff(agentId: string, id: string) {
      const row = permissionFullDiff(runs.stateDb(agentId), id);
      if (!row) throw new AppError("permission_not_found");
      if (row.full_diff === null) throw new AppError("permission_diff_unavailable");
      return { id, tool_id: row.tool_id, diff: row.full_diff };
    },

    /**
     * POST …/permissions/<id>. With `always` [TL-10] the approval's narrowed rule is added to
     * the Agent's policy first; a refusal there (no rule offered, the rule bound, a platform
     * deny) leaves the approval pending and the policy unchanged.
     */
    decide(agentId: string, id: string, decision: "approve" | "deny", always = false) {
      const db = runs.stateDb(agentId);
      const row = getPermission(db, id);
      if (!row || row.state !== "pending") throw new AppError("permission_not_found");
      let added: PolicyRuleJson | undefined;
      if (always) {
        const rule = alwaysRuleOf(row.always_rule);
        if (decision !== "approve" || rule === null || !policy) {
          throw new AppError("policy_always_unavailable");
        }
        added = policy.addAlwaysAllow(agentId, rule);
      }
      if (!decidePermission(db, id, decision === "approve" ? "approved" : "denied", Date.now())) {
        throw new AppError("permission_not_found");
      }
      // Wakes the waiting Run; a Run that already ended expired its rows in its terminal.
      service.approvalDecided(agentId, id, decision);
      const state = decision === "approve" ? "approved" as const : "denied" as const;
      return added ? { id, state, rule_added: added } : { id, state };
    },
  };
}
