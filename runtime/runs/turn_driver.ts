/**
 * The Control Plane side of one Turn: answers the Worker's HarnessKernel
 * frames with model calls (model_call.ts) and tool calls (tool_call.ts), and
 * decides the terminal [SB-5, SB-4, TL-1, TL-3, CX-3, MB-9].
 *
 * What this file enforces, independently of the (untrusted) Worker:
 * - every Worker frame must be the exact next step: request ids in order,
 *   iteration = model calls + 1 ≤ 4, the pinned plan reference, the pinned
 *   toolset (or its narrowed form exactly when 2 tool calls ran, with
 *   `finalize`), the tool results executed so far, a tool call only for the
 *   one pending call id — anything else ends the Turn `worker_protocol_error`;
 * - admission [CX-3] before EVERY provider call, on the trusted plan;
 * - a model response with parallel, third, duplicate, unknown or post-narrowing
 *   tool calls is never executed: the Turn must end `model_tool_loop`;
 * - tool calls run in the Control Plane (tool_call.ts: argument validation,
 *   operation ledger, approvals); their arguments never cross the IPC and the
 *   model sees the [TL-3] projection;
 * - the Broker's (or the Control Plane's) error code is final: a Worker
 *   report never replaces it [SB-5].
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError, type ErrorCode } from "../errors.ts";
import { admit, type ToolExchange } from "../context/admission.ts";
import type { ContextPlan } from "../context/plan.ts";
import { narrowedToolset } from "../kernel/harness_kernel.ts";
import { IPC_REPLY_TIMEOUT_MS } from "../limits.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import { canonicalJson, domainDigest } from "../protocol/digest.ts";
import type {
  ControlToWorker,
  ToolCallRef,
  TurnRuntimeSnapshot,
  WorkerToControl,
} from "../protocol/worker_frames.ts";
import { toolIdFromProviderName } from "../tools/catalog.ts";
import { newProjectionBudget } from "../tools/projection.ts";
import { callModel } from "./model_call.ts";
import type { RunRecorder, Terminal } from "./run_recorder.ts";
import { type ApprovalContext, type Pending, runToolCall } from "./tool_call.ts";

/** The Control Plane's view of a Worker's IPC channel. */
export interface WorkerChannel {
  send(frame: ControlToWorker): Promise<void>;
  /** The next validated frame; null at end of output; rejects on a protocol violation. */
  receive(timeoutMs: number): Promise<WorkerToControl | null>;
}

export interface TurnContext {
  snapshot: TurnRuntimeSnapshot;
  plan: ContextPlan;
  workspaceDir: string;
  broker: ModelBroker;
  recorder: RunRecorder;
  db: DatabaseSync;
  log: Logger;
  now: () => number;
  /** Absolute Run deadline (epoch ms). */
  deadline: number;
  /** Aborted on cancel, deadline or shutdown. */
  signal: AbortSignal;
  /** Why `signal` aborted, once it has. */
  abortReason(): "user" | "shutdown" | "deadline" | "agent_upgrade" | "agent_delete" | null;
  /** Usage-ledger calibration scope [CX-5]. */
  scope: string;
  /** Approvals of `ask` tools [TL-2]; absent ⇒ the Run is non-interactive. */
  approvals?: ApprovalContext;
}

type Stage = "model" | "context" | "tool" | "worker" | "journal";
const fail = (code: ErrorCode, stage: Stage = "worker") =>
  ({ state: "failed", code, stage }) as const;

export function argsDigest(args: unknown): string {
  return domainDigest("agent-builder/tool-args/v1", canonicalJson(args));
}

export function answerDigest(text: string): string {
  return domainDigest("agent-builder/assistant-answer/v1", text);
}

/** Drives one Turn to its terminal. Never throws for Worker or model misbehaviour. */
export async function driveTurn(ch: WorkerChannel, ctx: TurnContext): Promise<Terminal> {
  const snap = ctx.snapshot;
  let expectRequest = 1;
  let modelCalls = 0;
  const counter = { calls: 0 };
  const executed: (ToolExchange & { callId: string; key: string })[] = [];
  let pending: Pending | null = null;
  let finalCode: { code: ErrorCode; stage: Exclude<Stage, "worker"> } | null = null;
  let expectLoop = false;
  let answer: Extract<Terminal, { state: "completed" }> | null = null;
  const budget = newProjectionBudget();

  const cancelled = (): Terminal | null => {
    const r = ctx.abortReason();
    if (r === null) return null;
    if (r === "deadline") return fail("model_turn_deadline", "model");
    return { state: "cancelled", reason: r };
  };
  const settle = (fallback: Terminal): Terminal => {
    if (finalCode) return { state: "failed", ...finalCode };
    return cancelled() ?? fallback;
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
      return settle(
        fail(ctx.now() >= ctx.deadline ? "model_turn_deadline" : "worker_protocol_error"),
      );
    }
    if (frame === null) return settle(fail("worker_crashed"));
    if (frame.type === "turn.finish") {
      const o = frame.outcome;
      if (finalCode) return { state: "failed", ...finalCode };
      const c = cancelled();
      if (c) return c;
      if (o.kind === "completed") {
        if (
          answer && !expectLoop && o.answer_digest === answerDigest(answer.answer.text) &&
          o.reason === answer.answer.reason
        ) return answer;
        return fail("worker_protocol_error");
      }
      if (o.kind === "failed" && o.code === "model_tool_loop" && expectLoop) {
        return fail("model_tool_loop", "model");
      }
      if (o.kind === "failed" && o.code === "model_turn_deadline" && ctx.now() >= ctx.deadline) {
        return fail("model_turn_deadline", "model");
      }
      return fail("worker_protocol_error");
    }
    if (frame.request_id !== expectRequest) return settle(fail("worker_protocol_error"));
    expectRequest++;

    if (frame.type === "tool.call") {
      if (
        pending === null || expectLoop || frame.iteration !== modelCalls ||
        frame.call_id !== pending.ref.call_id || frame.tool_id !== pending.ref.tool_id
      ) return settle(fail("worker_protocol_error"));
      const p: Pending = pending;
      pending = null;
      const r = await runToolCall(ctx, p, budget);
      // Cancelled while waiting (e.g. on an approval): the Worker already has its cancel frame.
      if (cancelled()) continue;
      if (r.fatal) finalCode = { code: r.fatal, stage: "tool" };
      executed.push({
        call: p.call,
        projection: r.projection,
        callId: p.ref.call_id,
        key: `${p.ref.tool_id}\u0000${p.ref.args_digest}`,
      });
      await ch.send({
        v: 2,
        type: "tool.result",
        request_id: frame.request_id,
        call_id: p.ref.call_id,
        outcome: r.ok ? { kind: "ok", result_digest: r.digest } : { kind: "error", code: r.code },
      });
      continue;
    }

    // model.call
    const narrowed = executed.length >= snap.tool_calls_max;
    const expectToolset = narrowed ? narrowedToolset(snap.toolset) : snap.toolset;
    if (
      pending !== null || expectLoop || answer !== null || frame.iteration !== modelCalls + 1 ||
      frame.plan.id !== snap.plan.id || frame.plan.digest !== snap.plan.digest ||
      canonicalJson(frame.toolset) !== canonicalJson(expectToolset) ||
      frame.finalize !== narrowed ||
      canonicalJson(frame.tool_results) !== canonicalJson(executed.map((x) => x.callId))
    ) return settle(fail("worker_protocol_error"));
    modelCalls++;
    const reply = (outcome: Extract<ControlToWorker, { type: "model.result" }>["outcome"]) =>
      ch.send({
        v: 2,
        type: "model.result",
        request_id: frame.request_id,
        iteration: modelCalls,
        outcome,
      });
    if (finalCode) {
      await reply({ kind: "error", code: finalCode.code });
      continue;
    }
    const opts = { exchanges: executed, narrowed };
    const adm = admit(ctx.plan, opts);
    if (!adm.ok) {
      finalCode = { code: "model_context_limit", stage: "context" };
      await reply({ kind: "error", code: "model_context_limit" });
      continue;
    }
    const call = await callModel(ctx, adm, opts, counter);
    const { outcome, blockOpen, callbackCode } = call;
    const callNo = counter.calls;
    if (callbackCode !== null) {
      const code: ErrorCode = callbackCode;
      finalCode = { code, stage: "journal" };
      await reply({ kind: "error", code });
      continue;
    }
    if (outcome.kind === "cancelled") {
      // The cancel frame reaches the Worker from the Run service; wait for its finish.
      if (cancelled()) continue;
      finalCode = { code: "internal_error", stage: "model" };
      await reply({ kind: "error", code: "internal_error" });
      continue;
    }
    if (outcome.kind === "failed") {
      finalCode = { code: outcome.code, stage: "model" };
      await reply({ kind: "error", code: outcome.code });
      continue;
    }
    const reason = outcome.reason === "length" ? "max_output" : outcome.reason;
    if (outcome.toolCalls.length === 0) {
      answer = {
        state: "completed",
        answer: { block: callNo, text: outcome.content, reason },
        modelCalls,
        toolCalls: executed.length,
        blockOpen,
      };
      await reply({ kind: "answer", reason, answer_digest: answerDigest(outcome.content) });
      continue;
    }
    if (blockOpen) {
      ctx.recorder.durable("assistant.block.completed", {
        block: callNo,
        text: outcome.content,
        bytes: new TextEncoder().encode(outcome.content).length,
        digest: answerDigest(outcome.content),
        reason,
      });
    }
    const refs: ToolCallRef[] = [];
    for (const [i, c] of outcome.toolCalls.entries()) {
      const toolId = toolIdFromProviderName(c.name);
      if (toolId === null || i >= 8) {
        finalCode = { code: "model_tool_loop", stage: "model" };
        break;
      }
      refs.push({
        call_id: `call-${Math.min(9, executed.length + 1 + i)}`,
        tool_id: toolId,
        args_digest: argsDigest(c.arguments),
      });
    }
    if (finalCode) {
      await reply({ kind: "error", code: finalCode.code });
      continue;
    }
    const offered = new Set(snap.toolset.tool_ids);
    const first = refs[0];
    expectLoop = narrowed || refs.length !== 1 || !offered.has(first.tool_id) ||
      executed.some((x) => x.key === `${first.tool_id}\u0000${first.args_digest}`);
    if (!expectLoop) {
      pending = {
        ref: first,
        call: {
          id: first.call_id,
          name: outcome.toolCalls[0].name,
          arguments: outcome.toolCalls[0].arguments,
        },
      };
    }
    await reply({ kind: "tool_calls", calls: refs });
  }
}
