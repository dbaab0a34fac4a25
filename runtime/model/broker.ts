/**
 * The Model Broker [MB-1..9]: the only component that talks to Ollama.
 *
 * Public API (types in ./types.ts):
 *
 *   const broker = createBroker({ catalog, log });      // starts qualification
 *   broker.chat({ modelId, phase: "plain" | "tools", messages, tools?, signal,
 *                 deadline, ledger?, observer?, onDelta?, recover? })
 *     → Promise<ChatOutcome>
 *       | { kind: "completed", content, toolCalls, usage, reason }   // reason: stop | length
 *       |                                                 max_output | repetition_truncated
 *       | { kind: "failed", code, retryable }   // fixed ErrorCode from runtime/errors.ts
 *       | { kind: "cancelled" }
 *   broker.profile(modelId) → { ok, profile: {window, reserve, budget, capabilities, …} }
 *   broker.status(modelId?) / publicProfiles() / requalify() / poke() / close()
 *
 * Event contract per logical call: `ledger.started` then exactly one
 * `ledger.finished` (model.request.started / model.response.finished + usage
 * ledger, [MB-9]); between them one `observer.attemptStarted/Finished` pair per
 * real HTTP attempt, so N attempts ⇒ 2 + 2·N events. An overflow recovery
 * [MB-8] is a second logical call with its own pair. Calls refused before a
 * logical call exists (unknown model, unqualified, missing capability, already
 * cancelled) emit nothing.
 *
 * What this file enforces: unknown ids fail `model_not_found`; Runs fail closed
 * with `model_unavailable` until qualification succeeds (re-qualified on demand
 * at most once per interval); `tools` phase needs the `tools` capability; the
 * circuit is checked before a slot is taken; ≤ 2 streams with a bounded wait
 * (`model_busy`); one transparent retry only when no provider frame arrived;
 * the request body comes only from the catalog, the profile and the projection.
 */
import { createHash } from "node:crypto";
import { type ErrorCode, errorInfo } from "../errors.ts";
import type { Logger } from "../log.ts";
import { MODEL_RETRIES_BEFORE_FRAME, OVERFLOW_RECOVERY_ATTEMPTS } from "../limits.ts";
import { AnswerBuffer } from "./answer.ts";
import { ReasoningBuffer } from "./reasoning.ts";
import { type AttemptResult, runAttempt } from "./attempt.ts";
import type { CatalogEntry, ModelCatalog } from "./catalog.ts";
import { CircuitBreaker } from "./circuit.ts";
import { ModelStates } from "./model_states.ts";
import type { HostResolver } from "./qualification.ts";
import { StreamSemaphore } from "./semaphore.ts";
import type {
  ChatMessage,
  ChatOutcome,
  ChatRequest,
  ContentDelta,
  ModelBroker,
  QualifiedProfile,
  ResponseOutcome,
  Usage,
} from "./types.ts";
import { chatBody } from "./wire.ts";
import { errorName } from "../log.ts";

export type * from "./types.ts";

export interface BrokerOptions {
  catalog: ModelCatalog;
  log: Logger;
  /** @default a fresh StreamSemaphore (2 streams) */
  semaphore?: StreamSemaphore;
  /** @default Date.now */
  now?: () => number;
  /** Start qualifying every entry at construction. @default true */
  qualifyNow?: boolean;
  /** Host name resolver used once per entry. @default the system resolver (node:dns) */
  resolve?: HostResolver;
}

const MAX_ATTEMPTS = 1 + MODEL_RETRIES_BEFORE_FRAME;
const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, complete: false });
const REQUEST_DOMAIN = "agent-builder/model-request/v1\0";
const enc = new TextEncoder();

/** `p`'s value, or null as soon as `signal` aborts (p itself is left to settle alone). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (err) => (signal.removeEventListener("abort", onAbort), reject(err)),
    );
  });
}

/** `think` for this call [MB-12]: the Agent's setting (default on), only for thinking models. */
function thinkOf(profile: QualifiedProfile, req: ChatRequest): boolean | undefined {
  return profile.capabilities.thinking ? (req.reasoning ?? true) : undefined;
}

function failed(code: ErrorCode): ChatOutcome {
  return { kind: "failed", code, retryable: errorInfo(code).retryable ?? false };
}

export function createBroker(opts: BrokerOptions): ModelBroker {
  const { catalog, log } = opts;
  const now = opts.now ?? Date.now;
  const semaphore = opts.semaphore ?? new StreamSemaphore();
  const circuitOpenMs = catalog.entries[0].timeouts.circuitOpenMs;
  const circuit = new CircuitBreaker(circuitOpenMs, now);
  const models = new ModelStates(catalog, log, now, opts.resolve);

  function safeObserve(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      // Diagnostics never change the call [EV-1]; the failure is logged, not swallowed.
      log.warn("model.observer_failed", {
        what,
        error: errorName(err),
      });
    }
  }

  /** The caller's delta sink, isolated: a failing sink (e.g. a closed SSE) never ends the call. */
  function safeDelta(
    _req: ChatRequest,
    sink: ((d: ContentDelta) => void) | undefined,
  ): ((d: ContentDelta) => void) | undefined {
    if (!sink) return undefined;
    let failedOnce = false;
    return (d) => {
      try {
        sink(d);
      } catch (err) {
        if (!failedOnce) {
          failedOnce = true;
          log.warn("model.delta_sink_failed", {
            error: errorName(err),
          });
        }
      }
    };
  }

  /** One logical call: ledger boundaries around the attempts. */
  async function logicalCall(
    entry: CatalogEntry,
    profile: QualifiedProfile,
    req: ChatRequest,
    messages: ChatMessage[],
    recovery: 0 | 1,
  ): Promise<ChatOutcome | { kind: "overflow"; status: 400 | 413 }> {
    const body = enc.encode(
      JSON.stringify(
        chatBody(entry, profile, req.phase, messages, req.tools, thinkOf(profile, req)),
      ),
    );
    const digest = "sha256:" +
      createHash("sha256").update(REQUEST_DOMAIN).update(body).digest("hex");
    try {
      await req.ledger?.started({
        modelId: entry.id,
        phase: req.phase,
        recovery,
        tokenEstimate: body.length,
        requestBytes: body.length,
        digest,
      });
    } catch (err) {
      log.error("model.ledger_started_failed", {
        error: errorName(err),
      });
      return failed("journal_unavailable"); // no HTTP without a durable request boundary
    }
    const t0 = now();
    const r = await attempts(entry, req, body, thinkOf(profile, req) === true);
    const outcome: ResponseOutcome = r.result.kind === "overflow"
      ? "context_overflow"
      : r.result.kind === "cancelled"
      ? "cancelled"
      : r.result.kind === "failed"
      ? "failed"
      : r.result.reason === "max_output" || r.result.reason === "repetition_truncated"
      ? r.result.reason
      : "completed";
    const usage = r.result.kind === "completed" ? r.result.usage : NO_USAGE;
    try {
      await req.ledger?.finished({
        modelId: entry.id,
        outcome,
        errorCode: r.result.kind === "failed"
          ? r.result.code
          : r.result.kind === "overflow"
          ? "model_context_limit"
          : null,
        usage,
        elapsedMs: now() - t0,
        attempts: r.attempts,
      });
    } catch (err) {
      log.error("model.ledger_finished_failed", {
        error: errorName(err),
      });
      return failed("journal_unavailable");
    }
    return r.result;
  }

  /** Circuit, semaphore, and up to MAX_ATTEMPTS real HTTP attempts. */
  async function attempts(
    entry: CatalogEntry,
    req: ChatRequest,
    body: Uint8Array,
    reasoningOn: boolean,
  ): Promise<{ result: ChatOutcome | { kind: "overflow"; status: 400 | 413 }; attempts: number }> {
    const key = CircuitBreaker.key(entry.id, entry.profileDigest);
    if (circuit.isOpen(key)) return { result: failed("model_temporarily_unhealthy"), attempts: 0 };
    if (req.signal.aborted) return { result: { kind: "cancelled" }, attempts: 0 };
    if (now() >= req.deadline) return { result: failed("model_turn_deadline"), attempts: 0 };
    const wait = Math.min(entry.timeouts.queueWaitMs, req.deadline - now());
    const slot = await semaphore.acquire(wait, req.signal);
    if (slot.kind === "aborted") return { result: { kind: "cancelled" }, attempts: 0 };
    if (slot.kind === "busy") {
      const code = now() >= req.deadline ? "model_turn_deadline" : "model_busy";
      return { result: failed(code), attempts: 0 };
    }
    try {
      // The circuit may have opened while this call waited for its slot.
      if (circuit.isOpen(key)) {
        return { result: failed("model_temporarily_unhealthy"), attempts: 0 };
      }
      const st = models.get(entry);
      const addr = models.addr;
      const profile = st.status.available ? st.status.profile : null;
      if (profile === null || addr === null) {
        return { result: failed("model_unavailable"), attempts: 0 };
      }
      const answer = new AnswerBuffer({
        guard: req.phase === "plain",
        onDelta: safeDelta(req, req.onDelta),
        now,
      });
      const reasoning = new ReasoningBuffer(safeDelta(req, req.onReasoningDelta), now);
      const callEnd = now() + entry.timeouts.callMs;
      let n = 0;
      for (;;) {
        n++;
        if (n > 1 && circuit.isOpen(key)) {
          return { result: failed("model_temporarily_unhealthy"), attempts: n - 1 };
        }
        const base = { modelId: entry.id, attempt: n, maxAttempts: MAX_ATTEMPTS, phase: req.phase };
        safeObserve("attempt_started", () => req.observer?.attemptStarted(base));
        const t0 = now();
        const ar: AttemptResult = await runAttempt({
          addr,
          body,
          phase: req.phase,
          signal: req.signal,
          answer,
          reasoning,
          reasoningOn,
          firstFrameMs: entry.timeouts.firstFrameMs,
          idleMs: entry.timeouts.idleMs,
          callEnd,
          deadline: req.deadline,
          now,
        });
        const ttfbMs = ar.kind === "done" || ar.kind === "failed" || ar.kind === "cancelled"
          ? ar.ttfbMs
          : null;
        safeObserve("attempt_finished", () =>
          req.observer?.attemptFinished({
            ...base,
            outcome: ar.kind === "done"
              ? ar.transport ?? (ar.reason === "repetition_truncated" ? "repetition_closed" : "ok")
              : ar.kind === "failed"
              ? ar.outcome
              : ar.kind === "cancelled"
              ? "cancelled"
              : "http_error",
            elapsedMs: now() - t0,
            ttfbMs,
          }));
        if (ttfbMs !== null) circuit.recordFirstFrame(key);
        switch (ar.kind) {
          case "done": {
            const content = answer.finish();
            return {
              result: {
                kind: "completed",
                content,
                reasoning: reasoning.finish(),
                toolCalls: ar.toolCalls,
                usage: ar.usage,
                reason: ar.reason,
              },
              attempts: n,
            };
          }
          case "cancelled":
            return { result: { kind: "cancelled" }, attempts: n };
          case "overflow":
            return { result: ar, attempts: n };
          case "model_missing":
            models.markUnavailable(entry, "model_missing");
            return { result: failed("model_unavailable"), attempts: n };
          case "failed":
            if (ar.countsForCircuit) circuit.recordZeroFrameFailure(key);
            if (
              ar.zeroFrame && ar.countsForCircuit && n < MAX_ATTEMPTS && now() < callEnd &&
              now() < req.deadline
            ) {
              continue; // one transparent retry, only before any provider frame [MB-5]
            }
            if (ar.code === "model_unavailable") models.markUnavailable(entry, "unreachable");
            return { result: failed(ar.code), attempts: n };
          default: {
            const never: never = ar;
            throw new Error(`unhandled attempt result ${JSON.stringify(never)}`);
          }
        }
      }
    } finally {
      slot.release();
    }
  }

  async function chat(req: ChatRequest): Promise<ChatOutcome> {
    const entry = catalog.get(req.modelId);
    if (!entry) return failed("model_not_found");
    if (req.signal.aborted) return { kind: "cancelled" };
    // Re-qualification may take its timeouts; a cancel does not wait for it (it goes on alone).
    const status = await untilAborted(models.ensure(entry), req.signal);
    if (status === null) return { kind: "cancelled" };
    if (!status.available) return failed("model_unavailable");
    if (req.phase === "tools" && !status.profile.capabilities.tools) {
      return failed("model_capability_missing");
    }
    const first = await logicalCall(entry, status.profile, req, req.messages, 0);
    if (first.kind !== "overflow") return first;
    if (!req.recover || OVERFLOW_RECOVERY_ATTEMPTS < 1) return failed("model_context_limit");
    let smaller: ChatMessage[] | null;
    try {
      smaller = await req.recover({ modelId: entry.id, status: first.status });
    } catch (err) {
      log.error("model.recover_failed", { error: errorName(err) });
      return failed("model_context_limit");
    }
    if (smaller === null) return failed("model_context_limit");
    const second = await logicalCall(entry, status.profile, req, smaller, 1);
    return second.kind === "overflow" ? failed("model_context_limit") : second; // never a second recovery
  }

  // Re-discovery every 5 min while idle (no stream in flight) [MB-10].
  const interval = catalog.config.timeouts.discoveryIntervalMs;
  const timer = (opts.qualifyNow ?? true)
    ? setInterval(() => {
      if (semaphore.inUse === 0) void models.discover();
    }, interval)
    : null;

  const broker: ModelBroker = {
    chat,
    status: (modelId) => models.status(modelId ?? catalog.defaultId),
    async profile(modelId) {
      const entry = catalog.get(modelId);
      if (!entry) return { ok: false, code: "model_not_found" };
      const s = await models.ensure(entry);
      return s.available
        ? { ok: true, profile: s.profile }
        : { ok: false, code: "model_unavailable" };
    },
    publicProfiles: () => models.publicProfiles(),
    requalify: () => models.discover(),
    refresh: () => models.discover(true),
    admin: () => models.addr,
    poke: () => models.poke(),
    close: () => {
      if (timer !== null) clearInterval(timer);
      return models.close();
    },
  };
  if (opts.qualifyNow ?? true) void models.discover();
  return broker;
}
