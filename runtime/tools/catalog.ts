/**
 * ToolSpec v3 and the sealed ToolCatalog [TL-1].
 *
 * What this file enforces: every tool the product offers is one frozen
 * ToolSpec with a stable id, a controlled argument schema (string / integer /
 * boolean only, each bounded), read/write/risk/concurrency attributes, a
 * timeout and input/output byte caps. The catalog is sealed at construction:
 * specs are validated by a strict schema, ids are unique, and the object is
 * frozen, so nothing at run time (a request, an Agent, a Worker, the model)
 * can add or alter a tool. The provider rendering and the manifest digest are
 * derived from the same canonical spec, so provider, ContextPlan, Worker and
 * executor agree on one manifest.
 */
import { z } from "zod";
import {
  CHANGE_SET_PATHS_MAX,
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMMAND_ARGV_MAX_TOTAL_BYTES,
  COMMAND_TIMEOUT_MIN_S,
  DOCUMENT_EXTRACT_WALL_MS,
  DOCUMENT_OFFSET_MAX_CHARS,
  DOCUMENT_WINDOW_MAX_CHARS,
  EDIT_FRAGMENT_MAX_BYTES,
  EDIT_RESULT_MAX_BYTES,
  EDIT_TIMEOUT_MS,
  EXEC_APPLY_TIMEOUT_MS,
  EXEC_COMMAND_TOOL_TIMEOUT_MS,
  GREP_PATTERN_MAX_BYTES,
  PATH_BYTES_MAX,
  READ_CHUNK_MAX_BYTES,
  READ_TIMEOUT_MS,
  RUNNER_OUTPUT_MAX_BYTES,
  RUNNER_WALL_MS,
  SEARCH_RESULT_MAX_BYTES,
  SEARCH_TIMEOUT_MS,
  SUBAGENT_ANSWER_MAX_BYTES,
  SUBAGENT_MESSAGE_MAX_BYTES,
  SUBAGENT_WALL_MS,
  TASK_WALL_MAX_MS,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
  WRITE_CONTENT_MAX_BYTES,
} from "../limits.ts";
import { ToolIdSchema } from "../protocol/worker_frames.ts";

const ArgSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("string"),
    description: z.string().max(200),
    required: z.boolean(),
    max_bytes: z.number().int().min(1).max(16384),
  }).strict(),
  z.object({
    type: z.literal("integer"),
    description: z.string().max(200),
    required: z.boolean(),
    minimum: z.number().int(),
    maximum: z.number().int(),
  }).strict(),
  z.object({
    type: z.literal("boolean"),
    description: z.string().max(200),
    required: z.boolean(),
  }).strict(),
  // A list of strings (exec/command's argv, exec/apply's paths): the catalog
  // checks the shape and these caps; the executor checks its own finer rules.
  z.object({
    type: z.literal("string_array"),
    description: z.string().max(200),
    required: z.boolean(),
    max_items: z.number().int().min(1).max(256),
    item_max_bytes: z.number().int().min(1).max(4096),
  }).strict(),
]);

export const ToolSpecSchema = z.object({
  id: ToolIdSchema,
  version: z.literal(3),
  description: z.string().min(1).max(400),
  // Built-in argument names are lower-case; extension tools [LC-5] keep their own case.
  args: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,31}$/), ArgSchema),
  result: z.object({ kind: z.literal("text"), trust: z.literal("untrusted_tool_output") }).strict(),
  attributes: z.object({
    read: z.boolean(),
    write: z.boolean(),
    risk: z.enum(["low", "medium", "high"]),
    concurrency: z.enum(["parallel_safe", "serial"]),
  }).strict(),
  default_policy: z.enum(["allow", "ask"]),
  timeout_ms: z.number().int().min(1).max(EXEC_COMMAND_TOOL_TIMEOUT_MS),
  cancellable: z.literal(true),
  input_max_bytes: z.number().int().min(1).max(65536),
  output_max_bytes: z.number().int().min(1).max(65536),
}).strict();
export type ToolSpec = z.infer<typeof ToolSpecSchema>;

const text = { kind: "text", trust: "untrusted_tool_output" } as const;
const path = (d: string) => ({
  type: "string",
  description: d,
  required: true,
  max_bytes: PATH_BYTES_MAX,
} as const);
/** The one argument of task/status and task/output [EX-6]. */
const TASK_ID_ARG = {
  type: "string",
  description: "The task_id exec/command returned.",
  required: true,
  max_bytes: 64,
} as const;
const readAttrs = { read: true, write: false, risk: "low", concurrency: "parallel_safe" } as const;
const writeAttrs = { read: true, write: true, risk: "medium", concurrency: "serial" } as const;

/** The product's built-in specs. */
export const BUILTIN_TOOL_SPECS: readonly ToolSpec[] = [
  {
    id: "file/stat",
    version: 3,
    description: "Report type, size and identity of one workspace path.",
    args: { path: path("Workspace-relative path.") },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: READ_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 2048,
    output_max_bytes: READ_CHUNK_MAX_BYTES,
  },
  {
    id: "file/read_text",
    version: 3,
    description: "Read a UTF-8 text file from the workspace (at most 4096 bytes / 256 lines).",
    args: {
      path: path("Workspace-relative path of a text file."),
      offset: {
        type: "integer",
        description: "Byte offset to start from.",
        required: false,
        minimum: 0,
        maximum: 1048576,
      },
    },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: READ_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 2048,
    output_max_bytes: READ_CHUNK_MAX_BYTES * 3,
  },
  {
    id: "file/glob",
    version: 3,
    description: "List workspace files matching a glob pattern.",
    args: {
      pattern: {
        type: "string",
        description: "Glob such as src/**/*.ts.",
        required: true,
        max_bytes: GREP_PATTERN_MAX_BYTES,
      },
    },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: SEARCH_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 1024,
    output_max_bytes: 2 * SEARCH_RESULT_MAX_BYTES, // 12 KiB of results plus JSON framing
  },
  {
    id: "file/grep",
    version: 3,
    description: "Search workspace text files for a literal string.",
    args: {
      pattern: {
        type: "string",
        description: "Literal text to find.",
        required: true,
        max_bytes: GREP_PATTERN_MAX_BYTES,
      },
      path: { ...path("Directory to search; default the workspace."), required: false },
      regex: { type: "boolean", description: "Use the regex subset.", required: false },
    },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: SEARCH_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 2048,
    output_max_bytes: 2 * SEARCH_RESULT_MAX_BYTES, // 12 KiB of results plus JSON framing
  },
  {
    id: "file/edit",
    version: 3,
    description: "Replace one exact occurrence of old text in a workspace file.",
    args: {
      path: path("Workspace-relative path."),
      old_text: {
        type: "string",
        description: "Exact text to replace.",
        required: true,
        max_bytes: EDIT_FRAGMENT_MAX_BYTES,
      },
      new_text: {
        type: "string",
        description: "Replacement text.",
        required: true,
        max_bytes: EDIT_FRAGMENT_MAX_BYTES,
      },
    },
    result: text,
    attributes: writeAttrs,
    default_policy: "ask",
    timeout_ms: EDIT_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 2 * EDIT_FRAGMENT_MAX_BYTES + 2048,
    output_max_bytes: EDIT_RESULT_MAX_BYTES,
  },
  {
    id: "file/write",
    version: 3,
    description: "Create or replace a workspace text file.",
    args: {
      path: path("Workspace-relative path."),
      content: {
        type: "string",
        description: "Full new content.",
        required: true,
        max_bytes: WRITE_CONTENT_MAX_BYTES,
      },
    },
    result: text,
    attributes: writeAttrs,
    default_policy: "ask",
    timeout_ms: EDIT_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: WRITE_CONTENT_MAX_BYTES + 2048,
    output_max_bytes: EDIT_RESULT_MAX_BYTES,
  },
  {
    id: "exec/run",
    version: 3,
    description:
      "Run bounded-bash (printf|pwd|true|false, no shell syntax) or runtime-compile (syntax/type check of one workspace file) in the runner sandbox.",
    args: {
      profile: {
        type: "string",
        description: "bounded-bash or runtime-compile.",
        required: true,
        max_bytes: 32,
      },
      command: {
        type: "string",
        description: "bounded-bash: one of printf, pwd, true, false with ≤ 8 arguments.",
        required: false,
        max_bytes: 2048,
      },
      path: {
        ...path("runtime-compile: workspace-relative .ts/.tsx/.js/.mjs file to check."),
        required: false,
      },
    },
    result: text,
    attributes: { read: true, write: true, risk: "high", concurrency: "serial" },
    default_policy: "ask",
    timeout_ms: RUNNER_WALL_MS,
    cancellable: true,
    input_max_bytes: 4096,
    output_max_bytes: RUNNER_OUTPUT_MAX_BYTES,
  },
  {
    id: "exec/command",
    version: 3,
    description:
      "Run a program on a scratch copy of the workspace (never the workspace itself); returns exit code, output and the change set. Apply changes with exec/apply.",
    args: {
      argv: {
        type: "string_array",
        description: "Program and arguments; argv[0] is a bare name on PATH or deno.",
        required: true,
        max_items: COMMAND_ARGV_MAX_ITEMS,
        item_max_bytes: COMMAND_ARG_MAX_ITEM_BYTES,
      },
      cwd: { ...path("Workspace-relative working directory; default the root."), required: false },
      timeout_s: {
        type: "integer",
        description:
          "Wall-clock limit in seconds: ≤ 120 (default 60); background ≤ 1800 (default).",
        required: false,
        minimum: COMMAND_TIMEOUT_MIN_S,
        maximum: TASK_WALL_MAX_MS / 1000,
      },
      background: {
        type: "boolean",
        description:
          "Run as a background Task: returns task_id at once; read it later with task/status and task/output.",
        required: false,
      },
    },
    result: text,
    attributes: { read: true, write: false, risk: "high", concurrency: "serial" },
    default_policy: "ask",
    timeout_ms: EXEC_COMMAND_TOOL_TIMEOUT_MS,
    cancellable: true,
    // argv's 16 KiB plus JSON escaping (a NUL escapes to six bytes) and the other fields.
    input_max_bytes: 4 * COMMAND_ARGV_MAX_TOTAL_BYTES,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  },
  {
    id: "exec/apply",
    version: 3,
    description:
      "Apply the latest change set of exec/command (or the named paths of it) to the real workspace.",
    args: {
      paths: {
        type: "string_array",
        description: "Workspace-relative paths of the change set; default all of it.",
        required: false,
        max_items: CHANGE_SET_PATHS_MAX,
        item_max_bytes: PATH_BYTES_MAX,
      },
      task_id: {
        type: "string",
        description:
          "Apply a finished background Task's change set instead of the latest command's.",
        required: false,
        max_bytes: 64,
      },
    },
    result: text,
    attributes: writeAttrs,
    default_policy: "ask",
    timeout_ms: EXEC_APPLY_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 65536,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  },
  {
    id: "task/status",
    version: 3,
    description:
      "Status of a background Task (exec/command background: true): running or how it ended, elapsed time, output size, change set.",
    args: { task_id: TASK_ID_ARG },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: READ_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 1024,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  },
  {
    id: "task/output",
    version: 3,
    description: "The latest output (tail) of a background Task, stdout and stderr interleaved.",
    args: { task_id: TASK_ID_ARG },
    result: text,
    attributes: readAttrs,
    default_policy: "allow",
    timeout_ms: READ_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: 1024,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  },
  {
    // [LC-4] Runs in the runner sandbox; offered only with a runner and while the Agent's
    // documents setting is on (runtime/runs/run_inputs.ts).
    id: "document/extract_text",
    version: 3,
    description:
      "Extract the text of a workspace PDF, DOCX, HTML (as Markdown), Markdown or text file (≤ 16 MiB), one window at a time; continue at next_offset.",
    args: {
      path: path("Workspace-relative path of the document."),
      offset: {
        type: "integer",
        description: "Character offset of the window (default 0).",
        required: false,
        minimum: 0,
        maximum: DOCUMENT_OFFSET_MAX_CHARS,
      },
      limit: {
        type: "integer",
        description: `Characters in the window (default and at most ${DOCUMENT_WINDOW_MAX_CHARS}).`,
        required: false,
        minimum: 1,
        maximum: DOCUMENT_WINDOW_MAX_CHARS,
      },
    },
    result: text,
    attributes: { read: true, write: false, risk: "low", concurrency: "serial" },
    default_policy: "allow",
    // The runner's wall plus its start, slot wait and clean-up.
    timeout_ms: DOCUMENT_EXTRACT_WALL_MS + 45 * 1000,
    cancellable: true,
    input_max_bytes: 2048,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  },
  {
    // [LC-2] A child Run in another Agent; the message is all it sees of this Run.
    id: "agent/delegate",
    version: 3,
    description:
      "Ask another Agent (by id) to answer a self-contained message in its own Conversation; returns its answer. The delegate sees only the message.",
    args: {
      agent_id: {
        type: "string",
        description: "Id of the delegate Agent (not this Agent).",
        required: true,
        max_bytes: 64,
      },
      message: {
        type: "string",
        description: "What the delegate should do, self-contained (at most 4096 bytes).",
        required: true,
        // The 4 KiB bound is the delegation's own check (`subagent_message_too_large`); the
        // catalog admits up to 4 × that so a long message gets that code, not a schema error.
        max_bytes: 4 * SUBAGENT_MESSAGE_MAX_BYTES,
      },
    },
    result: text,
    attributes: { read: true, write: false, risk: "medium", concurrency: "serial" },
    default_policy: "ask",
    timeout_ms: SUBAGENT_WALL_MS + 15_000,
    cancellable: true,
    input_max_bytes: 4 * SUBAGENT_MESSAGE_MAX_BYTES + 1024,
    // The answer (≤ 8 KiB) and its envelope; escaping past this is the projection's [TL-3].
    output_max_bytes: 2 * SUBAGENT_ANSWER_MAX_BYTES,
  },
];

/** A sealed catalog: validated, unique ids, frozen. */
export interface ToolCatalog {
  readonly specs: readonly ToolSpec[];
  get(id: string): ToolSpec | undefined;
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === "object") {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

/** Validates and seals a catalog. Throws on an invalid spec or a duplicate id (a bug). */
export function sealCatalog(specs: readonly ToolSpec[] = BUILTIN_TOOL_SPECS): ToolCatalog {
  const byId = new Map<string, ToolSpec>();
  for (const s of specs) {
    const parsed = ToolSpecSchema.parse(s);
    if (byId.has(parsed.id)) throw new Error(`duplicate tool id ${parsed.id}`);
    byId.set(parsed.id, deepFreeze(parsed));
  }
  const sealed = deepFreeze([...byId.values()].sort((a, b) => a.id < b.id ? -1 : 1));
  return Object.freeze({ specs: sealed, get: (id: string) => byId.get(id) });
}

/**
 * Ollama function names cannot carry `/`; the mapping is fixed and reversible:
 * `file/read_text` ⇔ `file__read_text`, `mcp/<server>/<tool>` ⇔
 * `mcp__<server>__<tool>` (server names have no `_`, so the split is unique),
 * `skill/<name>` ⇔ `skill__<name>` [LC-3].
 */
export function providerToolName(id: string): string {
  return id.replaceAll("/", "__");
}

export function toolIdFromProviderName(name: string): string | null {
  const x = /^mcp__([a-z][a-z0-9-]{0,15})__([A-Za-z0-9_-]{1,64})$/.exec(name);
  if (x) return `mcp/${x[1]}/${x[2]}`;
  // Skills [LC-3]: `skill__<name>` (names have no `_`).
  const k = /^skill__([a-z][a-z0-9-]{1,31})$/.exec(name);
  if (k) return `skill/${k[1]}`;
  const m = /^([a-z]{2,16})__([a-z_]{2,32})$/.exec(name);
  return m ? `${m[1]}/${m[2]}` : null;
}

/** The provider (Ollama `tools`) rendering of one spec. */
export function providerToolSchema(spec: ToolSpec): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, a] of Object.entries(spec.args)) {
    properties[name] = a.type === "integer"
      ? { type: "integer", description: a.description, minimum: a.minimum, maximum: a.maximum }
      : a.type === "string_array"
      ? {
        type: "array",
        description: a.description,
        items: { type: "string" },
        maxItems: a.max_items,
      }
      : { type: a.type, description: a.description };
    if (a.required) required.push(name);
  }
  return {
    type: "function",
    function: {
      name: providerToolName(spec.id),
      description: spec.description,
      parameters: { type: "object", properties, required },
    },
  };
}
