/**
 * One real HTTP attempt of a logical model call: `POST /api/chat` to the
 * pinned address, then the NDJSON stream under the timers of [MB-5], the raw
 * bounds of [MB-6] and the answer buffer (ceiling + repetition guard).
 *
 * What this file enforces:
 * - first frame within `firstFrameMs`, then at most `idleMs` between frames;
 *   the call end and the Run deadline close the stream whenever they come;
 * - any timer, a cancel or a repetition hit closes the socket immediately;
 * - the stream ends only at a validated `done:true` frame; EOF, an in-band
 *   `{"error":…}` line, invalid JSON or schema violations are failures —
 *   except while draining past the 12 KiB ceiling [MB-6]: the answer is then
 *   already committed, so any fault but a cancel closes the socket and
 *   finishes `max_output` with usage incomplete (no tool calls may be pending);
 * - `message.thinking` goes to the reasoning buffer only (never the answer or
 *   the repetition guard); with `think:true` sent the raw bounds are 4 MiB /
 *   16,384 frames [MB-12];
 * - tool calls are collected from every frame (the final one included),
 *   arguments must be objects, at most MODEL_TOOL_CALLS_PER_RESPONSE_MAX;
 * - provider text never leaves as an error message — only fixed codes.
 */
import type { ErrorCode } from "../errors.ts";
import {
  MODEL_TOOL_CALLS_PER_RESPONSE_MAX,
  PROVIDER_FRAME_MAX_BYTES,
  PROVIDER_STREAM_REASONING_MAX_BYTES,
  PROVIDER_STREAM_REASONING_MAX_FRAMES,
} from "../limits.ts";
import type { AnswerBuffer } from "./answer.ts";
import type { ReasoningBuffer } from "./reasoning.ts";
import { httpRequest, type PinnedAddress, TransportError } from "./http_client.ts";
import {
  DEFAULT_NDJSON_BOUNDS,
  type NdjsonBounds,
  NdjsonReader,
  readErrorBody,
  StreamBoundError,
} from "./ollama_client.ts";
import type { AttemptOutcome, ChatPhase, ToolCall, Usage } from "./types.ts";
import { FrameSchema, InBandErrorSchema, isCapabilityBody, isOverflowBody } from "./wire.ts";

export interface AttemptInput {
  addr: PinnedAddress;
  body: Uint8Array;
  phase: ChatPhase;
  signal: AbortSignal;
  answer: AnswerBuffer;
  /** Where `message.thinking` goes [MB-12]; never the answer. */
  reasoning: ReasoningBuffer;
  /** `think: true` was sent: the wider raw stream bound applies [MB-12]. */
  reasoningOn: boolean;
  firstFrameMs: number;
  idleMs: number;
  /** Absolute ends (epoch ms). */
  callEnd: number;
  deadline: number;
  now: () => number;
}

export type AttemptResult =
  | {
    kind: "done";
    reason: "stop" | "length" | "max_output" | "repetition_truncated";
    toolCalls: ToolCall[];
    usage: Usage;
    ttfbMs: number;
    /** Set when a drain past the ceiling ended on a fault instead of the final frame. */
    transport?: AttemptOutcome;
  }
  | {
    kind: "failed";
    code: ErrorCode;
    outcome: AttemptOutcome;
    /** No provider frame arrived: a transparent retry is allowed and the circuit counts it. */
    zeroFrame: boolean;
    /** The circuit breaker counts this failure (zero-frame and not a client error/cancel). */
    countsForCircuit: boolean;
    ttfbMs: number | null;
  }
  | { kind: "overflow"; status: 400 | 413 }
  | { kind: "model_missing" }
  | { kind: "cancelled"; ttfbMs: number | null };

/** With reasoning on, the raw stream may be 4 MiB / 16,384 frames [MB-12]. */
const REASONING_NDJSON_BOUNDS: NdjsonBounds = Object.freeze({
  maxBytes: PROVIDER_STREAM_REASONING_MAX_BYTES,
  maxFrames: PROVIDER_STREAM_REASONING_MAX_FRAMES,
  maxLineBytes: PROVIDER_FRAME_MAX_BYTES,
});

type TimerReason = "first_frame" | "idle" | "call" | "deadline";

/** Timer delays clamped to what setTimeout honours (larger values would fire at once). */
function delay(ms: number): number {
  return Number.isNaN(ms) ? 0 : Math.min(Math.max(0, ms), 2 ** 31 - 1);
}

const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, complete: false });

/** Runs one attempt. Never throws for provider or transport faults. */
export async function runAttempt(input: AttemptInput): Promise<AttemptResult> {
  const { now } = input;
  const t0 = now();
  const ac = new AbortController();
  let fired: TimerReason | null = null;
  let ttfb: number | null = null;
  let firstDeltaYielded = false;
  const fire = (r: TimerReason) => {
    fired ??= r;
    ac.abort();
  };
  const onCancel = () => ac.abort();
  input.signal.addEventListener("abort", onCancel, { once: true });
  const callTimer = setTimeout(() => fire("call"), delay(input.callEnd - t0));
  const deadlineTimer = setTimeout(() => fire("deadline"), delay(input.deadline - t0));
  let frameTimer = setTimeout(() => fire("first_frame"), delay(input.firstFrameMs));
  const rearmIdle = () => {
    clearTimeout(frameTimer);
    frameTimer = setTimeout(() => fire("idle"), delay(input.idleMs));
  };

  const toolCalls: ToolCall[] = [];
  const fail = (
    code: ErrorCode,
    outcome: AttemptOutcome,
    counts = ttfb === null,
  ): AttemptResult => {
    if (ttfb !== null && input.answer.state === "max_output" && toolCalls.length === 0) {
      // Draining past the ceiling [MB-6]: the answer stands; only the usage is lost.
      return {
        kind: "done",
        reason: "max_output",
        toolCalls,
        usage: NO_USAGE,
        ttfbMs: ttfb,
        transport: outcome,
      };
    }
    return {
      kind: "failed",
      code,
      outcome,
      zeroFrame: ttfb === null,
      countsForCircuit: counts && ttfb === null,
      ttfbMs: ttfb,
    };
  };
  /** Maps an interrupted read/connect to cancel or the timer that fired. */
  const interrupted = (): AttemptResult => {
    if (input.signal.aborted && fired === null) return { kind: "cancelled", ttfbMs: ttfb };
    switch (fired) {
      case "first_frame":
        return fail("model_first_frame_timeout", "first_frame_timeout");
      case "idle":
        return fail("model_stream_idle_timeout", "idle_timeout", false);
      case "call":
        return fail("model_transport_timeout", "call_timeout");
      case "deadline":
        return fail("model_turn_deadline", "deadline", false);
      case null:
        return input.signal.aborted
          ? { kind: "cancelled", ttfbMs: ttfb }
          : fail("model_unavailable", "connect_error");
    }
  };

  let res;
  try {
    res = await httpRequest(input.addr, {
      method: "POST",
      path: "/api/chat",
      body: input.body,
      signal: ac.signal,
    });
  } catch (err) {
    cleanup();
    if (!(err instanceof TransportError)) throw err;
    return interrupted();
  }

  try {
    if (res.status !== 200) {
      let text: string;
      try {
        text = await readErrorBody(res);
      } catch (err) {
        if (err instanceof TransportError) return interrupted();
        throw err;
      }
      if (isOverflowBody(res.status, text)) {
        return { kind: "overflow", status: res.status as 400 | 413 };
      }
      if (res.status === 404) return { kind: "model_missing" };
      if (isCapabilityBody(res.status, text)) {
        return fail("model_capability_missing", "http_error", false);
      }
      if (res.status >= 500) return fail("model_provider_error", "http_error");
      return fail("model_provider_error", "http_error", false);
    }

    const reader = new NdjsonReader(
      res,
      input.reasoningOn ? REASONING_NDJSON_BOUNDS : DEFAULT_NDJSON_BOUNDS,
    );
    for (;;) {
      // Lines already buffered must not outlive a cancel or timer (e.g. one fired by a callback).
      if (ac.signal.aborted) return interrupted();
      let line: string | null;
      try {
        line = await reader.next();
      } catch (err) {
        if (err instanceof StreamBoundError) {
          return fail("model_stream_too_large", "stream_too_large", false);
        }
        if (err instanceof TransportError) {
          if (err.kind === "aborted" || ac.signal.aborted) return interrupted();
          return ttfb === null
            ? fail("model_protocol_error", "protocol_error")
            : fail("model_protocol_error", "protocol_error", false);
        }
        throw err;
      }
      if (line === null) {
        // EOF without a done frame (or an empty 200 body).
        return fail("model_protocol_error", "protocol_error");
      }
      if (ttfb === null) ttfb = now() - t0;
      rearmIdle();
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        return fail("model_protocol_error", "protocol_error", false); // not JSON ⇒ protocol error
      }
      if (InBandErrorSchema.safeParse(raw).success) {
        return fail("model_provider_error", "provider_error", false);
      }
      const parsed = FrameSchema.safeParse(raw);
      if (!parsed.success) return fail("model_protocol_error", "protocol_error", false);
      const frame = parsed.data;
      for (const c of frame.message?.tool_calls ?? []) {
        if (toolCalls.length >= MODEL_TOOL_CALLS_PER_RESPONSE_MAX) {
          return fail("model_protocol_error", "protocol_error", false);
        }
        toolCalls.push({
          id: c.id ?? `call_${toolCalls.length}`,
          name: c.function.name,
          arguments: c.function.arguments,
        });
      }
      const thinking = frame.message?.thinking ?? "";
      if (thinking.length > 0) input.reasoning.append(thinking);
      const content = frame.message?.content ?? "";
      if (content.length > 0 && input.answer.append(content) === "repetition") {
        res.close(); // close the HTTP response immediately [MB-7]
        if (input.signal.aborted) return { kind: "cancelled", ttfbMs: ttfb }; // cancel observed first wins
        return {
          kind: "done",
          reason: "repetition_truncated",
          toolCalls,
          usage: NO_USAGE,
          ttfbMs: ttfb,
        };
      }
      // [PF-1] The first delta reaches the client before the rest of a burst is parsed: a
      // stream whose frames arrive in one read would otherwise be parsed whole — and its Turn
      // finished — in microtasks, before the event loop writes that delta to the SSE socket.
      if (!frame.done && !firstDeltaYielded && input.answer.deltasSent > 0) {
        firstDeltaYielded = true;
        await new Promise((r) => setTimeout(r, 0));
      }
      if (!frame.done) continue;
      const reason = frame.done_reason === "length" ? "length" : "stop";
      if (
        frame.done_reason !== undefined && frame.done_reason !== "stop" &&
        frame.done_reason !== "length"
      ) {
        return fail("model_protocol_error", "protocol_error", false);
      }
      const maxOut = input.answer.state === "max_output";
      if (maxOut && toolCalls.length > 0) {
        return fail("model_protocol_error", "protocol_error", false);
      }
      const complete = frame.prompt_eval_count !== undefined && frame.eval_count !== undefined;
      return {
        kind: "done",
        reason: maxOut ? "max_output" : reason,
        toolCalls,
        usage: {
          inputTokens: frame.prompt_eval_count ?? 0,
          outputTokens: frame.eval_count ?? 0,
          complete,
        },
        ttfbMs: ttfb,
      };
    }
  } finally {
    res.close();
    cleanup();
  }

  function cleanup() {
    clearTimeout(callTimer);
    clearTimeout(deadlineTimer);
    clearTimeout(frameTimer);
    input.signal.removeEventListener("abort", onCancel);
  }
}
