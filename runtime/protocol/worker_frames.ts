/**
 * Model Broker IPC v2 work frames [SB-4]: the messages the Control Plane and
 * the HarnessKernel (inside the confined Worker) exchange after attestation.
 *
 * What this file enforces: frames carry only REFERENCES — plan and toolset
 * ids + digests, iteration numbers, request ids, tool-call ids and
 * content digests. They never carry a prompt, a user message, a tool schema,
 * tool arguments, an endpoint or a model parameter; every schema is strict,
 * so a frame with any extra field is a protocol error. The transport (bounded
 * NDJSON lines, envelope, line/byte counters) is `runtime/protocol/ipc.ts`.
 */
import * as z from "zod";
import { isModelName } from "./model_name.ts";
import { isErrorCode } from "../errors.ts";
import { IPC_PROTOCOL_VERSION } from "./ipc.ts";
import {
  CALL_ID_MAX,
  IPC_ROUNDS_MAX,
  MODEL_RESULT_CALLS_MAX,
  RUN_DEADLINE_MIN_MS,
  RUN_DEADLINE_MS,
  TOOLSET_TOOLS_MAX,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../limits.ts";

/** Work frames share the IPC envelope version (`v`) of runtime/protocol/ipc.ts. */
export const WORK_PROTOCOL_VERSION = IPC_PROTOCOL_VERSION;
const V = z.literal(IPC_PROTOCOL_VERSION);

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Domain-separated SHA-256 digests are written `sha256:<64 hex>`. */
export const DigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/);
export const IdSchema = z.string().regex(ID);
/** Stable tool ids like `file/read_text` [TL-1]. */
/** A built-in tool id, or an extension tool `mcp/<server>/<tool>` [LC-5]. */
export const ToolIdSchema = z.string().regex(
  /^(?:[a-z]{2,16}\/[a-z_]{2,32}|mcp\/[a-z][a-z0-9-]{0,15}\/[A-Za-z0-9_-]{1,64}|skill\/[a-z][a-z0-9-]{1,31})$/,
);
/** Call ids are minted by the Control Plane, never by the model. */
export const CallIdSchema = z.string().regex(/^call-[1-9][0-9]?$/).refine((s) =>
  Number(s.slice(5)) <= CALL_ID_MAX
);
/** Request ids are small per-Run counters; at most IPC_ROUNDS_MAX rounds. */
export const RequestIdSchema = z.number().int().min(1).max(IPC_ROUNDS_MAX);
const IterationSchema = z.number().int().min(1).max(WORKER_MODEL_CALLS_MAX);
const ErrorCodeSchema = z.string().max(64).refine(isErrorCode);

export const RefSchema = z.object({ id: IdSchema, digest: DigestSchema }).strict();
export type Ref = z.infer<typeof RefSchema>;

/** The toolset reference also names the tool ids it contains (ids, never schemas). */
export const ToolsetRefSchema = z.object({
  id: IdSchema,
  digest: DigestSchema,
  tool_ids: z.array(ToolIdSchema).max(TOOLSET_TOOLS_MAX),
}).strict();
export type ToolsetRef = z.infer<typeof ToolsetRefSchema>;

/**
 * TurnRuntimeSnapshot [SB-5, SB-8]: fixed at Run start, never changed by the
 * Worker. The bounds are the product's or an Agent's lower ones, never higher.
 */
export const TurnRuntimeSnapshotSchema = z.object({
  run_id: IdSchema,
  model_id: z.string().max(256).refine(isModelName), // the catalog grammar [MB-10]
  plan: RefSchema,
  toolset: ToolsetRefSchema,
  model_calls_max: z.number().int().min(1).max(WORKER_MODEL_CALLS_MAX),
  tool_calls_max: z.number().int().min(0).max(WORKER_TOOL_CALLS_MAX),
  deadline_ms: z.number().int().min(RUN_DEADLINE_MIN_MS).max(RUN_DEADLINE_MS),
}).strict();
export type TurnRuntimeSnapshot = z.infer<typeof TurnRuntimeSnapshotSchema>;

// ── Control Plane → Worker ───────────────────────────────────────────────────

export const TurnStartFrameSchema = z.object({
  type: z.literal("turn.start"),
  v: V,
  snapshot: TurnRuntimeSnapshotSchema,
}).strict();

/** One tool call the model asked for, as a reference: its arguments stay in the Control Plane. */
export const ToolCallRefSchema = z.object({
  call_id: CallIdSchema,
  tool_id: ToolIdSchema,
  args_digest: DigestSchema,
}).strict();
export type ToolCallRef = z.infer<typeof ToolCallRefSchema>;

export const ModelOutcomeSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("answer"),
    reason: z.enum(["stop", "max_output", "repetition_truncated"]),
    answer_digest: DigestSchema,
  }).strict(),
  z.object({
    kind: z.literal("tool_calls"),
    calls: z.array(ToolCallRefSchema).min(1).max(MODEL_RESULT_CALLS_MAX),
  }).strict(),
  z.object({ kind: z.literal("error"), code: ErrorCodeSchema }).strict(),
]);
export type ModelOutcome = z.infer<typeof ModelOutcomeSchema>;

export const ModelResultFrameSchema = z.object({
  v: V,
  type: z.literal("model.result"),
  request_id: RequestIdSchema,
  iteration: IterationSchema,
  outcome: ModelOutcomeSchema,
}).strict();

export const ToolResultFrameSchema = z.object({
  v: V,
  type: z.literal("tool.result"),
  request_id: RequestIdSchema,
  call_id: CallIdSchema,
  outcome: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("ok"), result_digest: DigestSchema }).strict(),
    z.object({ kind: z.literal("error"), code: ErrorCodeSchema }).strict(),
  ]),
}).strict();

export const CancelFrameSchema = z.object({
  v: V,
  type: z.literal("cancel"),
  reason: z.enum(["user", "shutdown", "deadline"]),
}).strict();

export const ControlToWorkerSchema = z.discriminatedUnion("type", [
  TurnStartFrameSchema,
  ModelResultFrameSchema,
  ToolResultFrameSchema,
  CancelFrameSchema,
]);
export type ControlToWorker = z.infer<typeof ControlToWorkerSchema>;

// ── Worker → Control Plane ───────────────────────────────────────────────────

export const ModelCallFrameSchema = z.object({
  v: V,
  type: z.literal("model.call"),
  request_id: RequestIdSchema,
  iteration: IterationSchema,
  plan: RefSchema,
  /** The provider ToolSet for this call; empty after the last permitted tool call. */
  toolset: ToolsetRefSchema,
  /** Tool results (by call id) the Control Plane appends to the plan for this call. */
  tool_results: z.array(CallIdSchema).max(WORKER_TOOL_CALLS_MAX),
  /** Ask the Control Plane to append its fixed, trusted finalization marker. */
  finalize: z.boolean(),
}).strict();

export const ToolCallFrameSchema = z.object({
  v: V,
  type: z.literal("tool.call"),
  request_id: RequestIdSchema,
  iteration: IterationSchema,
  call_id: CallIdSchema,
  tool_id: ToolIdSchema,
}).strict();

export const TurnFinishFrameSchema = z.object({
  v: V,
  type: z.literal("turn.finish"),
  outcome: z.discriminatedUnion("kind", [
    z.object({
      kind: z.literal("completed"),
      reason: z.enum(["stop", "max_output", "repetition_truncated"]),
      answer_digest: DigestSchema,
      model_calls: IterationSchema,
      tool_calls: z.number().int().min(0).max(WORKER_TOOL_CALLS_MAX),
    }).strict(),
    z.object({ kind: z.literal("failed"), code: ErrorCodeSchema }).strict(),
    z.object({ kind: z.literal("cancelled") }).strict(),
  ]),
}).strict();
export type TurnFinish = z.infer<typeof TurnFinishFrameSchema>["outcome"];

export const WorkerToControlSchema = z.discriminatedUnion("type", [
  ModelCallFrameSchema,
  ToolCallFrameSchema,
  TurnFinishFrameSchema,
]);
export type WorkerToControl = z.infer<typeof WorkerToControlSchema>;

export type ParseResult<T> = { ok: true; frame: T } | { ok: false };

/** Validates a decoded JSON value as a Worker→Control frame; anything else is a protocol error. */
export function parseWorkerFrame(value: unknown): ParseResult<WorkerToControl> {
  const r = WorkerToControlSchema.safeParse(value);
  return r.success ? { ok: true, frame: r.data } : { ok: false };
}

/** Validates a decoded JSON value as a Control→Worker frame. */
export function parseControlFrame(value: unknown): ParseResult<ControlToWorker> {
  const r = ControlToWorkerSchema.safeParse(value);
  return r.success ? { ok: true, frame: r.data } : { ok: false };
}
