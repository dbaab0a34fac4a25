/**
 * The turn driver's decisions as a pure reducer [SB-4, SB-5, SB-8]: every
 * Worker frame and every effect result (model outcome, tool result) moves a
 * TurnState to the next one and yields what to do — a reply frame, an effect
 * to run, or the terminal. `turn_driver.ts` is the effectful shell around it.
 *
 * What this file enforces, independently of the (untrusted) Worker:
 * - every Worker frame is the exact next step: request ids in order,
 *   iteration = model calls + 1 ≤ the snapshot's `model_calls_max`, the
 *   pinned plan reference, the pinned toolset (its narrowed form exactly once
 *   the tool budget is spent, with `finalize`), the tool results executed so
 *   far, a tool call only for the next accepted call id — anything else ends
 *   the Turn `worker_protocol_error`;
 * - a model response whose tool calls `judgeToolCalls` refuses is never
 *   executed: the Turn must end `model_tool_loop`;
 * - a Worker's completion is accepted only for the answer the Control Plane
 *   holds (same digest and reason); a code the Broker or the Control Plane
 *   decided always wins over the Worker's report [SB-5].
 */
import type { ErrorCode } from "../errors.ts";
import { callKey, isNarrowed, judgeToolCalls, narrowedToolset } from "../kernel/turn_rules.ts";
import { MODEL_RESULT_CALLS_MAX } from "../limits.ts";
import type { ToolCall } from "../model/types.ts";
import { canonicalJson } from "../protocol/digest.ts";
import type {
  ControlToWorker,
  ModelOutcome,
  ToolCallRef,
  TurnRuntimeSnapshot,
  WorkerToControl,
} from "../protocol/worker_frames.ts";
import { toolIdFromProviderName } from "../tools/catalog.ts";
import type { FailStage, Terminal } from "./run_recorder.ts";
import { answerDigest, argsDigest } from "./turn_context.ts";

/** One accepted tool call: its reference (what the Worker sees) and its arguments (kept here). */
export interface Pending {
  ref: ToolCallRef;
  call: ToolCall;
}

type Completed = Extract<Terminal, { state: "completed" }>;
type Failure = { code: ErrorCode; stage: Exclude<FailStage, "worker"> };

export interface TurnState {
  /** The request id the Worker's next frame must carry. */
  readonly expectRequest: number;
  readonly modelCalls: number;
  /** Call ids and keys (tool + argument digest) of the executed calls, in order. */
  readonly executed: readonly string[];
  readonly keys: readonly string[];
  /** Accepted calls of the last response not yet asked for, in order. */
  readonly queue: readonly Pending[];
  /** A response was refused: the only legal next frame is the Worker's `model_tool_loop`. */
  readonly expectLoop: boolean;
  /** The answer the Control Plane holds, once the model gave one. */
  readonly answer: Completed | null;
  /** A code the Broker or the Control Plane decided: it is the Turn's code. */
  readonly failure: Failure | null;
}

export const INITIAL_TURN_STATE: TurnState = {
  expectRequest: 1,
  modelCalls: 0,
  executed: [],
  keys: [],
  queue: [],
  expectLoop: false,
  answer: null,
  failure: null,
};

/** What the shell knows that the reducer does not: an abort and the clock. */
export interface TurnEnv {
  /** The terminal of an abort that already happened (cancel, deadline, shutdown), else null. */
  aborted: Terminal | null;
  pastDeadline: boolean;
}

/** What to do after a Worker frame. */
export type Next =
  | { do: "model"; narrowed: boolean; requestId: number }
  | { do: "tool"; pending: Pending; requestId: number }
  | { do: "reply"; frame: ControlToWorker }
  | { do: "end"; terminal: Terminal };

const protocolError: Terminal = { state: "failed", code: "worker_protocol_error", stage: "worker" };

/** The terminal when the Turn stops on `fallback`: a decided code, then an abort, win. */
export function settle(s: TurnState, env: TurnEnv, fallback: Terminal): Terminal {
  if (s.failure) return { state: "failed", ...s.failure };
  return env.aborted ?? fallback;
}

const modelError = (requestId: number, iteration: number, code: ErrorCode): ControlToWorker => ({
  v: 2,
  type: "model.result",
  request_id: requestId,
  iteration,
  outcome: { kind: "error", code },
});

/** Judges one Worker frame. */
export function onWorkerFrame(
  s: TurnState,
  frame: WorkerToControl,
  snap: TurnRuntimeSnapshot,
  env: TurnEnv,
): [TurnState, Next] {
  const end = (t: Terminal): [TurnState, Next] => [s, { do: "end", terminal: t }];
  if (frame.type === "turn.finish") {
    const o = frame.outcome;
    if (s.failure) return end({ state: "failed", ...s.failure });
    if (env.aborted) return end(env.aborted);
    if (o.kind === "completed") {
      const a = s.answer;
      const same = a !== null && !s.expectLoop &&
        o.answer_digest === answerDigest(a.answer.text) && o.reason === a.answer.reason;
      return end(same ? a : protocolError);
    }
    if (o.kind === "failed" && o.code === "model_tool_loop" && s.expectLoop) {
      return end({ state: "failed", code: "model_tool_loop", stage: "model" });
    }
    if (o.kind === "failed" && o.code === "model_turn_deadline" && env.pastDeadline) {
      return end({ state: "failed", code: "model_turn_deadline", stage: "model" });
    }
    return end(protocolError);
  }
  if (frame.request_id !== s.expectRequest) return end(settle(s, env, protocolError));
  const next = { ...s, expectRequest: s.expectRequest + 1 };

  if (frame.type === "tool.call") {
    const head = s.queue[0];
    if (
      head === undefined || s.expectLoop || frame.iteration !== s.modelCalls ||
      frame.call_id !== head.ref.call_id || frame.tool_id !== head.ref.tool_id
    ) return end(settle(s, env, protocolError));
    return [{ ...next, queue: s.queue.slice(1) }, {
      do: "tool",
      pending: head,
      requestId: frame.request_id,
    }];
  }

  // model.call
  const narrowed = isNarrowed(snap, s.executed.length, frame.iteration);
  const toolset = narrowed ? narrowedToolset(snap.toolset) : snap.toolset;
  if (
    s.queue.length > 0 || s.expectLoop || s.answer !== null ||
    frame.iteration !== s.modelCalls + 1 || frame.iteration > snap.model_calls_max ||
    frame.plan.id !== snap.plan.id || frame.plan.digest !== snap.plan.digest ||
    canonicalJson(frame.toolset) !== canonicalJson(toolset) || frame.finalize !== narrowed ||
    canonicalJson(frame.tool_results) !== canonicalJson(s.executed)
  ) return end(settle(s, env, protocolError));
  const after = { ...next, modelCalls: s.modelCalls + 1 };
  if (s.failure) {
    return [after, {
      do: "reply",
      frame: modelError(frame.request_id, after.modelCalls, s.failure.code),
    }];
  }
  return [after, { do: "model", narrowed, requestId: frame.request_id }];
}

/** What came of one model call, as the shell saw it. */
export type ModelEffect =
  | { kind: "context_limit" }
  /** A journal/cap failure inside a Broker callback. */
  | { kind: "journal"; code: ErrorCode }
  /** The Broker stopped on the Run's abort (the Worker gets its cancel frame). */
  | { kind: "aborted" }
  /** The Broker said cancelled although the Run was not aborted. */
  | { kind: "cancelled" }
  | { kind: "failed"; code: ErrorCode }
  | {
    kind: "completed";
    /** The logical call number (the answer's block). */
    callNo: number;
    content: string;
    reason: Completed["answer"]["reason"];
    toolCalls: readonly ToolCall[];
    blockOpen: boolean;
  };

/** Turns a model call's result into the `model.result` reply (null: no reply, an abort). */
export function onModelResult(
  s: TurnState,
  requestId: number,
  snap: TurnRuntimeSnapshot,
  m: ModelEffect,
): [TurnState, ControlToWorker | null] {
  const reply = (outcome: ModelOutcome): ControlToWorker => ({
    v: 2,
    type: "model.result",
    request_id: requestId,
    iteration: s.modelCalls,
    outcome,
  });
  const failWith = (code: ErrorCode, stage: Failure["stage"]): [TurnState, ControlToWorker] => [
    { ...s, failure: { code, stage } },
    reply({ kind: "error", code }),
  ];
  switch (m.kind) {
    case "aborted":
      return [s, null];
    case "context_limit":
      return failWith("model_context_limit", "context");
    case "journal":
      return failWith(m.code, "journal");
    case "cancelled":
      return failWith("internal_error", "model");
    case "failed":
      return failWith(m.code, "model");
  }
  if (m.toolCalls.length === 0) {
    const answer: Completed = {
      state: "completed",
      answer: { block: m.callNo, text: m.content, reason: m.reason },
      modelCalls: s.modelCalls,
      toolCalls: s.executed.length,
      blockOpen: m.blockOpen,
    };
    return [
      { ...s, answer },
      reply({ kind: "answer", reason: m.reason, answer_digest: answerDigest(m.content) }),
    ];
  }
  const pending: Pending[] = [];
  for (const [i, c] of m.toolCalls.entries()) {
    const toolId = toolIdFromProviderName(c.name);
    // A name no tool can have, or more calls than a frame can name: refused here.
    if (toolId === null || i >= MODEL_RESULT_CALLS_MAX) return failWith("model_tool_loop", "model");
    // ≤ tool_calls_max + MODEL_RESULT_CALLS_MAX = CALL_ID_MAX: always a valid id.
    const callId = `call-${s.executed.length + 1 + i}`;
    pending.push({
      ref: { call_id: callId, tool_id: toolId, args_digest: argsDigest(c.arguments) },
      call: { id: callId, name: c.name, arguments: c.arguments },
    });
  }
  const refs = pending.map((p) => p.ref);
  const ok = judgeToolCalls(snap, s.keys, refs, s.modelCalls) === "ok";
  return [
    ok ? { ...s, queue: pending } : { ...s, expectLoop: true },
    reply({ kind: "tool_calls", calls: refs }),
  ];
}

/** What came of one executed tool call. */
export interface ToolEffect {
  ok: boolean;
  digest: string;
  code: ErrorCode | null;
  /** A bound the projection hit: it ends the Turn after this result. */
  fatal: ErrorCode | null;
}

/** Records an executed call and answers the Worker's `tool.call`. */
export function onToolResult(
  s: TurnState,
  requestId: number,
  p: Pending,
  r: ToolEffect,
): [TurnState, ControlToWorker] {
  const next: TurnState = {
    ...s,
    executed: [...s.executed, p.ref.call_id],
    keys: [...s.keys, callKey(p.ref)],
    failure: s.failure ?? (r.fatal ? { code: r.fatal, stage: "tool" } : null),
  };
  return [next, {
    v: 2,
    type: "tool.result",
    request_id: requestId,
    call_id: p.ref.call_id,
    outcome: r.ok
      ? { kind: "ok", result_digest: r.digest }
      : { kind: "error", code: r.code ?? "internal_error" },
  }];
}
