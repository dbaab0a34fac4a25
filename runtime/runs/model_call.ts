/**
 * One logical model call of a Run through the Broker [MB-9, EV-1, EV-2].
 *
 * What this file enforces: the usage row `started` and `model.request.started`
 * are written in one transaction before any HTTP (a failure there stops the
 * call); `complete|incomplete` and `model.response.finished` are written
 * together in the Run's next durable transaction (the next boundary or the
 * terminal — never split); one started/finished pair per real attempt; the
 * answer block opens durably at the first delta and every delta is ephemeral
 * (live stream only); a journal or cap failure inside any callback aborts the
 * HTTP stream and is reported as the call's code; a Worker that exits mid-call
 * cuts the stream at once and frees the Broker slot [OP-5]; the one overflow-recovery
 * projection [MB-8] keeps only the latest complete bundle and the message.
 */
import { AppError, type ErrorCode } from "../errors.ts";
import {
  type Admission,
  type AdmitOptions,
  estimateTokens,
  makeReceipt,
  render,
} from "../context/admission.ts";
import type { ChatOutcome } from "../model/types.ts";
import { REASONING_MARKER } from "../model/reasoning.ts";
import { REASONING_LIVE_RUN_MAX_BYTES, REASONING_RUN_COMMIT_MAX_BYTES } from "../limits.ts";

/** What a Run keeps of a call's reasoning once its per-Run reasoning bound is spent. */
export const REASONING_DROPPED_MARKER =
  "[Reasoning not kept: this Run's 64 KiB reasoning limit was reached.]";
import { usageFinished, usageStarted } from "../store/run_store.ts";
import { JournalUnavailable } from "./run_recorder.ts";
import type { TurnContext } from "./turn_context.ts";
import { errorName } from "../log.ts";
import { clampDurationMs } from "../protocol/events.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export interface ModelCallResult {
  outcome: ChatOutcome;
  /** Whether a delta opened the answer block of this call. */
  blockOpen: boolean;
  /** A journal/cap failure inside a Broker callback: it, not the Broker's code, ends the Turn. */
  callbackCode: ErrorCode | null;
}

/** `counter.calls` numbers logical calls across the Run (recovery calls included). */
export async function callModel(
  ctx: TurnContext,
  adm: Extract<Admission, { ok: true }>,
  opts: AdmitOptions,
  counter: { calls: number },
): Promise<ModelCallResult> {
  const snap = ctx.snapshot;
  /** Kept bundles and CX-3 estimate of the request being sent (the recovery call's own). */
  let sent = { kept: adm.keptBundles, estimate: adm.estimate };
  let blockOpen = false;
  let outcome: ChatOutcome;
  /** A journal/cap failure inside a Broker callback: it, not the Broker's code, ends the Turn. */
  let callbackCode: ErrorCode | null = null;
  const onCallbackError = (code: ErrorCode) => (callbackCode ??= code);
  const ledgerWrite = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      onCallbackError(journalFailureCode(err) ?? "internal_error");
      throw err; // the Broker then sends no HTTP / stops the call [MB-9]
    }
  };
  const inner = new AbortController();
  const onAbort = () => inner.abort();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  ctx.workerGone?.addEventListener("abort", onAbort, { once: true });
  if (ctx.signal.aborted || ctx.workerGone?.aborted) inner.abort();
  try {
    outcome = await ctx.broker.chat({
      modelId: snap.model_id,
      phase: adm.tools.length > 0 ? "tools" : "plain",
      messages: adm.messages,
      tools: adm.tools.length > 0 ? adm.tools : undefined,
      signal: inner.signal,
      deadline: ctx.deadline,
      ledger: {
        started(e) {
          counter.calls++;
          ledgerWrite(() =>
            ctx.recorder.durable("model.request.started", {
              call: counter.calls,
              model_id: e.modelId,
              phase: e.phase,
              recovery: e.recovery,
              token_estimate: e.tokenEstimate,
              request_bytes: e.requestBytes,
              digest: e.digest,
              collapsed_bundles: ctx.plan.history.length - sent.kept,
              collapsed_results: adm.collapsedResults,
            }, () =>
              usageStarted(ctx.db, {
                runId: snap.run_id,
                call: counter.calls,
                modelId: e.modelId,
                scope: ctx.scope,
                estimate: sent.estimate,
                now: ctx.now(),
              }))
          );
        },
        finished(e) {
          // Captured now: the usage row is written with the NEXT durable write (deferred).
          const call = counter.calls;
          ledgerWrite(() =>
            ctx.recorder.durable("model.response.finished", {
              call,
              outcome: e.outcome,
              error_code: e.errorCode,
              input_tokens: e.usage.inputTokens,
              output_tokens: e.usage.outputTokens,
              usage_complete: e.usage.complete,
              elapsed_ms: clampDurationMs(Math.round(e.elapsedMs)),
              attempts: Math.min(4, e.attempts),
            }, () =>
              usageFinished(ctx.db, {
                runId: snap.run_id,
                call,
                complete: e.usage.complete,
                input: e.usage.inputTokens,
                output: e.usage.outputTokens,
                now: ctx.now(),
              }), { defer: true })
          );
        },
      },
      observer: {
        attemptStarted(e) {
          guard(
            ctx,
            inner,
            onCallbackError,
            () =>
              ctx.recorder.durable(
                "model.transport.attempt.started",
                {
                  call: counter.calls,
                  attempt: e.attempt,
                  max_attempts: e.maxAttempts,
                  phase: e.phase,
                },
                undefined,
                { defer: true },
              ),
          );
        },
        attemptFinished(e) {
          guard(
            ctx,
            inner,
            onCallbackError,
            () =>
              ctx.recorder.durable(
                "model.transport.attempt.finished",
                {
                  call: counter.calls,
                  attempt: e.attempt,
                  max_attempts: e.maxAttempts,
                  phase: e.phase,
                  outcome: e.outcome,
                  elapsed_ms: clampDurationMs(Math.round(e.elapsedMs)),
                  ttfb_ms: e.ttfbMs === null ? null : Math.max(0, Math.round(e.ttfbMs)),
                },
                undefined,
                { defer: true },
              ),
          );
        },
      },
      onDelta(d) {
        guard(ctx, inner, onCallbackError, () => {
          if (!blockOpen) {
            ctx.recorder.durable("assistant.block.started", { block: counter.calls }, undefined, {
              defer: true,
            });
            blockOpen = true;
          }
          ctx.recorder.ephemeral("assistant.block.delta", { block: counter.calls, text: d.text });
        });
      },
      reasoning: ctx.reasoning ?? true,
      onReasoningDelta(d) {
        // [MB-12] live only: never the answer, never the journal. Reasoning never ends a Run:
        // past the Run's live reasoning budget or the live cap its deltas are simply dropped.
        const so = reasoningLive.get(ctx) ?? 0;
        if (so > REASONING_LIVE_RUN_MAX_BYTES) return;
        reasoningLive.set(ctx, so + utf8Bytes(d.text));
        try {
          ctx.recorder.ephemeral("assistant.reasoning.delta", {
            call: counter.calls,
            text: d.text,
          });
        } catch (err) {
          if (err instanceof AppError && err.code === "run_event_limit") {
            reasoningLive.set(ctx, Infinity);
            return;
          }
          guard(ctx, inner, onCallbackError, () => {
            throw err;
          });
        }
      },
      recover() {
        // [MB-8] one smaller projection: the latest complete bundle and the current message.
        if (ctx.plan.history.length < 2) return null;
        const kept = ctx.plan.history.slice(-1);
        const messages = render(ctx.plan, kept, makeReceipt(ctx.plan.history.slice(0, -1)), {
          ...opts,
          exchanges: adm.exchanges,
        });
        // Its events and usage row describe this smaller request, not the first one.
        sent = {
          kept: kept.length,
          estimate: estimateTokens(messages, adm.tools, ctx.plan.counter),
        };
        return messages;
      },
    });
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    ctx.workerGone?.removeEventListener("abort", onAbort);
  }
  if (outcome.kind === "completed" && outcome.reasoning.length > 0 && callbackCode === null) {
    commitReasoning(ctx, counter.calls, outcome.reasoning, onCallbackError);
  }
  return { outcome, blockOpen, callbackCode };
}

/** Reasoning bytes each Run committed so far (the per-Run bound) [MB-12]. */
const reasoningCommitted = new WeakMap<TurnContext, number>();
/** Reasoning bytes each Run streamed live so far. */
const reasoningLive = new WeakMap<TurnContext, number>();

/**
 * Commits a call's reasoning once, with the call's next durable write [MB-12].
 * Past REASONING_RUN_COMMIT_MAX_BYTES per Run only REASONING_DROPPED_MARKER is
 * kept, so reasoning never crowds the Run's journal bound.
 */
function commitReasoning(
  ctx: TurnContext,
  call: number,
  text: string,
  onError: (code: ErrorCode) => void,
): void {
  const bytes = utf8Bytes(text);
  const so = reasoningCommitted.get(ctx) ?? 0;
  const keep = so + bytes <= REASONING_RUN_COMMIT_MAX_BYTES;
  reasoningCommitted.set(ctx, keep ? so + bytes : so);
  const committed = keep ? text : REASONING_DROPPED_MARKER;
  try {
    ctx.recorder.durable(
      "assistant.reasoning.completed",
      {
        call,
        text: committed,
        bytes,
        truncated: !keep || text.endsWith(REASONING_MARKER),
      },
      undefined,
      { defer: true },
    );
  } catch (err) {
    // The journal's own bound: the reasoning is dropped, the Run goes on (its answer stands).
    if (err instanceof AppError && err.code === "run_event_limit") {
      ctx.log.warn("run.reasoning_dropped", { call });
      return;
    }
    const code = journalFailureCode(err);
    if (code === null) throw err;
    onError(code);
  }
}

/** The code a failed journal or ledger write ends the Turn with; null when the failure is unexpected. */
function journalFailureCode(err: unknown): ErrorCode | null {
  if (err instanceof AppError) return err.code;
  if (err instanceof JournalUnavailable) return "journal_unavailable";
  return null;
}

/** Runs a journal write from a Broker observer; a failure records its code and aborts the call. */
function guard(
  ctx: TurnContext,
  inner: AbortController,
  onError: (code: ErrorCode) => void,
  fn: () => void,
): void {
  try {
    fn();
  } catch (err) {
    const code = journalFailureCode(err);
    if (code === null) ctx.log.error("run.callback_failed", { kind: errorName(err) });
    onError(code ?? "internal_error");
    inner.abort();
  }
}
