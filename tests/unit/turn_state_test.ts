/**
 * The turn driver's reducer against the kernel's own table
 * (tests/helpers/turn_table.ts): the real HarnessKernel and the pure reducer
 * of runtime/runs/turn_state.ts play each row against each other, in
 * process, with every frame through the strict IPC schemas; the reducer must
 * reach the terminal the kernel reports, and execute nothing it refused.
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { runHarnessKernel } from "../../runtime/kernel/harness_kernel.ts";
import type { ToolCall } from "../../runtime/model/types.ts";
import {
  type ControlToWorker,
  parseControlFrame,
  parseWorkerFrame,
  type TurnRuntimeSnapshot,
} from "../../runtime/protocol/worker_frames.ts";
import type { Terminal } from "../../runtime/runs/run_recorder.ts";
import { answerDigest } from "../../runtime/runs/turn_context.ts";
import {
  INITIAL_TURN_STATE,
  type ModelEffect,
  onModelResult,
  onToolResult,
  onWorkerFrame,
  type TurnState,
} from "../../runtime/runs/turn_state.ts";
import { MODEL_RESULT_CALLS_MAX } from "../../runtime/limits.ts";
import { D, type ModelStep, SNAP, TURN_TABLE } from "../helpers/turn_table.ts";

const ENV = { aborted: null, pastDeadline: false };

function effectOf(step: ModelStep | undefined, callNo: number): ModelEffect {
  if (step === undefined) throw new Error("the kernel asked for a model call the row has not");
  if ("answer" in step) {
    return {
      kind: "completed",
      callNo,
      content: "the answer",
      reason: "stop",
      toolCalls: [],
      blockOpen: true,
    };
  }
  if ("error" in step) return { kind: "failed", code: step.error };
  const toolCalls: ToolCall[] = step.calls.map((c) => ({
    id: "x",
    name: c.tool.replace("/", "__"),
    arguments: { arg: c.arg },
  }));
  return { kind: "completed", callNo, content: "", reason: "stop", toolCalls, blockOpen: false };
}

/** Plays one row: kernel ⇄ reducer. Returns the reducer's terminal and the executed call ids. */
async function play(steps: ModelStep[], snap: TurnRuntimeSnapshot) {
  let s: TurnState = INITIAL_TURN_STATE;
  const toWorker: ControlToWorker[] = [{ v: 2, type: "turn.start", snapshot: snap }];
  const executed: string[] = [];
  let terminal: Terminal | null = null;
  let model = 0;
  const kernel = await runHarnessKernel({
    send(frame) {
      ok(parseWorkerFrame(frame).ok, JSON.stringify(frame));
      const [after, next] = onWorkerFrame(s, frame, snap, ENV);
      s = after;
      if (next.do === "end") terminal = next.terminal;
      else if (next.do === "reply") toWorker.push(next.frame);
      else if (next.do === "tool") {
        executed.push(next.pending.ref.call_id);
        const [t, reply] = onToolResult(s, next.requestId, next.pending, {
          ok: true,
          digest: D("d"),
          code: null,
          fatal: null,
        });
        s = t;
        toWorker.push(reply);
      } else {
        model++;
        const [t, reply] = onModelResult(s, next.requestId, snap, effectOf(steps.shift(), model));
        s = t;
        if (reply) toWorker.push(reply);
      }
      return Promise.resolve();
    },
    receive() {
      const f = toWorker.shift() ?? null;
      if (f) ok(parseControlFrame(f).ok, JSON.stringify(f));
      return Promise.resolve(f);
    },
  });
  return { kernel, terminal: terminal as Terminal | null, executed, left: steps.length };
}

for (const c of TURN_TABLE) {
  Deno.test(`turn reducer against the kernel: ${c.name}`, async () => {
    const snap = { ...SNAP, ...c.limits };
    const { kernel, terminal, executed, left } = await play([...c.steps], snap);
    const e = c.expect;
    if (e.kind === "completed") {
      const want = { ...e, answer_digest: answerDigest("the answer") };
      assertEquals(kernel, { kind: "finished", outcome: want });
      assertEquals(terminal, {
        state: "completed",
        answer: { block: e.model_calls, text: "the answer", reason: "stop" },
        modelCalls: e.model_calls,
        toolCalls: e.tool_calls,
        blockOpen: true,
      });
      assertEquals(executed.length, e.tool_calls);
    } else if (e.kind === "failed") {
      assertEquals(kernel, { kind: "finished", outcome: e });
      const stage = "model";
      assertEquals(terminal, { state: "failed", code: e.code, stage });
    }
    assertEquals(left, 0, "every scripted model answer was asked for");
    // Nothing refused ran: the executed calls are exactly the accepted ones, in order.
    assertEquals(executed, executed.map((_, i) => `call-${i + 1}`));
  });
}

Deno.test("turn reducer: a refused response executes none of its calls", async () => {
  const steps: ModelStep[] = [{
    calls: [{ tool: "file/read_text", arg: 1 }, { tool: "file/write", arg: 2 }],
  }];
  const { terminal, executed } = await play(steps, SNAP);
  assertEquals(terminal, { state: "failed", code: "model_tool_loop", stage: "model" });
  assertEquals(executed, []);
});

Deno.test("turn reducer: more calls than a frame can name are refused by the Control Plane itself", async () => {
  const calls = Array.from({ length: MODEL_RESULT_CALLS_MAX + 1 }, (_, i) => ({
    tool: "file/read_text",
    arg: i + 1,
  }));
  const { kernel, terminal, executed } = await play([{ calls }], SNAP);
  // The Worker only hears the Control Plane's code, never a frame it could not parse.
  assertEquals(kernel, { kind: "finished", outcome: { kind: "failed", code: "model_tool_loop" } });
  assertEquals(terminal, { state: "failed", code: "model_tool_loop", stage: "model" });
  assertEquals(executed, []);
});
