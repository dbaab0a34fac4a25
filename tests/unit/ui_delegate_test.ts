/**
 * [LC-2, UI-11] The delegate card's data: answerSegments() folds the parent's
 * `subagent.status` events into the `agent/delegate` card (steps, pending
 * approval, answer), and pendingApprovals() surfaces the delegate's approval
 * in the parent's Conversation with the delegate Agent's id, until it is
 * decided or the delegation ends.
 */
import { assertEquals } from "../helpers/assert.ts";
import { answerSegments } from "../../ui/lib/answer_blocks.ts";
import { pendingApprovals } from "../../ui/lib/approvals.ts";
import type { EventEnvelope } from "../../ui/lib/types.ts";
import { delegateStatusText } from "../../ui/DelegateCard.ts";

let seq = 0;
function ev(kind: string, payload: Record<string, unknown>): EventEnvelope {
  return {
    seq: ++seq,
    kind,
    ts: 1000 + seq,
    payload,
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
  };
}
const base = {
  call_id: "call-1",
  delegation_id: "d1",
  agent_id: "child-agent",
  conversation_id: "child-conv",
  run_id: "child-run",
  code: null,
};

function story(end: Record<string, unknown> | null): EventEnvelope[] {
  seq = 0;
  const out = [
    ev("run.started", {}),
    ev("tool.call.requested", {
      call_id: "call-1",
      tool_id: "agent/delegate",
      args: { agent_id: "child-agent", message: "do it" },
    }),
    ev("subagent.status", { ...base, agent_name: "Helper", state: "running", elapsed_ms: 1 }),
    ev("subagent.status", { ...base, state: "tool", tool_id: "file/write", elapsed_ms: 2 }),
    ev("subagent.status", {
      ...base,
      state: "awaiting_approval",
      tool_id: "file/write",
      permission_id: "p1",
      preview: "+hello",
      elapsed_ms: 3,
    }),
  ];
  if (end) out.push(ev("subagent.status", { ...base, elapsed_ms: 4000, ...end }));
  return out;
}

function card(events: EventEnvelope[]) {
  const seg = answerSegments(events).find((s) => s.kind === "tool");
  if (!seg || seg.kind !== "tool") throw new Error("no card");
  return seg.card;
}

Deno.test("the delegate card folds the child's steps and its pending approval", () => {
  const c = card(story(null));
  assertEquals(c.subagent?.state, "awaiting_approval");
  assertEquals(c.subagent?.tools, ["file/write"]);
  assertEquals(c.subagent?.pending, {
    permissionId: "p1",
    toolId: "file/write",
    preview: "+hello",
  });
  assertEquals([c.subagent?.agentId, c.subagent?.agentName, c.subagent?.conversationId], [
    "child-agent",
    "Helper",
    "child-conv",
  ]);
  assertEquals(delegateStatusText(c.subagent, c), "waiting for your approval");
});

Deno.test("the delegate card shows the answer, cut or not, and how long it took", () => {
  const c = card(story({ state: "completed", answer: "done", truncated: true }));
  assertEquals([c.subagent?.answer, c.subagent?.truncated, c.subagent?.pending], [
    "done",
    true,
    null,
  ]);
  assertEquals(delegateStatusText(c.subagent, c), "answered after 4.0 s");
  const t = card(story({ state: "timeout", code: "subagent_timeout" }));
  assertEquals([t.subagent?.answer, t.subagent?.code], [null, "subagent_timeout"]);
});

Deno.test("the delegate's approval is pending in the parent's Conversation until decided or ended", () => {
  const run = (events: EventEnvelope[]) => ({
    runId: "r",
    conversationId: "c",
    events,
    terminal: null,
  });
  const asked = pendingApprovals([], [run(story(null))], new Set());
  assertEquals(asked.map((p) => [p.id, p.agentId, p.tool, p.conversationId]), [
    ["p1", "child-agent", "file/write", "c"],
  ]);
  const decided = story({ state: "approval_decided", permission_id: "p1", decision: "approve" });
  assertEquals(pendingApprovals([], [run(decided)], new Set()), []);
  const ended = story({ state: "cancelled", code: "run_cancelled" });
  assertEquals(pendingApprovals([], [run(ended)], new Set()), []);
});
