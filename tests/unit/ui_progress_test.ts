/** [SB-8] a long Turn's progress in the UI: step and tools used, the timeline grouped per model call. */
import { assertEquals } from "../helpers/assert.ts";
import { progressLabel, stepsBySeq, turnProgress } from "../../ui/lib/progress.ts";
import { ALL_LANES, buildTimeline } from "../../ui/lib/timeline.ts";
import type { EventEnvelope } from "../../ui/lib/types.ts";

function ev(seq: number, kind: string, payload: Record<string, unknown> = {}): EventEnvelope {
  return {
    seq,
    kind,
    ts: 1_700_000_000_000 + seq,
    payload,
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
  };
}

/** run.started, then per step a model call and its tool calls. */
function turn(toolsPerStep: number[]): EventEnvelope[] {
  const out = [ev(1, "run.started")];
  for (const n of toolsPerStep) {
    out.push(ev(out.length + 1, "model.request.started", { recovery: 0 }));
    out.push(ev(out.length + 1, "model.response.finished"));
    for (let i = 0; i < n; i++) {
      out.push(ev(out.length + 1, "tool.call.requested"));
      out.push(ev(out.length + 1, "tool.call.completed"));
    }
  }
  return out;
}

Deno.test("turnProgress: step 7 · 5 tools used", () => {
  const events = turn([1, 1, 0, 2, 1, 0, 0]);
  const p = turnProgress(events);
  assertEquals(p, { step: 7, tools: 5 });
  assertEquals(progressLabel(p), "step 7 · 5 tools used");
  assertEquals(progressLabel({ step: 2, tools: 1 }), "step 2 · 1 tool used");
});

Deno.test("turnProgress: a plain answer shows no progress; a recovery request is not a step", () => {
  assertEquals(progressLabel(turnProgress(turn([0]))), null);
  const events = [...turn([1]), ev(10, "model.request.started", { recovery: 1 })];
  assertEquals(turnProgress(events), { step: 1, tools: 1 });
  const withRecovery = [...turn([1, 0]), ev(20, "model.request.started", { recovery: 1 })];
  assertEquals(turnProgress(withRecovery).step, 2);
});

Deno.test("stepsBySeq and buildTimeline group events under the model call they follow", () => {
  const events = turn([2, 1]);
  const steps = stepsBySeq(events);
  assertEquals(steps.get(1), 0, "run.started comes before the first call");
  const rows = buildTimeline(events, { lanes: ALL_LANES, text: "" });
  assertEquals(rows.map((r) => r.step), [0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]);
  // Filtered rows keep their step.
  const tools = buildTimeline(events, { lanes: new Set(["tool"]), text: "" });
  assertEquals(tools.map((r) => r.step), [1, 1, 1, 1, 2, 2]);
});
