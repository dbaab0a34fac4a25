/**
 * The table of Turn shapes both sides of the loop are judged on: the
 * HarnessKernel (tests/unit/harness_kernel_test.ts) and the turn driver's
 * reducer (tests/unit/turn_state_test.ts) must reach the same outcome for
 * every row. A row is what the model answers, call by call; the bounds come
 * from runtime/limits.ts, so each one is hit at the limit and one past it.
 */
import {
  RUN_DEADLINE_MS,
  WORKER_CALLS_PER_RESPONSE_MAX,
  WORKER_IDENTICAL_CALLS_MAX,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../../runtime/limits.ts";
import type { TurnFinish, TurnRuntimeSnapshot } from "../../runtime/protocol/worker_frames.ts";

export const D = (c: string) => `sha256:${c.repeat(64)}`;

export const SNAP: TurnRuntimeSnapshot = {
  run_id: "11111111-1111-4111-8111-111111111111",
  model_id: "qwen3.5:2b",
  plan: { id: "22222222-2222-4222-8222-222222222222", digest: D("a") },
  toolset: {
    id: "33333333-3333-4333-8333-333333333333",
    digest: D("b"),
    tool_ids: ["file/read_text", "file/stat"],
  },
  model_calls_max: WORKER_MODEL_CALLS_MAX,
  tool_calls_max: WORKER_TOOL_CALLS_MAX,
  deadline_ms: RUN_DEADLINE_MS,
};

/** One tool call the model makes: a tool and a tag that stands for its arguments. */
export interface TableCall {
  tool: string;
  arg: number;
}

/** What the model answers to one call. */
export type ModelStep =
  | { answer: true }
  | { calls: TableCall[] }
  | { error: "model_stream_idle_timeout" };

export interface TurnCase {
  name: string;
  steps: ModelStep[];
  /** The snapshot's bounds, when lower than the defaults (an Agent's own limits). */
  limits?: { model_calls_max?: number; tool_calls_max?: number };
  expect: TurnFinish;
}

const read = (arg: number): TableCall => ({ tool: "file/read_text", arg });
const one = (arg: number): ModelStep => ({ calls: [read(arg)] });
const many = (from: number, n: number): TableCall[] =>
  Array.from({ length: n }, (_, i) => read(from + i));
const ANSWER: ModelStep = { answer: true };
const LOOP: TurnFinish = { kind: "failed", code: "model_tool_loop" };
const completed = (model_calls: number, tool_calls: number): TurnFinish => ({
  kind: "completed",
  reason: "stop",
  answer_digest: "",
  model_calls,
  tool_calls,
});

/** `n` sequential single-call responses with distinct arguments. */
const sequential = (n: number, from = 1): ModelStep[] =>
  Array.from({ length: n }, (_, i) => one(from + i));

/** Packs `n` distinct calls into responses of at most the per-response bound. */
function packed(n: number): ModelStep[] {
  const out: ModelStep[] = [];
  for (let i = 0; i < n; i += WORKER_CALLS_PER_RESPONSE_MAX) {
    out.push({ calls: many(i + 1, Math.min(WORKER_CALLS_PER_RESPONSE_MAX, n - i)) });
  }
  return out;
}

const TOOLS = WORKER_TOOL_CALLS_MAX;
const PER = WORKER_CALLS_PER_RESPONSE_MAX;
const SAME = WORKER_IDENTICAL_CALLS_MAX;

/** `answer_digest: ""` in an expectation means "the digest of the scripted answer". */
export const TURN_TABLE: TurnCase[] = [
  {
    name: "a plain answer completes after one model call",
    steps: [ANSWER],
    expect: completed(1, 0),
  },
  {
    name: "model → tool → model completes with one tool call",
    steps: [one(1), ANSWER],
    expect: completed(2, 1),
  },
  {
    name: `${TOOLS} tool calls (the budget) then the finalized answer complete`,
    steps: [...sequential(TOOLS), ANSWER],
    expect: completed(TOOLS + 1, TOOLS),
  },
  {
    name: `a call after the ${TOOLS}th (the finalization marker) ends the Turn model_tool_loop`,
    steps: [...sequential(TOOLS), one(TOOLS + 1)],
    expect: LOOP,
  },
  {
    name: `${TOOLS} tool calls packed ${PER} per response complete`,
    steps: [...packed(TOOLS), ANSWER],
    expect: completed(Math.ceil(TOOLS / PER) + 1, TOOLS),
  },
  {
    name: `${PER} calls in one response run; ${PER + 1} end the Turn model_tool_loop`,
    steps: [{ calls: many(1, PER + 1) }],
    expect: LOOP,
  },
  {
    name: `the identical call runs ${SAME} time(s); once more is model_tool_loop`,
    steps: [...Array.from({ length: SAME }, () => one(7)), one(7)],
    expect: LOOP,
  },
  {
    name: `the identical call ${SAME} time(s) then an answer completes`,
    steps: [...Array.from({ length: Math.min(SAME, TOOLS) }, () => one(7)), ANSWER],
    expect: completed(Math.min(SAME, TOOLS) + 1, Math.min(SAME, TOOLS)),
  },
  {
    name: "a tool outside the toolset ends the Turn with model_tool_loop",
    steps: [{ calls: [{ tool: "file/write", arg: 1 }] }],
    expect: LOOP,
  },
  {
    name: "the Broker's error code is reported unchanged",
    steps: [{ error: "model_stream_idle_timeout" }],
    expect: { kind: "failed", code: "model_stream_idle_timeout" },
  },
  {
    name: "an Agent's lower tool budget narrows the toolset sooner",
    limits: { tool_calls_max: 1 },
    steps: [one(1), one(2)],
    expect: LOOP,
  },
  {
    name: "an Agent's lower model-call budget finalizes its last call: a tool call there loops",
    limits: { model_calls_max: 2 },
    steps: [one(1), one(2)],
    expect: LOOP,
  },
  {
    name: "an Agent's model-call bound of 8: seven tool steps and the answer on call 8 complete",
    limits: { model_calls_max: 8 },
    steps: [...sequential(7), ANSWER],
    expect: completed(8, 7),
  },
  {
    name: "an Agent's model-call bound of 8: a tool call on call 8 (narrowed) is model_tool_loop",
    limits: { model_calls_max: 8 },
    steps: sequential(8),
    expect: LOOP,
  },
  {
    name: "an Agent's lower model-call budget still lets its last call answer",
    limits: { model_calls_max: 2 },
    steps: [one(1), ANSWER],
    expect: completed(2, 1),
  },
];

/** A response that would run past the tool budget is refused whole. */
if (PER > 1 && TOOLS > 1) {
  TURN_TABLE.push({
    name: `a response that would make call ${TOOLS + 1} is refused whole`,
    steps: [...sequential(TOOLS - 1), { calls: many(TOOLS, 2) }],
    expect: LOOP,
  });
}
