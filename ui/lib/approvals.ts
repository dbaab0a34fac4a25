/**
 * Pending approvals shown inline above the composer [UI-4, TL-2], derived
 * without polling: the durable list fetched once when an Agent is attached
 * (or the page reloads), folded with the canonical `permission.requested` /
 * `permission.decided` events each watched Run's SSE stream carries. A Run
 * that reached its terminal event has no pending approval left (its rows
 * expire with it), and an approval this browser just decided disappears at
 * once, before its `permission.decided` event arrives.
 */
import { PolicyRuleSchema } from "../../runtime/protocol/api.ts";
import type { EventEnvelope, PendingPermission, PolicyRule } from "./types.ts";

/** What of a watched Run the fold reads (a RunView satisfies it). */
export interface ApprovalSource {
  runId: string;
  conversationId: string;
  events: readonly EventEnvelope[];
  terminal: EventEnvelope | null;
}

function text(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** The streamed "Always allow" rule, when it is an allow rule of the server's shape. */
function ruleOf(v: unknown): PolicyRule | null {
  const r = PolicyRuleSchema.safeParse(v);
  return r.success && r.data.decision === "allow" ? r.data : null;
}

/**
 * The approvals still pending: `fetched` (durable state at attach) plus every
 * streamed request, minus streamed decisions, finished Runs and `dismissed`
 * ids. Order: fetched first, then streamed requests in seq order.
 */
export function pendingApprovals(
  fetched: readonly PendingPermission[],
  runs: Iterable<ApprovalSource>,
  dismissed: ReadonlySet<string>,
): PendingPermission[] {
  const byId = new Map<string, PendingPermission>();
  for (const p of fetched) byId.set(p.id, p);
  for (const run of runs) {
    const events = [...run.events].sort((a, b) => a.seq - b.seq);
    for (const e of events) {
      const id = text(e.payload.permission_id);
      if (id === "") continue;
      if (e.kind === "permission.requested" && !byId.has(id)) {
        byId.set(id, {
          id,
          runId: run.runId,
          conversationId: run.conversationId,
          tool: text(e.payload.tool_id) || "tool",
          preview: text(e.payload.preview),
          diff: "",
          alwaysAllow: ruleOf(e.payload.always_allow),
          fullDiffBytes: typeof e.payload.full_diff_bytes === "number"
            ? e.payload.full_diff_bytes
            : null,
        });
      } else if (e.kind === "permission.decided") byId.delete(id);
    }
    foldDelegateApprovals(run, events, byId);
    if (run.terminal !== null) {
      for (const [id, p] of byId) if (p.runId === run.runId) byId.delete(id);
    }
  }
  return [...byId.values()].filter((p) => !dismissed.has(p.id));
}

/**
 * [LC-2] A delegate's approval, surfaced on the parent's Run as `subagent.status`: pending from
 * `awaiting_approval` until `approval_decided` or the delegation's end; decided with the
 * delegate Agent's permission route (its `agentId`). The parent's terminal removes it above.
 */
function foldDelegateApprovals(
  run: ApprovalSource,
  events: readonly EventEnvelope[],
  byId: Map<string, PendingPermission>,
): void {
  const open = new Map<string, string>(); // delegation → its pending permission id
  for (const e of events) {
    if (e.kind !== "subagent.status") continue;
    const p = e.payload;
    const delegation = text(p.delegation_id);
    const state = text(p.state);
    const prior = open.get(delegation);
    if (prior !== undefined && state !== "tool" && state !== "running") {
      byId.delete(prior);
      open.delete(delegation);
    }
    if (state === "awaiting_approval" && text(p.permission_id) !== "") {
      const id = text(p.permission_id);
      byId.set(id, {
        id,
        runId: run.runId,
        conversationId: run.conversationId,
        tool: text(p.tool_id) || "tool",
        preview: `Asked by the delegate (Agent ${text(p.agent_id)}):\n${text(p.preview)}`,
        diff: "",
        // Neither "always allow" nor the full diff: both would act on the open (parent) Agent.
        alwaysAllow: null,
        fullDiffBytes: null,
        agentId: text(p.agent_id),
      });
      open.set(delegation, id);
    }
  }
}

/** Approvals that belong to the open Conversation (by id, or by a Run of one of its Turns). */
export function approvalsFor(
  all: readonly PendingPermission[],
  conversationId: string | null,
  runIds: ReadonlySet<string>,
): PendingPermission[] {
  return all.filter((p) =>
    (conversationId !== null && p.conversationId === conversationId) ||
    (p.runId !== null && runIds.has(p.runId))
  );
}
