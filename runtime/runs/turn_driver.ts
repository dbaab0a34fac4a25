/**
 * The Control Plane side of one Turn: the effectful shell around the pure
 * reducer of `turn_state.ts`. It reads the Worker's HarnessKernel frames,
 * runs what the reducer asks for — a model call (model_call.ts) after
 * admission [CX-3] on the trusted plan, a tool call (tool_call.ts) — and
 * sends the reducer's replies, until the reducer decides the terminal
 * [SB-4, SB-5, TL-1, TL-3, MB-9].
 *
 * What this file enforces: admission before EVERY provider call; a Worker
 * frame that does not arrive before the Run deadline (or the reply timeout)
 * ends the Turn; a Run aborted while a call was in flight sends no reply (the
 * Worker has its cancel frame and reports); a model call cut because the
 * Worker exited [OP-5] sends no reply and the Turn ends as the Worker's end of
 * input (`worker_crashed`, or the bound the supervisor killed it for), unless
 * a Broker code was already decided; a tool call that would follow a
 * decided failure is not executed. Never throws for Worker or model
 * misbehaviour.
 */
import { admit, countedTexts, type ToolExchange } from "../context/admission.ts";
import { primeCounter } from "../context/tokenizer.ts";
import { AppError } from "../errors.ts";
import { IPC_REPLY_TIMEOUT_MS } from "../limits.ts";
import type { WorkerToControl } from "../protocol/worker_frames.ts";
import { newProjectionBudget } from "../tools/projection.ts";
import { callModel } from "./model_call.ts";
import type { Terminal } from "./run_recorder.ts";
import { runToolCall } from "./tool_call.ts";
import { answerDigest, type TurnContext, type WorkerChannel } from "./turn_context.ts";
import {
  INITIAL_TURN_STATE,
  type ModelEffect,
  onModelResult,
  onToolResult,
  onWorkerFrame,
  settle,
  type TurnEnv,
  type TurnState,
} from "./turn_state.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export type { TurnContext, WorkerChannel } from "./turn_context.ts";

/** Drives one Turn to its terminal. Never throws for Worker or model misbehaviour. */
export async function driveTurn(ch: WorkerChannel, ctx: TurnContext): Promise<Terminal> {
  const snap = ctx.snapshot;
  let s: TurnState = INITIAL_TURN_STATE;
  /** This Turn's executed calls as the model sees them [TL-3]; admission may collapse them. */
  const exchanges: ToolExchange[] = [];
  /** Logical model calls of the Run (overflow-recovery calls included) [MB-8]. */
  const usageCalls = { calls: 0 };
  const budget = newProjectionBudget();

  const env = (): TurnEnv => {
    const r = ctx.abortReason();
    return {
      aborted: r === null
        ? null
        : r === "deadline"
        ? { state: "failed", code: "model_turn_deadline", stage: "model" }
        : { state: "cancelled", reason: r },
      pastDeadline: ctx.now() >= ctx.deadline,
    };
  };

  await ch.send({ v: 2, type: "turn.start", snapshot: snap });
  for (;;) {
    let frame: WorkerToControl | null;
    try {
      frame = await ch.receive(
        Math.max(1, Math.min(IPC_REPLY_TIMEOUT_MS, ctx.deadline - ctx.now())),
      );
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const e = env();
      const code = e.pastDeadline ? "model_turn_deadline" : "worker_protocol_error";
      return settle(s, e, { state: "failed", code, stage: "worker" });
    }
    if (frame === null) {
      return settle(s, env(), { state: "failed", code: "worker_crashed", stage: "worker" });
    }
    const [after, next] = onWorkerFrame(s, frame, snap, env());
    s = after;
    switch (next.do) {
      case "end":
        return next.terminal;
      case "reply":
        await ch.send(next.frame);
        continue;
      case "tool": {
        const p = next.pending;
        if (s.failure) {
          // A decided failure: the rest of the response is answered, never executed.
          const [t, reply] = onToolResult(s, next.requestId, p, {
            ok: false,
            digest: "",
            code: s.failure.code,
            fatal: null,
          });
          s = t;
          await ch.send(reply);
          continue;
        }
        const r = await runToolCall(ctx, p, budget);
        // Cancelled while waiting (e.g. on an approval): the Worker already has its cancel frame.
        if (env().aborted) continue;
        exchanges.push({
          call: p.call,
          projection: r.projection,
          response: s.modelCalls,
          toolId: p.ref.tool_id,
          resultBytes: r.bytes,
          resultDigest: r.digest,
        });
        const [t, reply] = onToolResult(s, next.requestId, p, {
          ok: r.ok,
          digest: r.ok ? r.digest : "",
          code: r.ok ? null : r.code,
          fatal: r.fatal,
        });
        s = t;
        await ch.send(reply);
        continue;
      }
      case "model": {
        const effect = await modelEffect(ctx, exchanges, next.narrowed, usageCalls, env);
        ctx.onModelCallEnded?.();
        const [t, reply] = onModelResult(s, next.requestId, snap, effect);
        s = t;
        if (reply) await ch.send(reply);
      }
    }
  }
}

/** Admission, then one logical model call through the Broker; its result as a ModelEffect. */
async function modelEffect(
  ctx: TurnContext,
  exchanges: readonly ToolExchange[],
  narrowed: boolean,
  usageCalls: { calls: number },
  env: () => TurnEnv,
): Promise<ModelEffect> {
  const opts = { exchanges, narrowed };
  // An exact counter counts the new texts (tool results) off the event loop first [CX-7].
  await primeCounter(ctx.plan.counter, countedTexts(ctx.plan, opts));
  const adm = admit(ctx.plan, opts);
  if (!adm.ok) return { kind: "context_limit" };
  const { outcome, blockOpen, callbackCode } = await callModel(ctx, adm, opts, usageCalls);
  if (callbackCode !== null) return { kind: "journal", code: callbackCode };
  if (outcome.kind === "cancelled") {
    // The cancel frame reaches the Worker from the Run service; wait for its finish.
    // [OP-5] A Worker that exited cut the call: no reply; its end of input ends the Turn.
    return env().aborted || ctx.workerGone?.aborted ? { kind: "aborted" } : { kind: "cancelled" };
  }
  if (outcome.kind === "failed") return { kind: "failed", code: outcome.code };
  const reason = outcome.reason === "length" ? "max_output" : outcome.reason;
  const callNo = usageCalls.calls;
  if (outcome.toolCalls.length > 0 && blockOpen) {
    // Text streamed before tool calls is a completed block of its own.
    ctx.recorder.durable("assistant.block.completed", {
      block: callNo,
      text: outcome.content,
      bytes: utf8Bytes(outcome.content),
      digest: answerDigest(outcome.content),
      reason,
    });
  }
  return {
    kind: "completed",
    callNo,
    content: outcome.content,
    reason,
    toolCalls: outcome.toolCalls,
    blockOpen,
  };
}
