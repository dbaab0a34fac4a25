/**
 * Canonical EventEnvelope and the payload schema of every event kind [EV-1].
 *
 * What this file enforces: an event is exactly `{v, run_id, agent_id,
 * conversation_id, seq, kind, ts, payload}` with a strict payload schema per
 * kind; model request/response and transport-attempt events are content-free
 * (estimates, byte counts, digests, codes, timings); `assistant.block.delta`
 * and `assistant.reasoning.delta` are the only ephemeral kinds (live SSE only,
 * never journaled); stream control
 * events (`stream.gap`, `stream.snapshot`, `stream.error`) are produced by
 * the SSE endpoint and are never part of a journal.
 */
import * as z from "zod";
import { isErrorCode } from "../errors.ts";
import { DURATION_MAX_MS } from "../limits.ts";
import { TOOLSET_TOOLS_MAX, USAGE_ROWS_PER_RUN_MAX } from "../limits.ts";
import { CallIdSchema, DigestSchema, IdSchema, ToolIdSchema } from "./worker_frames.ts";

const Code = z.string().max(64).refine(isErrorCode);
const Count = z.number().int().min(0).max(1_000_000_000);
const Ms = z.number().int().min(0).max(DURATION_MAX_MS);

/** A duration as events carry it: whole ms, clamped to 0..DURATION_MAX_MS (one day). */
export function clampDurationMs(ms: number): number {
  return Math.min(DURATION_MAX_MS, Math.max(0, Math.round(ms)));
}
/** Logical model calls of a Run, overflow-recovery calls included (one usage row each). */
const CallNo = z.number().int().min(1).max(USAGE_ROWS_PER_RUN_MAX);
const Phase = z.enum(["plain", "tools"]);

export const PAYLOADS = {
  "run.started": z.object({
    turn_id: IdSchema,
    model_id: z.string().max(256),
    plan_id: IdSchema,
    plan_digest: DigestSchema,
    toolset_digest: DigestSchema,
    tool_ids: z.array(ToolIdSchema).max(TOOLSET_TOOLS_MAX),
    section_count: Count,
    history_count: Count,
    /** Completed Turns left out by the history read bound (absent: none). */
    history_omitted: Count.optional(),
    window: Count,
    budget: Count,
    protocol_features: z.array(z.string().max(32)).max(8),
    /** The model is `chat_only`: this Run has no tools [MB-10]. */
    chat_only: z.literal(true).optional(),
  }).strict(),
  "model.request.started": z.object({
    call: CallNo,
    model_id: z.string().max(256),
    phase: Phase,
    recovery: z.union([z.literal(0), z.literal(1)]),
    token_estimate: Count,
    request_bytes: Count,
    digest: DigestSchema,
    collapsed_bundles: Count,
    /** Tool results of this Turn sent as receipts [CX-10] (absent before release 0.2). */
    collapsed_results: Count.optional(),
  }).strict(),
  "model.response.finished": z.object({
    call: CallNo,
    outcome: z.enum([
      "completed",
      "max_output",
      "repetition_truncated",
      "context_overflow",
      "failed",
      "cancelled",
    ]),
    error_code: Code.nullable(),
    input_tokens: Count,
    output_tokens: Count,
    usage_complete: z.boolean(),
    elapsed_ms: Ms,
    attempts: z.number().int().min(0).max(4),
  }).strict(),
  "model.transport.attempt.started": z.object({
    call: CallNo,
    attempt: z.number().int().min(1).max(4),
    max_attempts: z.number().int().min(1).max(4),
    phase: Phase,
  }).strict(),
  "model.transport.attempt.finished": z.object({
    call: CallNo,
    attempt: z.number().int().min(1).max(4),
    max_attempts: z.number().int().min(1).max(4),
    phase: Phase,
    outcome: z.string().regex(/^[a-z_]{1,32}$/),
    elapsed_ms: Ms,
    ttfb_ms: Ms.nullable(),
  }).strict(),
  "assistant.block.started": z.object({ block: CallNo }).strict(),
  /** Reasoning of the open model call, live only [MB-12]. */
  "assistant.reasoning.delta": z.object({ call: CallNo, text: z.string().max(32768) }).strict(),
  /** A model call's reasoning, committed once: ≤ 32 KiB, `truncated` when cut [MB-12]. */
  "assistant.reasoning.completed": z.object({
    call: CallNo,
    text: z.string().max(32768),
    bytes: Count,
    truncated: z.boolean(),
  }).strict(),
  "assistant.block.delta": z.object({ block: CallNo, text: z.string().max(16384) }).strict(),
  "assistant.block.completed": z.object({
    block: CallNo,
    text: z.string().max(16384),
    bytes: Count,
    digest: DigestSchema,
    reason: z.enum(["stop", "max_output", "repetition_truncated"]),
  }).strict(),
  "tool.call.requested": z.object({
    call_id: CallIdSchema,
    tool_id: ToolIdSchema,
    args: z.record(
      z.string().max(32),
      z.union([
        z.string().max(16384),
        z.number(),
        z.boolean(),
        z.array(z.string().max(4096)).max(256),
      ]),
    ),
    args_digest: DigestSchema,
  }).strict(),
  "tool.call.completed": z.object({
    call_id: CallIdSchema,
    tool_id: ToolIdSchema,
    outcome: z.enum(["ok", "error"]),
    code: Code.nullable(),
    result: z.string().max(32768),
    result_bytes: Count,
    result_digest: DigestSchema,
    projection: z.enum(["inline", "receipt", "error"]),
    elapsed_ms: Ms,
  }).strict(),
  /** Live output of a running command [EX-4]: ephemeral, coalesced, ≤ 256 KiB per command. */
  "tool.output.delta": z.object({
    call_id: CallIdSchema,
    stream: z.enum(["stdout", "stderr"]),
    text: z.string().max(65536),
  }).strict(),
  "permission.requested": z.object({
    permission_id: IdSchema,
    call_id: CallIdSchema,
    tool_id: ToolIdSchema,
    preview: z.string().max(4096),
    plan_digest: z.string().regex(/^[0-9a-f]{64}$/),
    /** The narrowed rule "Always allow" would add [TL-10]; absent or null: none offered. */
    always_allow: z.object({
      tool: z.string().max(200),
      decision: z.literal("allow"),
      path_prefix: z.string().max(1024).optional(),
    }).strict().nullable().optional(),
    /** Bytes of the full diff kept one click away [TL-12]; absent or null: none kept. */
    full_diff_bytes: z.number().int().min(0).nullable().optional(),
  }).strict(),
  "permission.decided": z.object({
    permission_id: IdSchema,
    call_id: CallIdSchema,
    decision: z.enum(["approve", "deny", "expired"]),
  }).strict(),
  "permission.denied": z.object({
    call_id: CallIdSchema,
    tool_id: ToolIdSchema,
    reason: z.enum(["policy_deny", "non_interactive_ask"]),
  }).strict(),
  /**
   * [LC-2] The status of this Run's delegation (a child Run in another Agent), journaled on
   * the PARENT Run: started, the child's tool calls and approvals (so the operator can decide
   * them from the parent's chat), and its end with the bounded answer.
   */
  "subagent.status": z.object({
    call_id: CallIdSchema,
    delegation_id: IdSchema,
    agent_id: IdSchema,
    /** The delegate's display name (escaped), on `running`. */
    agent_name: z.string().max(256).optional(),
    conversation_id: IdSchema,
    run_id: IdSchema,
    state: z.enum([
      "running",
      "tool",
      "awaiting_approval",
      "approval_decided",
      "completed",
      "failed",
      "cancelled",
      "timeout",
    ]),
    /** The child's tool (state tool / awaiting_approval / approval_decided). */
    tool_id: ToolIdSchema.optional(),
    permission_id: IdSchema.optional(),
    preview: z.string().max(4096).optional(),
    decision: z.enum(["approve", "deny", "expired"]).optional(),
    /** The child's answer as the parent gets it (≤ 8 KiB) at `completed`. */
    answer: z.string().max(8192).optional(),
    truncated: z.boolean().optional(),
    code: Code.nullable(),
    elapsed_ms: Ms,
  }).strict(),
  "run.completed": z.object({
    reason: z.enum(["stop", "max_output", "repetition_truncated"]),
    model_calls: Count,
    tool_calls: Count,
    duration_ms: Ms,
  }).strict(),
  "run.failed": z.object({
    code: Code,
    stage: z.enum([
      "admission",
      "sandbox",
      "context",
      "model",
      "tool",
      "worker",
      "journal",
      "recovery",
    ]),
    retryable: z.boolean(),
    duration_ms: Ms,
  }).strict(),
  "run.cancelled": z.object({
    reason: z.enum(["user", "shutdown", "agent_upgrade", "agent_delete"]),
    duration_ms: Ms,
  }).strict(),
} as const;

export type EventKind = keyof typeof PAYLOADS;
export type Payload<K extends EventKind> = z.infer<(typeof PAYLOADS)[K]>;
export const EVENT_KINDS = Object.keys(PAYLOADS) as EventKind[];
export const EPHEMERAL_KINDS: ReadonlySet<EventKind> = new Set([
  "assistant.block.delta",
  "assistant.reasoning.delta",
  "tool.output.delta",
]);
/** The kinds that end a Run's journal: the one list (server, SSE fallback and UI use it). */
export const TERMINAL_KINDS: ReadonlySet<EventKind> = new Set([
  "run.completed",
  "run.failed",
  "run.cancelled",
]);

/** True for a terminal kind; takes any string (the UI also sees stream control frames). */
export function isTerminalKind(kind: string): boolean {
  return (TERMINAL_KINDS as ReadonlySet<string>).has(kind);
}

export const EnvelopeSchema = z.object({
  v: z.literal(1),
  run_id: IdSchema,
  agent_id: IdSchema,
  conversation_id: IdSchema,
  seq: z.number().int().min(1).max(1_000_000),
  kind: z.enum(EVENT_KINDS as [EventKind, ...EventKind[]]),
  ts: z.number().int().min(0),
  payload: z.record(z.string(), z.unknown()),
}).strict();

export interface EventEnvelope<K extends EventKind = EventKind> {
  v: 1;
  run_id: string;
  agent_id: string;
  conversation_id: string;
  seq: number;
  kind: K;
  ts: number;
  payload: Payload<K>;
}

/** Validates an envelope and its kind's payload. */
export function parseEnvelope(value: unknown): EventEnvelope | null {
  const env = EnvelopeSchema.safeParse(value);
  if (!env.success) return null;
  const p = PAYLOADS[env.data.kind].safeParse(env.data.payload);
  if (!p.success) return null;
  return { ...env.data, payload: p.data } as EventEnvelope;
}
