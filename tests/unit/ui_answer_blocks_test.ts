/**
 * [UI-10, #18] answerSegments(): text blocks in order with a card where each
 * tool call happened; the card folds its completion, approval request and
 * decision (kept as a record), or a policy refusal; live deltas fill blocks
 * still streaming.
 */
import { assertEquals } from "../helpers/assert.ts";
import { answerSegments, cardStatusText, cardSubject } from "../../ui/lib/answer_blocks.ts";
import type { EventEnvelope } from "../../ui/lib/types.ts";

let seq = 0;
function ev(kind: string, payload: Record<string, unknown>, ts = 1000 + seq): EventEnvelope {
  return {
    seq: ++seq,
    kind,
    ts,
    payload,
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
  };
}

Deno.test("a lead block, a tool card and the final block, in seq order", () => {
  seq = 0;
  const events = [
    ev("run.started", {}),
    ev("assistant.block.started", { block: 1 }),
    ev("assistant.block.completed", { block: 1, text: "Let me look." }),
    ev("tool.call.requested", { call_id: "c1", tool_id: "file/read_text", args: { path: "n.md" } }),
    ev("tool.call.completed", {
      call_id: "c1",
      tool_id: "file/read_text",
      outcome: "ok",
      code: null,
      result: "hi",
      projection: "inline",
      elapsed_ms: 3,
    }),
    ev("assistant.block.started", { block: 2 }),
  ];
  const segs = answerSegments([...events].reverse(), new Map([[2, "It says"]]));
  assertEquals(
    segs.map((s) => s.kind === "tool" ? `tool:${s.card.status}` : `${s.block}:${s.text}:${s.live}`),
    [
      "1:Let me look.:false",
      "tool:ok",
      "2:It says:true",
    ],
  );
  const card = segs[1].kind === "tool" ? segs[1].card : null;
  assertEquals([cardSubject(card!.args), cardStatusText(card!)], ["n.md", "✓ 3 ms"]);
});

Deno.test("an approval is a record on its card: asked, then decided with its time", () => {
  seq = 0;
  const base = [
    ev("tool.call.requested", { call_id: "c1", tool_id: "file/write", args: { path: "a" } }),
    ev("permission.requested", {
      permission_id: "p1",
      call_id: "c1",
      tool_id: "file/write",
      preview: "+x",
    }, 5000),
  ];
  const asked = answerSegments(base)[0];
  assertEquals(asked.kind === "tool" && [asked.card.status, asked.card.approval?.decision], [
    "awaiting",
    "pending",
  ]);
  const decided = answerSegments([
    ...base,
    ev("permission.decided", { permission_id: "p1", call_id: "c1", decision: "deny" }, 7000),
  ])[0];
  assertEquals(
    decided.kind === "tool" &&
      [
        decided.card.status,
        decided.card.approval?.decision,
        decided.card.approval?.decidedAt,
        cardStatusText(decided.card),
      ],
    [
      "denied",
      "deny",
      7000,
      "✗ denied",
    ],
  );
});

Deno.test("a policy refusal and a failed call say so; deltas before their block's opening still show", () => {
  seq = 0;
  const segs = answerSegments([
    ev("tool.call.requested", { call_id: "c1", tool_id: "file/write", args: {} }),
    ev("permission.denied", { call_id: "c1", tool_id: "file/write", reason: "policy_deny" }),
    ev("tool.call.requested", { call_id: "c2", tool_id: "file/stat", args: { path: "x" } }),
    ev("tool.call.completed", {
      call_id: "c2",
      outcome: "error",
      code: "file_not_found",
      result: "",
      elapsed_ms: 1,
    }),
  ], new Map([[3, "typing"]]));
  assertEquals(segs.map((s) => s.kind === "tool" ? cardStatusText(s.card) : s.text), [
    "✗ denied",
    "✗ file_not_found",
    "typing",
  ]);
});
