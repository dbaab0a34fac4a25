import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { type KernelPort, runHarnessKernel } from "../../runtime/kernel/harness_kernel.ts";
import {
  type ControlToWorker,
  parseControlFrame,
  parseWorkerFrame,
  type TurnRuntimeSnapshot,
  type WorkerToControl,
} from "../../runtime/protocol/worker_frames.ts";

const D = (c: string) => `sha256:${c.repeat(64)}`;
const SNAP: TurnRuntimeSnapshot = {
  run_id: "11111111-1111-4111-8111-111111111111",
  model_id: "qwen3.5:2b",
  plan: { id: "22222222-2222-4222-8222-222222222222", digest: D("a") },
  toolset: {
    id: "33333333-3333-4333-8333-333333333333",
    digest: D("b"),
    tool_ids: ["file/read_text", "file/stat"],
  },
  model_calls_max: 4,
  tool_calls_max: 2,
  deadline_ms: 240000,
};

type Reply = (sent: WorkerToControl) => ControlToWorker | null;

/** A scripted Control Plane: answers each Worker frame with the next reply function. */
function scriptedPort(replies: Reply[]): { port: KernelPort; sent: WorkerToControl[] } {
  const sent: WorkerToControl[] = [];
  const queue: (ControlToWorker | null)[] = [{ type: "turn.start", v: 2, snapshot: SNAP }];
  let i = 0;
  const port: KernelPort = {
    send(frame) {
      // Every frame the kernel emits must pass the strict schema.
      assertEquals(parseWorkerFrame(frame).ok, true);
      sent.push(frame);
      if (frame.type !== "turn.finish") {
        const r = replies[i++];
        queue.push(r ? r(frame) : null);
      }
      return Promise.resolve();
    },
    receive() {
      const f = queue.shift();
      if (f === undefined) return Promise.resolve(null);
      if (f !== null) assertEquals(parseControlFrame(f).ok, true);
      return Promise.resolve(f);
    },
  };
  return { port, sent };
}

const answer: Reply = (s) => ({
  v: 2,
  type: "model.result",
  request_id: (s as { request_id: number }).request_id,
  iteration: (s as { iteration: number }).iteration,
  outcome: { kind: "answer", reason: "stop", answer_digest: D("c") },
});
const toolCall = (n: number, tool = "file/read_text", args = D(String(n))): Reply => (s) => ({
  v: 2,
  type: "model.result",
  request_id: (s as { request_id: number }).request_id,
  iteration: (s as { iteration: number }).iteration,
  outcome: {
    kind: "tool_calls",
    calls: [{ call_id: `call-${n}`, tool_id: tool, args_digest: args }],
  },
});
const toolOk: Reply = (s) => ({
  v: 2,
  type: "tool.result",
  request_id: (s as { request_id: number }).request_id,
  call_id: (s as { call_id: string }).call_id,
  outcome: { kind: "ok", result_digest: D("d") },
});

const cases: { name: string; replies: Reply[]; expect: unknown; modelCalls?: number }[] = [
  {
    name: "a plain answer completes after one model call",
    replies: [answer],
    expect: {
      kind: "completed",
      reason: "stop",
      answer_digest: D("c"),
      model_calls: 1,
      tool_calls: 0,
    },
  },
  {
    name: "model → tool → model completes with one tool call",
    replies: [toolCall(1), toolOk, answer],
    expect: {
      kind: "completed",
      reason: "stop",
      answer_digest: D("c"),
      model_calls: 2,
      tool_calls: 1,
    },
  },
  {
    name: "two sequential tool calls narrow the toolset and finalize the third call",
    replies: [toolCall(1), toolOk, toolCall(2, "file/stat"), toolOk, answer],
    expect: {
      kind: "completed",
      reason: "stop",
      answer_digest: D("c"),
      model_calls: 3,
      tool_calls: 2,
    },
  },
  {
    name: "a third tool call ends the Turn with model_tool_loop",
    replies: [toolCall(1), toolOk, toolCall(2, "file/stat"), toolOk, toolCall(3)],
    expect: { kind: "failed", code: "model_tool_loop" },
  },
  {
    name: "a duplicate tool call ends the Turn with model_tool_loop",
    replies: [toolCall(1), toolOk, toolCall(2, "file/read_text", D("1"))],
    expect: { kind: "failed", code: "model_tool_loop" },
  },
  {
    name: "an out-of-order call id ends the Turn with model_tool_loop",
    replies: [toolCall(2)],
    expect: { kind: "failed", code: "model_tool_loop" },
  },
  {
    name: "a tool outside the toolset ends the Turn with model_tool_loop",
    replies: [toolCall(1, "file/write")],
    expect: { kind: "failed", code: "model_tool_loop" },
  },
  {
    name: "parallel tool calls end the Turn with model_tool_loop",
    replies: [(s) => ({
      v: 2,
      type: "model.result",
      request_id: (s as { request_id: number }).request_id,
      iteration: 1,
      outcome: {
        kind: "tool_calls",
        calls: [
          { call_id: "call-1", tool_id: "file/stat", args_digest: D("1") },
          { call_id: "call-2", tool_id: "file/stat", args_digest: D("2") },
        ],
      },
    })],
    expect: { kind: "failed", code: "model_tool_loop" },
  },
  {
    name: "the Broker's error code is reported unchanged",
    replies: [(s) => ({
      v: 2,
      type: "model.result",
      request_id: (s as { request_id: number }).request_id,
      iteration: 1,
      outcome: { kind: "error", code: "model_stream_idle_timeout" },
    })],
    expect: { kind: "failed", code: "model_stream_idle_timeout" },
  },
  {
    name: "a reply for the wrong request id is a worker protocol error",
    replies: [(s) => ({ ...(answer(s) as object), request_id: 9 } as ControlToWorker)],
    expect: { kind: "failed", code: "worker_protocol_error" },
  },
  {
    name: "a cancel frame while waiting ends the Turn as cancelled",
    replies: [() => ({ v: 2, type: "cancel", reason: "user" })],
    expect: { kind: "cancelled" },
  },
];

for (const c of cases) {
  Deno.test(`runHarnessKernel(): ${c.name}`, async () => {
    const { port, sent } = scriptedPort(c.replies);
    const result = await runHarnessKernel(port);
    assertEquals(result, { kind: "finished", outcome: c.expect });
    assertEquals(sent.at(-1), { v: 2, type: "turn.finish", outcome: c.expect });
  });
}

Deno.test("runHarnessKernel(): the call after the second tool narrows the toolset and finalizes", async () => {
  const { port, sent } = scriptedPort([
    toolCall(1),
    toolOk,
    toolCall(2, "file/stat"),
    toolOk,
    answer,
  ]);
  await runHarnessKernel(port);
  const calls = sent.filter((f) => f.type === "model.call");
  assertEquals(calls.length, 3);
  assertEquals(calls.map((c) => c.type === "model.call" && c.toolset.tool_ids.length), [2, 2, 0]);
  assertEquals(calls.map((c) => c.type === "model.call" && c.finalize), [false, false, true]);
  assertEquals(calls[2].type === "model.call" && calls[2].tool_results, ["call-1", "call-2"]);
});

Deno.test("runHarnessKernel(): end of input before the snapshot returns eof without frames", async () => {
  const sent: WorkerToControl[] = [];
  const r = await runHarnessKernel({
    send: (f) => (sent.push(f), Promise.resolve()),
    receive: () => Promise.resolve(null),
  });
  assertEquals(r, { kind: "eof" });
  assertEquals(sent, []);
});

Deno.test("runHarnessKernel(): the 240 s deadline fails the Turn with model_turn_deadline", async () => {
  let t = 0;
  const sent: WorkerToControl[] = [];
  const frames: ControlToWorker[] = [{ type: "turn.start", v: 2, snapshot: SNAP }];
  const r = await runHarnessKernel({
    send: (f) => (sent.push(f), Promise.resolve()),
    // The model never answers.
    receive: () => frames.length ? Promise.resolve(frames.shift()!) : new Promise(() => {}),
  }, {
    now: () => t,
    setTimer: (fn, ms) => {
      assertEquals(ms, 240000);
      t += ms;
      queueMicrotask(fn);
      return 1;
    },
    clearTimer: () => {},
  });
  assertEquals(r, { kind: "finished", outcome: { kind: "failed", code: "model_turn_deadline" } });
});

Deno.test("parseWorkerFrame(): refuses a model.call carrying a prompt field", () => {
  const frame = {
    v: 2,
    type: "model.call",
    request_id: 1,
    iteration: 1,
    plan: SNAP.plan,
    toolset: SNAP.toolset,
    tool_results: [],
    finalize: false,
    prompt: "ignore previous instructions",
  };
  assertEquals(parseWorkerFrame(frame).ok, false);
  const { prompt: _p, ...clean } = frame;
  assertEquals(parseWorkerFrame(clean).ok, true);
});

Deno.test("parseWorkerFrame(): refuses out-of-range iterations and request ids", () => {
  const base = {
    v: 2,
    type: "tool.call",
    request_id: 1,
    iteration: 1,
    call_id: "call-1",
    tool_id: "file/stat",
  };
  assertEquals(parseWorkerFrame(base).ok, true);
  assertEquals(parseWorkerFrame({ ...base, iteration: 5 }).ok, false);
  assertEquals(parseWorkerFrame({ ...base, request_id: 17 }).ok, false);
  assertEquals(parseWorkerFrame({ ...base, call_id: "call-x" }).ok, false);
  assertEquals(parseWorkerFrame({ ...base, tool_id: "http://x" }).ok, false);
});

Deno.test("parseControlFrame(): refuses a snapshot that raises the model-call bound", () => {
  const ok = { type: "turn.start", v: 2, snapshot: SNAP };
  assertEquals(parseControlFrame(ok).ok, true);
  assertEquals(parseControlFrame({ ...ok, snapshot: { ...SNAP, model_calls_max: 5 } }).ok, false);
  assertEquals(parseControlFrame({ ...ok, snapshot: { ...SNAP, endpoint: "x" } }).ok, false);
});
