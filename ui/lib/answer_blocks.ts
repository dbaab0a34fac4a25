/**
 * The answer of one Turn as the operator reads it [UI-10, #18]: every text
 * block in order with a tool card where each tool call happened, folded from
 * the Run's canonical events (live or replayed) plus the live delta text of
 * blocks still streaming. Pure; no DOM.
 *
 * How this maps to model history [CV-5]: a Run makes up to 8 model calls and
 * each call may write one text block (`assistant.block.*`, `block` = the call
 * number). Only the LAST block — the one that ended the Turn — is committed
 * as the Turn's `assistant_message`, and only that enters later model
 * history. Earlier blocks (text the model wrote before a tool call) and tool
 * cards are shown from the journal but are not history; within the Turn the
 * model saw them as its own earlier messages and the tool results.
 */
import { fmtDuration } from "./format.ts";
import type { EventEnvelope } from "./types.ts";

export type ToolStatus = "running" | "awaiting" | "ok" | "error" | "denied";

export interface ApprovalRecord {
  permissionId: string;
  decision: "pending" | "approve" | "deny" | "expired";
  preview: string;
  /** When it was asked / decided (ms since epoch), when known. */
  askedAt: number | null;
  decidedAt: number | null;
}

/** A delegation's status as `subagent.status` events on the parent's Run tell it [LC-2]. */
export interface SubagentView {
  delegationId: string;
  agentId: string;
  /** The delegate's display name, when the status named it. */
  agentName: string | null;
  conversationId: string;
  runId: string;
  /** The latest state: running, tool, awaiting_approval, approval_decided, or a terminal one. */
  state: string;
  /** The child's tool steps in order (tool ids). */
  tools: string[];
  /** The child's pending approval, while it waits. */
  pending: { permissionId: string; toolId: string; preview: string } | null;
  answer: string | null;
  truncated: boolean;
  code: string | null;
  elapsedMs: number | null;
}

export interface ToolCardModel {
  callId: string;
  toolId: string;
  args: Record<string, unknown>;
  status: ToolStatus;
  code: string | null;
  result: string | null;
  projection: string | null;
  elapsedMs: number | null;
  approval: ApprovalRecord | null;
  /** A policy refusal without asking (`permission.denied`). */
  deniedReason: string | null;
  /** The Run and Agent of the call (for the exec views' own reads) [EX-4]. */
  runId: string;
  agentId: string;
  /** Live output of a running command (`tool.output.delta`), else null [EX-4]. */
  liveOutput: string | null;
  /** The child Run of an `agent/delegate` call, once it started [LC-2]. */
  subagent?: SubagentView | null;
}

export type AnswerSegment =
  | { kind: "text"; block: number; text: string; live: boolean }
  | { kind: "tool"; card: ToolCardModel };

function s(v: unknown): string {
  return typeof v === "string" ? v : "";
}
function n(v: unknown): number | null {
  const x = typeof v === "string" ? Number(v) : v;
  return typeof x === "number" && Number.isFinite(x) ? x : null;
}

/**
 * Segments of an answer in seq order. `liveBlocks` holds the delta text of
 * blocks not completed yet (by block number). Stream control events and
 * events without seq are ignored.
 */
export function answerSegments(
  events: readonly EventEnvelope[],
  liveBlocks: ReadonlyMap<number, string> = new Map(),
  liveOutput: ReadonlyMap<string, string> = new Map(),
): AnswerSegment[] {
  const out: AnswerSegment[] = [];
  const blocks = new Map<number, { kind: "text"; block: number; text: string; live: boolean }>();
  const cards = new Map<string, ToolCardModel>();
  const byPermission = new Map<string, ToolCardModel>();
  const seen = new Set<number>();
  const sorted = [...events].filter((e) => e.seq >= 0).sort((a, b) => a.seq - b.seq);
  const textBlock = (block: number) => {
    let b = blocks.get(block);
    if (!b) {
      b = { kind: "text", block, text: liveBlocks.get(block) ?? "", live: true };
      blocks.set(block, b);
      out.push(b);
    }
    return b;
  };
  for (const e of sorted) {
    if (seen.has(e.seq)) continue;
    seen.add(e.seq);
    const p = e.payload;
    switch (e.kind) {
      case "assistant.block.started":
        if (n(p.block) !== null) textBlock(n(p.block)!);
        break;
      case "assistant.block.completed": {
        if (n(p.block) === null) break;
        const b = textBlock(n(p.block)!);
        b.text = s(p.text);
        b.live = false;
        break;
      }
      case "tool.call.requested": {
        const card: ToolCardModel = {
          callId: s(p.call_id),
          toolId: s(p.tool_id) || "tool",
          args: p.args !== null && typeof p.args === "object"
            ? p.args as Record<string, unknown>
            : {},
          status: "running",
          code: null,
          result: null,
          projection: null,
          elapsedMs: null,
          approval: null,
          deniedReason: null,
          runId: e.run_id,
          agentId: e.agent_id,
          liveOutput: liveOutput.get(s(p.call_id)) ?? null,
        };
        cards.set(card.callId, card);
        out.push({ kind: "tool", card });
        break;
      }
      case "tool.call.completed": {
        const card = cards.get(s(p.call_id));
        if (!card) break;
        card.status = card.status === "denied" ? "denied" : p.outcome === "ok" ? "ok" : "error";
        card.code = s(p.code) || null;
        card.result = s(p.result);
        card.projection = s(p.projection) || null;
        card.elapsedMs = n(p.elapsed_ms);
        break;
      }
      case "permission.requested": {
        const card = cards.get(s(p.call_id));
        if (!card) break;
        card.status = "awaiting";
        card.approval = {
          permissionId: s(p.permission_id),
          decision: "pending",
          preview: s(p.preview),
          askedAt: n(e.ts),
          decidedAt: null,
        };
        byPermission.set(card.approval.permissionId, card);
        break;
      }
      case "permission.decided": {
        const card = byPermission.get(s(p.permission_id)) ?? cards.get(s(p.call_id));
        if (!card?.approval) break;
        const d = s(p.decision);
        card.approval.decision = d === "approve" || d === "deny" || d === "expired" ? d : "expired";
        card.approval.decidedAt = n(e.ts);
        if (card.status === "awaiting") card.status = d === "approve" ? "running" : "denied";
        break;
      }
      case "subagent.status": {
        const card = cards.get(s(p.call_id));
        if (!card) break;
        const v: SubagentView = card.subagent ?? {
          delegationId: s(p.delegation_id),
          agentId: s(p.agent_id),
          agentName: null,
          conversationId: s(p.conversation_id),
          runId: s(p.run_id),
          state: "running",
          tools: [],
          pending: null,
          answer: null,
          truncated: false,
          code: null,
          elapsedMs: null,
        };
        v.state = s(p.state) || v.state;
        if (s(p.agent_name)) v.agentName = s(p.agent_name);
        v.elapsedMs = n(p.elapsed_ms);
        v.code = s(p.code) || null;
        if (v.state === "tool" && s(p.tool_id)) v.tools = [...v.tools, s(p.tool_id)];
        if (v.state === "awaiting_approval") {
          v.pending = {
            permissionId: s(p.permission_id),
            toolId: s(p.tool_id),
            preview: s(p.preview),
          };
        } else if (v.state !== "running" && v.state !== "tool") v.pending = null;
        if (v.state === "completed") {
          v.answer = s(p.answer);
          v.truncated = p.truncated === true;
        }
        card.subagent = v;
        break;
      }
      case "permission.denied": {
        const card = cards.get(s(p.call_id));
        if (!card) break;
        card.status = "denied";
        card.deniedReason = s(p.reason) || "policy_deny";
        break;
      }
    }
  }
  // Blocks that streamed before their (deferred) opening event arrived.
  for (const [block, text] of liveBlocks) if (!blocks.has(block) && text) textBlock(block);
  return out;
}

/** The path-like argument a card names in its title ("notes.md", "*.ts"). */
export function cardSubject(args: Record<string, unknown>): string {
  for (const k of ["path", "pattern", "command", "query", "url", "name"]) {
    const v = args[k];
    if (typeof v === "string" && v !== "") return v;
  }
  // exec/command: the program and its arguments, as one line (the card shows them in full).
  if (Array.isArray(args.argv)) return args.argv.map(String).join(" ");
  return "";
}

/** "✓ 3 ms", "✗ file_not_found", "waiting for approval"… — the collapsed card's status. */
export function cardStatusText(c: ToolCardModel): string {
  switch (c.status) {
    case "ok":
      return c.elapsedMs === null ? "✓" : `✓ ${fmtDuration(c.elapsedMs)}`;
    case "error":
      return `✗ ${c.code ?? "error"}`;
    case "denied":
      return c.approval?.decision === "expired" ? "✗ approval expired" : "✗ denied";
    case "awaiting":
      return "waiting for approval";
    default:
      return "running…";
  }
}
