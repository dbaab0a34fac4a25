/**
 * The runner's NDJSON frames [EX-1], shared by the server (runtime/exec/
 * runner.ts) and the confined runner (sandbox/runner_entry.ts). Everything
 * crosses as one bounded line on the runner's stdin/stdout; output bytes are
 * base64 so the server decides how they are decoded and cleaned.
 *
 * What this file enforces: every frame is `.strict()` and bounded here
 * (argv/env item counts and sizes, chunk sizes, head/tail sizes), so a
 * runner that was taken over can send nothing the server has not described.
 *
 * Sequence: runner → `sandbox.attestation` (same shape as the Worker's; the
 * server verifies /proc) or `sandbox.failure`; server → `runner.release`
 * (the job); runner → `runner.output`* (live, coalesced) → `runner.done`;
 * server may send `runner.kill` at any time after the release.
 */
import * as z from "zod";
import { IPC_PROTOCOL_VERSION } from "../runtime/protocol/ipc.ts";
import {
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMPILE_DIAGNOSTICS_MAX_BYTES,
  DOCUMENT_EXTRACT_WALL_MS,
  DOCUMENT_OFFSET_MAX_CHARS,
  DOCUMENT_WINDOW_MAX_CHARS,
  RUNNER_STDIN_MAX_BYTES,
  RUNNER_STREAM_HALF_BYTES,
  TASK_WALL_MAX_MS,
} from "../runtime/limits.ts";

const V = z.literal(IPC_PROTOCOL_VERSION);
/** base64 of at most `bytes` bytes. */
const b64 = (bytes: number) =>
  z.string().max(Math.ceil(bytes / 3) * 4).regex(/^[A-Za-z0-9+/]*={0,2}$/);

/** Live output chunk size the runner forwards at most per frame. */
export const RUNNER_CHUNK_MAX_BYTES = 16 * 1024;

const EnvSchema = z.record(z.string().regex(/^[A-Z_][A-Z0-9_]{0,63}$/), z.string().max(4096))
  .refine((e) => Object.keys(e).length <= 16);

export const CommandJobSchema = z.object({
  kind: z.literal("command"),
  /** Absolute program path (resolved by the server). */
  path: z.string().min(1).max(4096).regex(/^\//),
  argv: z.array(z.string().max(COMMAND_ARG_MAX_ITEM_BYTES)).min(1).max(COMMAND_ARGV_MAX_ITEMS),
  /** Relative to the scratch root as the runner sees it; "" = the root. */
  cwd: z.string().max(1024),
  env: EnvSchema,
  /** Bytes for the program's stdin (base64; skills [LC-3]); absent ⇒ /dev/null. */
  stdin: b64(RUNNER_STDIN_MAX_BYTES).optional(),
  /** ≤ 120 s for a command; a background Task [EX-6] up to TASK_WALL_MAX_MS. */
  timeout_ms: z.number().int().min(1).max(TASK_WALL_MAX_MS),
  /** Live output budget; absent: RUNNER_LIVE_OUTPUT_MAX_BYTES. A Task's output is spooled whole. */
  live_max_bytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
}).strict();
export type CommandJob = z.infer<typeof CommandJobSchema>;

/** runtime-compile [EX-1]: check `path` of the (read-only) scratch with the bundled compiler. */
export const CompileJobSchema = z.object({
  kind: z.literal("compile"),
  /** Relative to the scratch root. */
  path: z.string().min(1).max(1024),
  timeout_ms: z.number().int().min(1).max(60 * 1000),
}).strict();
export type CompileJob = z.infer<typeof CompileJobSchema>;

/** document/extract_text [LC-4]: one window of the text of `path` in the (read-only) scratch. */
export const ExtractJobSchema = z.object({
  kind: z.literal("extract"),
  /** Relative to the scratch root (one name). */
  path: z.string().regex(/^[a-z0-9._-]{1,64}$/),
  format: z.enum(["pdf", "docx", "html", "markdown", "text"]),
  offset: z.number().int().min(0).max(DOCUMENT_OFFSET_MAX_CHARS),
  limit: z.number().int().min(1).max(DOCUMENT_WINDOW_MAX_CHARS),
  timeout_ms: z.number().int().min(1).max(DOCUMENT_EXTRACT_WALL_MS),
}).strict();
export type ExtractJob = z.infer<typeof ExtractJobSchema>;

export const ReleaseFrameSchema = z.object({
  v: V,
  type: z.literal("runner.release"),
  job: z.discriminatedUnion("kind", [CommandJobSchema, CompileJobSchema, ExtractJobSchema]),
}).strict();
export type ReleaseFrame = z.infer<typeof ReleaseFrameSchema>;

export const KillFrameSchema = z.object({ v: V, type: z.literal("runner.kill") }).strict();

export const OutputFrameSchema = z.object({
  v: V,
  type: z.literal("runner.output"),
  stream: z.enum(["stdout", "stderr"]),
  data: b64(RUNNER_CHUNK_MAX_BYTES),
}).strict();
export type OutputFrame = z.infer<typeof OutputFrameSchema>;

const StreamCaptureSchema = z.object({
  head: b64(RUNNER_STREAM_HALF_BYTES),
  tail: b64(RUNNER_STREAM_HALF_BYTES),
  total_bytes: z.number().int().min(0),
}).strict();
export type StreamCapture = z.infer<typeof StreamCaptureSchema>;

export const DoneFrameSchema = z.object({
  v: V,
  type: z.literal("runner.done"),
  ended: z.enum(["exited", "signaled", "timeout", "cancelled", "spawn_failed"]),
  exit_code: z.number().int().nullable(),
  signal: z.string().max(16).nullable(),
  duration_ms: z.number().int().min(0),
  /** The runner proved no descendant is left (sweep + no child left to wait for). */
  released: z.boolean(),
  stdout: StreamCaptureSchema,
  stderr: StreamCaptureSchema,
  /** Compile jobs: the checker's verdict. */
  compile: z.object({
    code: z.enum(["ok", "compile_too_many_files", "compile_unsupported_file", "path_not_found"]),
    diagnostics: z.string().max(COMPILE_DIAGNOSTICS_MAX_BYTES),
    count: z.number().int().min(0),
  }).strict().optional(),
  /** Extract jobs: the window, or the fixed refusal code. */
  extract: z.object({
    code: z.enum([
      "ok",
      "document_unsupported_format",
      "document_encrypted",
      "document_malformed",
      "document_zip_too_many_entries",
      "document_zip_too_large",
      "document_zip_ratio",
      "document_resource_limit",
      "path_not_found",
    ]),
    /** Code points ≤ DOCUMENT_WINDOW_MAX_CHARS: at most two UTF-16 units each. */
    text: z.string().max(2 * DOCUMENT_WINDOW_MAX_CHARS),
    total_chars: z.number().int().min(0),
    next_offset: z.number().int().min(0).nullable(),
    pages: z.number().int().min(0).nullable(),
  }).strict().optional(),
}).strict();
export type DoneFrame = z.infer<typeof DoneFrameSchema>;

export const RunnerToServerSchema = z.discriminatedUnion("type", [
  OutputFrameSchema,
  DoneFrameSchema,
]);
export type RunnerToServer = z.infer<typeof RunnerToServerSchema>;

export const ServerToRunnerSchema = z.discriminatedUnion("type", [
  ReleaseFrameSchema,
  KillFrameSchema,
]);
export type ServerToRunner = z.infer<typeof ServerToRunnerSchema>;

/** zod → the FrameParser shape NdjsonReader takes. */
export function parserOf<T>(schema: z.ZodType<T>) {
  return (v: unknown): { ok: true; frame: T } | { ok: false } => {
    const r = schema.safeParse(v);
    return r.success ? { ok: true, frame: r.data } : { ok: false };
  };
}
