/** [UI-3] the Run details timeline model: lanes, seq order, filters, derived facts, stepping. */
import { assertEquals } from "../helpers/assert.ts";
import {
  ALL_LANES,
  buildTimeline,
  deriveFacts,
  kindSegments,
  laneOf,
  stepIndex,
} from "../../ui/lib/timeline.ts";
import type { EventEnvelope } from "../../ui/lib/types.ts";

function ev(seq: number, kind: string, ms = seq * 100): EventEnvelope {
  return {
    seq,
    kind,
    ts: 1_700_000_000_000 + ms,
    payload: { n: seq },
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
  };
}

Deno.test("laneOf sorts kinds into the four lanes", () => {
  const cases: [string, string][] = [
    ["turn.submitted", "user"],
    ["permission.requested", "user"],
    ["run.started", "harness"],
    ["stream.gap", "harness"],
    ["run.completed", "harness"],
    ["model.request.started", "llm"],
    ["model.transport.attempt.finished", "llm"],
    ["assistant.block.completed", "llm"],
    ["tool.call.started", "tool"],
    ["operation.dispatched", "tool"],
  ];
  for (const [kind, lane] of cases) assertEquals(laneOf(kind), lane, kind);
});

Deno.test("buildTimeline orders by seq, drops duplicate seqs and filters by lane and text", () => {
  const events = [
    ev(3, "tool.call.started"),
    ev(1, "run.started"),
    ev(2, "model.request.started"),
    ev(2, "model.request.started"),
  ];
  const all = buildTimeline(events, { lanes: ALL_LANES, text: "" });
  assertEquals(all.map((r) => [r.event.seq, r.lane, r.index]), [[1, "harness", 0], [2, "llm", 1], [
    3,
    "tool",
    2,
  ]]);
  const llm = buildTimeline(events, { lanes: new Set(["llm"]), text: "" });
  assertEquals(llm.map((r) => r.event.seq), [2]);
  const text = buildTimeline(events, { lanes: ALL_LANES, text: "  TOOL " });
  assertEquals(text.map((r) => r.event.seq), [3]);
  assertEquals(buildTimeline(events, { lanes: new Set(), text: "" }), []);
});

Deno.test("deriveFacts reports timing since start, since previous and paired durations", () => {
  const events = [
    ev(1, "run.started", 0),
    ev(2, "model.request.started", 100),
    ev(3, "model.response.finished", 1600),
  ];
  const facts = Object.fromEntries(deriveFacts(events[2], events).map((f) => [f.label, f.value]));
  assertEquals(facts["Lane"], "llm");
  assertEquals(facts["Since run start"], "1.60 s");
  assertEquals(facts["Since previous"], "1.50 s");
  assertEquals(facts["Duration (from #2)"], "1.50 s");
  assertEquals(facts["Payload size"], "7 B");
});

Deno.test("stepIndex clamps to the rows and starts from either end", () => {
  assertEquals(stepIndex(-1, 1, 5), 0);
  assertEquals(stepIndex(-1, -1, 5), 4);
  assertEquals(stepIndex(4, 1, 5), 4);
  assertEquals(stepIndex(0, -1, 5), 0);
  assertEquals(stepIndex(2, 1, 0), -1);
});

Deno.test("stream control events without a seq sort around the journal and are both kept", () => {
  const rows = buildTimeline([
    ev(-1, "stream.snapshot"),
    ev(2, "run.completed"),
    ev(-1, "stream.gap"),
    ev(1, "run.started"),
  ], { lanes: ALL_LANES, text: "" });
  assertEquals(rows.map((r) => r.event.kind), [
    "stream.gap",
    "run.started",
    "run.completed",
    "stream.snapshot",
  ]);
});

Deno.test("event kinds split after each dot so they wrap between words", () => {
  assertEquals(kindSegments("model.transport.attempt.finished"), [
    "model.",
    "transport.",
    "attempt.",
    "finished",
  ]);
  assertEquals(kindSegments("run.started").join(""), "run.started");
  assertEquals(kindSegments("plain"), ["plain"]);
});

Deno.test("[#18] events say when since the Run started and what a tool event touched", async () => {
  const { eventSubject, sinceStart } = await import("../../ui/lib/timeline.ts");
  const env = (seq: number, kind: string, ts: number, payload: Record<string, unknown>) => ({
    seq,
    kind,
    ts,
    payload,
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
  });
  const all = [
    env(1, "run.started", 1000, {}),
    env(2, "tool.call.requested", 1250, {
      call_id: "c1",
      tool_id: "file/read_text",
      args: { path: "notes.md" },
    }),
    env(3, "permission.decided", 2500, {
      permission_id: "p",
      call_id: "c1",
      decision: "approve",
    }),
  ];
  if (sinceStart(all[1], all) !== "+250 ms") throw new Error(sinceStart(all[1], all));
  if (sinceStart(all[2], all) !== "+1.50 s") throw new Error(sinceStart(all[2], all));
  if (eventSubject(all[2], all) !== "file/read_text notes.md") throw new Error("subject");
  if (eventSubject(all[0], all) !== "") throw new Error("no subject for run events");
});
