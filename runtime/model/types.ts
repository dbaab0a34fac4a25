/**
 * The Model Broker's public contract (used by the Runs engine): the chat
 * request, the tagged outcome, the boundary/usage ledger [MB-9] and the
 * content-free observer [EV-1]. Pure types; `broker.ts` implements them.
 *
 * What this file enforces by shape: a caller can pick a catalog `modelId` and a
 * `phase`, nothing else — no endpoint, provider model name or generation option
 * is expressible in a ChatRequest [MB-1].
 */
import type { ErrorCode } from "../errors.ts";

export type ChatPhase = "plain" | "tools";

/** One provider tool call, surfaced structurally. `arguments` is always a JSON object. */
export interface ToolCall {
  /** The provider's call id, or `call_<n>` (n = position in this response) when it sent none. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** A message of the trusted, already-compiled projection (Ollama chat message shape). */
export type ChatMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; tool_calls?: ToolCall[] }
  | { role: "tool"; content: string; tool_call_id: string; tool_name: string };

/** A provider tool schema (Ollama `tools[]` entry) from the EffectiveToolSet manifest. */
export interface ProviderTool {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** True only when a validated final frame carried both counts [MB-9]. */
  complete: boolean;
}

/**
 * Why a completed call ended: provider `stop`/`length`, the 12 KiB commit
 * ceiling [MB-6], or the repetition guard [MB-7].
 */
export type CompletionReason = "stop" | "length" | "max_output" | "repetition_truncated";

export type ChatOutcome =
  | {
    kind: "completed";
    /** Visible answer to commit (≤ 12 KiB, markers included). */
    content: string;
    /**
     * The model's reasoning (`message.thinking`) to commit once, apart from the
     * answer [MB-12]: ≤ 32 KiB, REASONING_MARKER appended when cut; "" when none.
     */
    reasoning: string;
    toolCalls: ToolCall[];
    usage: Usage;
    reason: CompletionReason;
  }
  | { kind: "failed"; code: ErrorCode; retryable: boolean }
  | { kind: "cancelled" };

/** Content delta, coalesced: at most 128 per logical call [MB-6]. Ephemeral (SSE only). */
export interface ContentDelta {
  text: string;
  /** 0-based index of this delta within the logical call. */
  index: number;
}

/** Content-free request boundary: `model.request.started` [EV-1]. */
export interface RequestStarted {
  modelId: string;
  phase: ChatPhase;
  /** 0 for the first logical call; 1 for the one overflow-recovery call [MB-8]. */
  recovery: 0 | 1;
  /** utf8-bytes upper bound of the request's text (1 token per byte). */
  tokenEstimate: number;
  requestBytes: number;
  /** `sha256:<hex>` over `agent-builder/model-request/v1\0` + exact body bytes. */
  digest: string;
}

export type ResponseOutcome =
  | "completed"
  | "max_output"
  | "repetition_truncated"
  | "context_overflow"
  | "failed"
  | "cancelled";

/** Content-free response boundary: `model.response.finished` [EV-1]. */
export interface ResponseFinished {
  modelId: string;
  outcome: ResponseOutcome;
  /** Fixed code for failed / context_overflow; null otherwise. */
  errorCode: ErrorCode | null;
  usage: Usage;
  elapsedMs: number;
  /** Real HTTP attempts this logical call opened (N in 2 + 2·N). */
  attempts: number;
}

/**
 * The usage ledger and durable request/response boundaries of one logical call [MB-9].
 * `started` must persist the usage `started` row and `model.request.started` in
 * one transaction; if it throws, no HTTP is sent and the call fails with
 * `journal_unavailable`. `finished` persists `complete` (usage.complete) or
 * `incomplete` with `model.response.finished` in one transaction. Exactly one
 * `finished` follows every `started` that returned.
 */
export interface CallLedger {
  started(e: RequestStarted): void | Promise<void>;
  finished(e: ResponseFinished): void | Promise<void>;
}

export type AttemptOutcome =
  | "ok"
  | "first_frame_timeout"
  | "idle_timeout"
  | "call_timeout"
  | "deadline"
  | "connect_error"
  | "http_error"
  | "protocol_error"
  | "provider_error"
  | "stream_too_large"
  | "repetition_closed"
  | "cancelled";

export interface AttemptStarted {
  modelId: string;
  attempt: number;
  maxAttempts: number;
  phase: ChatPhase;
}

export interface AttemptFinished extends AttemptStarted {
  outcome: AttemptOutcome;
  elapsedMs: number;
  /** Time to the first provider frame; null when none arrived. */
  ttfbMs: number | null;
}

/**
 * Transport diagnostics: one started/finished pair per real HTTP attempt [EV-1].
 * Exceptions thrown here are logged and never change the call.
 */
export interface TransportObserver {
  attemptStarted(e: AttemptStarted): void;
  attemptFinished(e: AttemptFinished): void;
}

/** Why the broker asks for a smaller projection [MB-8]. */
export interface OverflowInfo {
  modelId: string;
  status: 400 | 413;
}

export interface ChatRequest {
  /** A catalog id; anything else fails with `model_not_found`. */
  modelId: string;
  phase: ChatPhase;
  messages: ChatMessage[];
  /** Only in phase "tools"; ignored (not sent) in phase "plain". */
  tools?: ProviderTool[];
  /** Cancel: closes the HTTP connection promptly; outcome `cancelled`. */
  signal: AbortSignal;
  /** Absolute Run deadline (epoch ms) [MB-5]; passing it ⇒ `model_turn_deadline`. */
  deadline: number;
  ledger?: CallLedger;
  observer?: TransportObserver;
  onDelta?: (d: ContentDelta) => void;
  /**
   * The Agent's `reasoning` setting [MB-12]: maps to Ollama's `think` for models
   * whose capabilities include `thinking` (not sent to the others). @default true
   */
  reasoning?: boolean;
  /** Reasoning deltas (ephemeral, live only), coalesced; never part of the answer [MB-12]. */
  onReasoningDelta?: (d: ContentDelta) => void;
  /**
   * Overflow recovery hook [MB-8]: called at most once, only after a strict-JSON
   * 400/413 context/media overflow before any provider frame. Return the smaller
   * projection (keeping the latest complete Turn and the current message), or null
   * to fail with `model_context_limit`.
   */
  recover?: (info: OverflowInfo) => ChatMessage[] | null | Promise<ChatMessage[] | null>;
}

/** A qualified model profile [MB-2]; numbers always recomputed from `/api/show`. */
export interface QualifiedProfile {
  modelId: string;
  nativeWindow: number;
  /** min(native, 32768). */
  window: number;
  /** Output reserve (num_predict). */
  reserve: number;
  /** window − reserve: the hard input budget. */
  budget: number;
  capabilities: { completion: boolean; tools: boolean; thinking: boolean };
  /** `ready` (completion + tools) or `chat_only` (completion without tools) [MB-10]. */
  state: "ready" | "chat_only";
  family: string | null;
  parameterSize: string | null;
  quantization: string | null;
  /** Whether `truncate:false` is sent (server version supports it). */
  truncateSupported: boolean;
  profileDigest: string;
}

/** Fixed reason codes for an unavailable model (/health, /api/models). */
export type UnavailableReason =
  | "not_qualified"
  | "unreachable"
  | "version_unsupported"
  | "model_missing"
  | "capability_missing"
  | "window_too_small"
  | "protocol_error"
  | "show_timeout"
  | "show_too_large"
  | "tags_too_large";

/** The four catalog states [MB-10]. */
export type CatalogState = "ready" | "chat_only" | "unsupported" | "unavailable";

export type ModelStatus =
  | { available: true; profile: QualifiedProfile }
  | { available: false; reason: UnavailableReason };

/** Public catalog profile for `GET /api/models` — never host, port or digests [MB-1, MB-10]. */
export interface PublicModelProfile {
  id: string;
  default: boolean;
  state: CatalogState;
  available: boolean;
  reason?: UnavailableReason;
  window: number | null;
  /** The input budget (window − output reserve). */
  budget: number | null;
  capabilities: string[];
  family: string | null;
  parameter_size: string | null;
  quantization: string | null;
}

/**
 * The broker as the Runs engine, /health and /api/models use it.
 *
 * @example
 * const outcome = await broker.chat({
 *   modelId: "qwen3.5:2b", phase: "plain", messages, signal, deadline: Date.now() + 240_000,
 *   ledger, observer, onDelta: (d) => sse.push(d.text),
 * });
 * if (outcome.kind === "completed") commit(outcome.content, outcome.reason);
 */
export interface ModelBroker {
  /** One logical model call (plus at most one overflow-recovery call). Never throws. */
  chat(req: ChatRequest): Promise<ChatOutcome>;
  /** Current qualification of one catalog entry (default entry when omitted). */
  status(modelId?: string): ModelStatus;
  /**
   * The qualified profile for admission/context compilation, re-qualifying on
   * demand when unavailable. Failure codes: model_not_found, model_unavailable,
   * model_capability_missing.
   */
  profile(modelId: string): Promise<
    { ok: true; profile: QualifiedProfile } | { ok: false; code: ErrorCode }
  >;
  /** Public profiles for GET /api/models. */
  publicProfiles(): PublicModelProfile[];
  /** Runs discovery now (single-flight) [MB-10]. */
  requalify(): Promise<void>;
  /** Explicit refresh (POST /api/models/refresh): discovery that also forgets vanished entries. */
  refresh(): Promise<void>;
  /** The pinned address's Ollama admin calls (pull/delete) [MB-13]; null until pinned. */
  admin(): import("./http_client.ts").PinnedAddress | null;
  /** Non-blocking: starts a re-qualification if unavailable and the spacing allows. */
  poke(): void;
  /** Aborts qualification in flight. Chat calls end through their own signals (Run cancel). */
  close(): Promise<void>;
}
