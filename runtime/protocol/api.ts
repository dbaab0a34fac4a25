/**
 * The §13 HTTP API's response contract: one strict zod schema per response
 * body, shared by the routes (runtime/http/, which reply through them) and the
 * browser UI (ui/lib/types.ts parses every response with them, bundled from
 * this very module). A field has one name here; neither side guesses.
 * Pure, no I/O: importable by the server, the UI bundle and tests.
 */
import * as z from "zod";
import { EnvelopeSchema } from "./events.ts";
import {
  CONVERSATION_EXPORT_TURNS_MAX,
  CONVERSATION_TITLE_MAX_CHARS,
  IMPORT_ANSWER_MAX_BYTES,
  POLICY_RULES_MAX,
  RUN_EVENTS_MAX,
  SEARCH_RESULTS_MAX,
  USER_MESSAGE_MAX_BYTES,
} from "../limits.ts";
import { utf8Bytes } from "./utf8.ts";

/** The title a Conversation gets when it is created without one (server and UI). */
export const DEFAULT_CONVERSATION_TITLE = "New conversation";

// ---------------------------------------------------------------- errors

/** The fixed error envelope of every non-2xx API answer [GW-6]. */
export const ErrorResponse = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    retryable: z.literal(true).optional(),
  }).strict(),
}).strict();
export type ErrorResponse = z.infer<typeof ErrorResponse>;

// ---------------------------------------------------------------- health and login

export const HealthResponse = z.object({
  status: z.literal("ok"),
  release: z.string(),
  model: z.enum(["available", "unavailable"]),
  reason: z.string().optional(),
}).strict();
export type HealthResponse = z.infer<typeof HealthResponse>;

export const LoginResponse = z.object({ csrf_token: z.string() }).strict();
export const SessionResponse = z.object({ csrf_token: z.string(), expires_at: z.string() })
  .strict();
export const LogoutResponse = z.object({ ok: z.literal(true) }).strict();

// ---------------------------------------------------------------- Agents

/** [AG-5] Every fixed reason an Agent can be `unavailable` (docs/agents.md has the table). */
export const UNAVAILABLE_REASON_CODES = [
  "registry_row_invalid",
  "agent_dir_unsafe",
  "workspace_unsafe",
  "runtime_dir_unsafe",
  "database_unsafe",
  "database_not_sqlite",
  "database_corrupt",
  "database_too_new",
  "database_schema_mismatch",
  "migration_failed",
  "open_failed",
] as const;

export const AgentSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** The registry state, or `unavailable` when start-up found the Agent broken [AG-5]. */
  state: z.enum(["provisioning", "active", "upgrading", "deleting", "unavailable"]),
  generation: z.number().int(),
  is_system: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
  /** Why the Agent is unavailable (null when it serves) [AG-5]. */
  unavailable_reason: z.enum(UNAVAILABLE_REASON_CODES).nullable(),
  /** The Agent's default catalog model (null: the catalog default) [MB-14]. */
  default_model_id: z.string().nullable(),
  /** Reasoning (`think`) for thinking models [MB-12]. */
  reasoning: z.boolean(),
  /** The Agent's own agent-loop bounds (null: the product's defaults) [SB-8]. */
  max_model_calls: z.number().int().nullable(),
  max_tool_calls: z.number().int().nullable(),
  run_deadline_s: z.number().int().nullable(),
  /** The external ACP runner the Agent's Turns run on (null: native) [LC-6]. */
  runner: z.string().nullable(),
  /** document/extract_text offered to its Runs [LC-4]. */
  documents: z.boolean(),
}).strict();
export type AgentJson = z.infer<typeof AgentSchema>;

/** GET /api/runners [LC-6]: names, argv and the NAMES of the runner's environment. */
export const RunnersResponse = z.object({
  runners: z.array(
    z.object({
      name: z.string(),
      argv: z.array(z.string()),
      env: z.array(z.string()),
    }).strict(),
  ),
}).strict();

/** One audit-lite row of an external runner's access [LC-6]. */
export const RunnerAccessSchema = z.object({
  id: z.string(),
  runner: z.string(),
  call_id: z.string().nullable(),
  method: z.string(),
  resource: z.string(),
  decision: z.enum(["allowed", "approved", "denied", "refused", "expired"]),
  code: z.string().nullable(),
  created_at: z.number(),
}).strict();
export type RunnerAccessJson = z.infer<typeof RunnerAccessSchema>;

export const AgentsResponse = z.object({ agents: z.array(AgentSchema) }).strict();
export const AgentResponse = z.object({ agent: AgentSchema }).strict();
/** POST …/sessions/<conv>/attachments [LC-4]: where the file was stored in the workspace. */
export const AttachmentResponse = z.object({
  attachment: z.object({
    /** Workspace-relative, e.g. `attachments/report.pdf`. */
    path: z.string(),
    name: z.string(),
    bytes: z.number().int().min(0),
  }).strict(),
}).strict();
export type AttachmentJson = z.infer<typeof AttachmentResponse>["attachment"];

/** `DELETE` of an Agent or a Conversation. */
export const DeletedResponse = z.object({ id: z.string(), deleted: z.literal(true) }).strict();

// ---------------------------------------------------------------- Conversations and Turns

export const ConversationSchema = z.object({
  id: z.string(),
  title: z.string(),
  revision: z.number().int(),
  parent_id: z.string().nullable(),
  head_turn_id: z.string().nullable(),
  branched_from_turn_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
}).strict();
export type ConversationJson = z.infer<typeof ConversationSchema>;

export const TURN_STATES = ["running", "completed", "failed", "cancelled", "interrupted"] as const;

export const TurnSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  state: z.enum(TURN_STATES),
  user_message: z.string(),
  /** Only completed Turns carry an assistant message [CV-5]. */
  assistant_message: z.string().nullable(),
  run_id: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  /** What a failed/cancelled Turn had shown when it ended; never model history [CV-5]. */
  partial_text: z.string().nullable(),
  /** Safe terminal summary of a failed/cancelled/interrupted Turn. */
  terminal: z.object({
    code: z.string().nullable(),
    stage: z.string().nullable(),
    retryable: z.boolean(),
    duration_ms: z.number(),
  }).strict().nullable(),
}).strict();
export type TurnJson = z.infer<typeof TurnSchema>;

export const ConversationsResponse = z.object({ sessions: z.array(ConversationSchema) }).strict();
export const ConversationResponse = z.object({ session: ConversationSchema }).strict();
/** `GET …/sessions/<conv>`: the Conversation and one page of Turns, oldest first. */
export const ConversationDetailResponse = z.object({
  session: ConversationSchema,
  turns: z.array(TurnSchema),
  page: z.object({
    limit: z.number().int(),
    has_more: z.boolean(),
    next_before_cursor: z.string().nullable(),
  }).strict(),
}).strict();
export type ConversationDetailResponse = z.infer<typeof ConversationDetailResponse>;
export const ContinueResponse = z.object({ session: ConversationSchema, head_turn_id: z.string() })
  .strict();
export const BranchResponse = z.object({
  session: ConversationSchema,
  copied_turns: z.number().int(),
}).strict();
/** `POST …/sessions/<conv>/rewind` [TL-11]: the plan, or what the confirmed rewind did. */
export const RewindFileSchema = z.object({
  path: z.string(),
  /** restore: put back the replaced content; delete: the undone Turns created the file. */
  action: z.enum(["restore", "delete"]),
  status: z.enum(["revert", "changed_since", "expired", "too_large"]),
  reverted: z.boolean(),
  code: z.string().nullable(),
}).strict();
export type RewindFileJson = z.infer<typeof RewindFileSchema>;
export const RewindResponse = z.object({
  turn_id: z.string(),
  confirmed: z.boolean(),
  files: z.array(RewindFileSchema),
  /** The branch made before the Turn (confirm only); the original stays as it was. */
  session: ConversationSchema.nullable(),
}).strict();
export type RewindResponse = z.infer<typeof RewindResponse>;
/** `GET …/sessions/<conv>/branches` [UI-8]: the alternatives `‹ 1/2 ›` navigates. */
export const BranchGroupSchema = z.object({
  /** The Turn of this Conversation where the alternatives diverge (null: none yet). */
  anchor_turn_id: z.string().nullable(),
  /** Which member this Conversation is. */
  index: z.number().int().min(0),
  members: z.array(
    z.object({
      session_id: z.string(),
      title: z.string(),
      /** That member's Turn at the divergence (null: it has none yet). */
      turn_id: z.string().nullable(),
    }).strict(),
  ).min(2),
}).strict();
export type BranchGroupJson = z.infer<typeof BranchGroupSchema>;
export const BranchesResponse = z.object({ groups: z.array(BranchGroupSchema) }).strict();
/** `GET /api/agents/<agent>/search?q=` [UI-9]: best hits first, at most 50. */
export const SearchHitSchema = z.object({
  conversation_id: z.string(),
  title: z.string(),
  /** Null when the Conversation's title matched. */
  turn_id: z.string().nullable(),
  snippet: z.string(),
}).strict();
export type SearchHitJson = z.infer<typeof SearchHitSchema>;
export const SearchResponse = z.object({
  results: z.array(SearchHitSchema).max(SEARCH_RESULTS_MAX),
}).strict();

/**
 * `GET …/sessions/<conv>/export?format=json` and the body of
 * `POST …/sessions/import` [UI-9]. Import validates with this same schema and
 * then uses only the visible transcript (title, messages, states): ids,
 * digests and Run events in a file are never written into the journal.
 */
export const CONVERSATION_EXPORT_FORMAT = "agent-builder.conversation/1";
const utf8Max = (max: number) => z.string().refine((v) => utf8Bytes(v) <= max, "too long");
export const ExportedEventSchema = z.object({
  seq: z.number().int().min(1).max(RUN_EVENTS_MAX),
  kind: z.string().max(64),
  /** The event body as the journal holds it (parsed JSON). */
  body: z.unknown(),
  digest: z.string().max(128),
}).strict();
export const ExportedRunSchema = z.object({
  id: z.string().max(64),
  model_id: z.string().max(64),
  state: z.enum(TURN_STATES),
  journal: z.enum(["full", "snapshot_only", "tombstone"]),
  events: z.array(ExportedEventSchema).max(RUN_EVENTS_MAX),
}).strict();
export const ExportedTurnSchema = z.object({
  seq: z.number().int().min(1),
  state: z.enum(TURN_STATES),
  user_message: utf8Max(USER_MESSAGE_MAX_BYTES),
  assistant_message: utf8Max(IMPORT_ANSWER_MAX_BYTES).nullable(),
  created_at: z.string().max(64),
  finished_at: z.string().max(64).nullable(),
  run: ExportedRunSchema.nullable(),
}).strict();
export const ConversationExportSchema = z.object({
  format: z.literal(CONVERSATION_EXPORT_FORMAT),
  exported_at: z.string().max(64),
  conversation: z.object({
    id: z.string().max(64),
    title: z.string().trim().min(1).max(CONVERSATION_TITLE_MAX_CHARS)
      .regex(/^[^\p{Cc}\p{Cf}\p{Cs}]+$/u),
    created_at: z.string().max(64),
  }).strict(),
  turns: z.array(ExportedTurnSchema).max(CONVERSATION_EXPORT_TURNS_MAX),
}).strict();
export type ConversationExport = z.infer<typeof ConversationExportSchema>;
/** `POST …/sessions/import`: the new Conversation and how many Turns it holds. */
export const ImportResponse = z.object({
  session: ConversationSchema,
  imported_turns: z.number().int(),
}).strict();

// ---------------------------------------------------------------- models

export const PublicModelSchema = z.object({
  id: z.string(),
  default: z.boolean(),
  state: z.enum(["ready", "chat_only", "unsupported", "unavailable"]),
  available: z.boolean(),
  reason: z.string().optional(),
  window: z.number().int().nullable(),
  budget: z.number().int().nullable(),
  capabilities: z.array(z.string()),
  family: z.string().nullable(),
  parameter_size: z.string().nullable(),
  quantization: z.string().nullable(),
}).strict();
export type PublicModel = z.infer<typeof PublicModelSchema>;
export const ModelsResponse = z.object({ models: z.array(PublicModelSchema) }).strict();
export type ModelsResponse = z.infer<typeof ModelsResponse>;

/** `GET /api/models/endpoint`: the configured --ollama URL, for the banner (session only). */
export const ModelEndpointResponse = z.object({ url: z.string() }).strict();

/** One frame of a model pull's progress stream [MB-13] (also a pull's latest state). */
export const PullEventSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("pull.progress"),
    status: z.string(),
    completed: z.number().optional(),
    total: z.number().optional(),
  }).strict(),
  z.object({ kind: z.literal("pull.succeeded"), name: z.string() }).strict(),
  z.object({ kind: z.literal("pull.failed"), message: z.string() }).strict(),
  z.object({ kind: z.literal("pull.cancelled") }).strict(),
]);
export const PullStartedResponse = z.object({ pull_id: z.string() }).strict();
export const PullResponse = z.object({
  pull: z.object({
    pull_id: z.string(),
    name: z.string(),
    state: z.enum(["running", "succeeded", "failed", "cancelled"]),
    last: PullEventSchema.nullable(),
  }).strict(),
}).strict();

// ---------------------------------------------------------------- Runs

export const SubmitRunResponse = z.object({ turn_id: z.string(), run_id: z.string() }).strict();
export const CancelRunResponse = z.object({ run_id: z.string(), state: z.literal("cancelling") })
  .strict();

/** The parts of a context breakdown, in display order [CX-8]. */
export const ContextPartName = z.enum([
  "platform",
  "instructions",
  "environment",
  "git",
  "history",
  "tools",
  "current_message",
  "output_reserve",
  "free",
]);
export type ContextPartName = z.infer<typeof ContextPartName>;

/** Display names of the breakdown parts (the UI's bar and `/context` print the same words). */
export const CONTEXT_PART_LABELS: Readonly<Record<ContextPartName, string>> = Object.freeze({
  platform: "Platform",
  instructions: "Instructions",
  environment: "Environment",
  git: "Git status",
  history: "History",
  tools: "Tools",
  current_message: "Current message",
  output_reserve: "Output reserve",
  free: "Free",
});

/** Tokens per part: input parts sum to `used`; with reserve and free they fill the window. */
export const ContextBreakdown = z.object({
  parts: z.array(z.object({ name: ContextPartName, tokens: z.number().int() }).strict()),
  used: z.number().int(),
  history_turns: z.object({
    kept: z.number().int(),
    collapsed: z.number().int(),
    omitted: z.number().int(),
    /** Turns a kept /compact summary stands for [CX-9]. */
    summarized: z.number().int(),
  }).strict(),
}).strict();
export type ContextBreakdown = z.infer<typeof ContextBreakdown>;

/** Why a count is the upper bound and not exact [CX-7]: a fixed code each. */
export const CountingReason = z.enum([
  "no_tokenizer",
  "tokenizer_verifying",
  "model_unreachable",
  "vocabulary_show_failed",
  "vocabulary_too_large",
  "show_not_json",
  "vocabulary_not_reported",
  "vocabulary_malformed",
  "vocabulary_mismatch",
  "tokenizer_load_failed",
  "tokenizer_thread_failed",
]);
export type CountingReason = z.infer<typeof CountingReason>;

/** What each reason means, in the words the UI's meter and `/context` print. */
export const COUNTING_REASON_LABELS: Readonly<Record<CountingReason, string>> = Object.freeze({
  no_tokenizer: "no tokenizer for this model",
  tokenizer_verifying: "checking the tokenizer against the model",
  model_unreachable: "the model server is unreachable",
  vocabulary_show_failed: "the model server did not report its vocabulary",
  vocabulary_too_large: "the model's description is too large to check",
  show_not_json: "the model's description is not JSON",
  vocabulary_not_reported: "the model does not report its vocabulary",
  vocabulary_malformed: "the model's vocabulary is malformed",
  vocabulary_mismatch: "the model's vocabulary differs from the tokenizer's",
  tokenizer_load_failed: "the tokenizer did not load",
  tokenizer_thread_failed: "the tokenizer thread stopped",
});

/** How tokens are counted [CX-7]: exact with a verified tokenizer, else the upper bound. */
export const ContextCounting = z.object({
  mode: z.enum(["exact", "upper_bound"]),
  estimator: z.string(),
  tokenizer: z.string().nullable(),
  reason: CountingReason.nullable(),
}).strict();

/** A `/compact` summary [CX-9]: pending until kept or dropped; undo ends a kept one. */
export const CompactionSchema = z.object({
  id: z.string(),
  state: z.enum(["pending", "active", "dropped", "undone", "superseded"]),
  summary: z.string(),
  turns: z.number().int(),
  through_turn_id: z.string(),
  model_id: z.string(),
  bytes: z.number().int(),
  created_at: z.string(),
}).strict();
export const CompactionResponse = z.object({ compaction: CompactionSchema }).strict();
export type CompactionView = z.infer<typeof CompactionSchema>;

/** `GET …/sessions/<conv>/context-preview`: the NextTurnProjection [CX-5]. */
export const ContextPreviewResponse = z.discriminatedUnion("available", [
  z.object({
    available: z.literal(true),
    estimator: z.string(),
    window: z.number().int(),
    budget: z.number().int(),
    fixed_context_tokens: z.number().int(),
    history_tokens: z.number().int(),
    /** The meter's one "used" number: fixed context plus history. */
    context_tokens: z.number().int(),
    remaining_percent: z.number(),
    safe_user_tokens: z.number().int(),
    tokens_before_auto_compaction: z.number().int(),
    calibration: z.object({
      samples: z.number().int(),
      ratio: z.number().nullable(),
      calibrated_context_tokens: z.number().int().nullable(),
    }).strict(),
    /** The meter's numbers, from one place: used (fixed + history), window, free. */
    meter: z.object({
      used_tokens: z.number().int(),
      window: z.number().int(),
      output_reserve: z.number().int(),
      free_tokens: z.number().int(),
      used_percent: z.number().int(),
      free_percent: z.number().int(),
      basis: z.enum(["estimate", "calibrated"]),
      counting: z.enum(["exact", "upper_bound"]),
    }).strict(),
    counting: ContextCounting,
    breakdown: ContextBreakdown,
  }).strict(),
  z.object({ available: z.literal(false), reason: z.string() }).strict(),
]);
export type ContextPreviewResponse = z.infer<typeof ContextPreviewResponse>;

const PreparationPhase = z.enum(["reading_inputs", "compiling", "admitting", "committing"]);

export const PreparationResponse = z.object({
  state: z.enum(["preparing", "running", "idle"]),
  run_id: z.string().nullable(),
  operation_id: z.string().nullable(),
  operation: z.object({
    operation_id: z.string(),
    kind: z.enum(["run", "compact"]),
    phase: PreparationPhase,
    started_at: z.number(),
  }).strict().nullable(),
}).strict();
export const CancelPreparationResponse = z.object({
  operation_id: z.string(),
  state: z.literal("cancelling"),
}).strict();

/** One journal event as replay and the event stream deliver it (payload per kind: events.ts). */
export const EventEnvelopeSchema = EnvelopeSchema;
export type EventEnvelopeJson = z.infer<typeof EventEnvelopeSchema>;

/** The states a Run may be in (the store keeps the same words). */
export const RUN_STATES = ["running", "completed", "failed", "cancelled", "interrupted"] as const;
const RunState = z.enum(RUN_STATES);
const JournalState = z.enum(["full", "snapshot_only", "tombstone"]);

/** The durable fallback's first frame: events were missed, here is why [EV-3]. */
export const StreamGapFrame = z.object({
  kind: z.literal("stream.gap"),
  payload: z.object({
    reason: z.string(),
    after_seq: z.number().int(),
    durable_events: z.number().int(),
  }).strict(),
}).strict();

/** The durable fallback's last frame: the Run's converged state and terminal [EV-3]. */
export const StreamSnapshotFrame = z.object({
  kind: z.literal("stream.snapshot"),
  payload: z.object({
    state: RunState,
    journal: JournalState,
    terminal_code: z.string().nullable(),
    terminal: z.object({ kind: z.string(), payload: z.record(z.string(), z.unknown()) }).strict()
      .nullable(),
    snapshot: z.record(z.string(), z.unknown()).nullable(),
  }).strict(),
}).strict();

/** The data of one `…/runs/<run>/events` SSE frame. */
export const StreamFrameSchema = z.union([
  EventEnvelopeSchema,
  StreamGapFrame,
  StreamSnapshotFrame,
]);
export type StreamFrame = z.infer<typeof StreamFrameSchema>;

export const ReplayResponse = z.object({
  run_id: z.string(),
  state: RunState,
  journal: JournalState,
  events: z.array(EventEnvelopeSchema),
  next_cursor: z.number().int().nullable(),
  snapshot: z.record(z.string(), z.unknown()).nullable(),
}).strict();
export type ReplayResponse = z.infer<typeof ReplayResponse>;

/** `GET …/runs/<run>/context`: the plan while in memory, else the `run.started` summary. */
export const RunContextResponse = z.discriminatedUnion("source", [
  z.object({
    source: z.literal("memory"),
    plan_id: z.string(),
    renderer: z.string(),
    estimator: z.string(),
    model_id: z.string(),
    sections: z.array(
      z.object({
        name: z.string(),
        role: z.string(),
        trust: z.string(),
        provenance: z.string(),
        bytes: z.number().int(),
        tokens_estimate: z.number().int(),
        truncation: z.literal("history_read_bound").nullable(),
      }).strict(),
    ),
    history: z.object({
      bundles: z.number().int(),
      kept: z.number().int(),
      collapsed: z.number().int(),
      receipt: z.string().nullable(),
      omitted: z.object({
        count: z.number().int(),
        first_turn_id: z.string(),
        last_turn_id: z.string(),
        policy: z.string(),
        receipt: z.string(),
      }).strict().nullable(),
    }).strict(),
    budget: z.object({
      window: z.number().int(),
      input_budget: z.number().int(),
      output_reserve: z.number().int(),
      collapse_at: z.number().int(),
    }).strict(),
    estimate: z.number().int().nullable(),
    breakdown: ContextBreakdown.nullable(),
    counting: z.object({ mode: z.enum(["exact", "upper_bound"]), estimator: z.string() }).strict(),
    keyed_digest: z.string(),
  }).strict(),
  z.object({
    source: z.literal("run_started"),
    plan_id: z.string(),
    model_id: z.string(),
    section_count: z.number().int(),
    history_count: z.number().int(),
    history_omitted: z.number().int(),
    window: z.number().int(),
    budget: z.number().int(),
    tool_ids: z.array(z.string()),
    protocol_features: z.array(z.string()),
    keyed_digest: z.string(),
  }).strict(),
]);
export type RunContextResponse = z.infer<typeof RunContextResponse>;

export const CapabilityAuditResponse = z.object({
  run_id: z.string(),
  entries: z.array(
    z.object({
      kind: z.enum(["operation", "permission"]),
      id: z.string(),
      call_id: z.string(),
      tool_id: z.string(),
      state: z.string(),
      executor: z.string().nullable(),
      code: z.string().nullable(),
      created_at: z.number(),
      updated_at: z.number(),
    }).strict(),
  ),
  next_offset: z.number().int().nullable(),
  /** Audit-lite rows of an external runner's accesses, oldest first (≤ 256) [LC-6]. */
  runner_access: z.array(RunnerAccessSchema).optional(),
}).strict();

/**
 * One rule of an Agent's policy: `tool` is a tool id, `exec/command:<argv0>` or `mcp/<server>/*`;
 * `path_prefix` (file tools and exec/apply only) is a canonical workspace-relative directory,
 * `.` for the whole workspace. The finer rules are checked by runtime/tools/policy.ts.
 */
export const PolicyRuleSchema = z.object({
  tool: z.string().min(1).max(200),
  decision: z.enum(["allow", "ask", "deny"]),
  path_prefix: z.string().min(1).max(1024).optional(),
}).strict();
export type PolicyRuleJson = z.infer<typeof PolicyRuleSchema>;

export const PendingPermissionSchema = z.object({
  id: z.string(),
  run_id: z.string(),
  call_id: z.string(),
  tool_id: z.string(),
  state: z.string(),
  preview: z.string(),
  created_at: z.number(),
  /** The narrowed rule "Always allow" would add; null when the approval offers none [TL-10]. */
  always_allow: PolicyRuleSchema.nullable().optional(),
  /** Bytes of the full diff kept one click away; null when none is kept [TL-12]. */
  full_diff_bytes: z.number().int().min(0).nullable().optional(),
}).strict();
export type PendingPermissionJson = z.infer<typeof PendingPermissionSchema>;
export const PermissionsResponse = z.object({ pending: z.array(PendingPermissionSchema) }).strict();
export const DecisionResponse = z.object({
  id: z.string(),
  state: z.enum(["approved", "denied"]),
  /** The rule "Always allow" added (or found already present) [TL-10]. */
  rule_added: PolicyRuleSchema.optional(),
}).strict();
/** `GET …/permissions/<id>/diff`: the full diff of an approval (≤ 256 KiB) [TL-12]. */
export const PermissionDiffResponse = z.object({
  id: z.string(),
  tool_id: z.string(),
  diff: z.string(),
}).strict();

// ---------------------------------------------------------------- the operator's workspace view

/** `GET …/workspace/list?path=`: one directory, sorted, at most the browse bound. */
export const WorkspaceListResponse = z.object({
  path: z.string(),
  entries: z.array(
    z.object({
      name: z.string(),
      kind: z.enum(["file", "directory", "other"]),
      size: z.number().int().nullable(),
      modified_ms: z.number().nullable(),
    }).strict(),
  ),
  truncated: z.boolean(),
}).strict();
/** `GET …/workspace/file?path=` (JSON form; `download=1` answers the raw bytes instead). */
export const WorkspaceFileResponse = z.object({
  path: z.string(),
  size: z.number().int(),
  modified_ms: z.number(),
  /** Null when the file is not UTF-8 text. */
  text: z.string().nullable(),
  binary: z.boolean(),
}).strict();
/** `GET …/instructions`: the Agent's instruction file. */
export const InstructionsResponse = z.object({
  present: z.boolean(),
  text: z.string(),
  digest: z.string().nullable(),
}).strict();
/** `POST …/instructions`: the diff (and, unless a dry run, the committed digest). */
export const InstructionsWriteResponse = z.object({
  diff: z.string(),
  committed: z.boolean(),
  digest: z.string(),
}).strict();

// ---------------------------------------------------------------- change sets [EX-4]

/** `GET …/runs/<run>/changes`: a command's change set with what exec/apply did per path. */
export const ChangesResponse = z.object({
  run_id: z.string(),
  call_id: z.string(),
  /** The command record (runtime/exec/): its fields are the exec engineer's to list. */
  command: z.record(z.string(), z.unknown()),
  change_set: z.looseObject({
    entries: z.array(
      z.looseObject({
        path: z.string(),
        /** `applied`, a fixed refusal code, or null before any apply. */
        applied: z.string().nullable(),
      }),
    ),
  }),
}).strict();
/** `GET …/changes/diff?path=`: one path's full unified diff. */
export const ChangeDiffResponse = z.object({
  run_id: z.string(),
  call_id: z.string(),
  path: z.string(),
  diff: z.string().nullable(),
  note: z.unknown(),
}).strict();

// ---------------------------------------------------------------- extensions [LC-5]

/** What the API and the UI show of one MCP server. */
export const ExtensionViewSchema = z.object({
  name: z.string(),
  url: z.string(),
  source: z.enum(["cli", "api"]),
  state: z.enum(["discovering", "ready", "error"]),
  code: z.string().nullable(),
  address: z.string().nullable(),
  tools: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      description: z.string(),
      args: z.array(z.string()),
      policy: z.literal("ask"),
    }).strict(),
  ),
  refused: z.array(z.object({ name: z.string(), reason: z.string() }).strict()),
  discovered_at: z.number().nullable(),
}).strict();
export type ExtensionView = z.infer<typeof ExtensionViewSchema>;
export const ExtensionsResponse = z.object({ extensions: z.array(ExtensionViewSchema) }).strict();
export const ExtensionResponse = z.object({ extension: ExtensionViewSchema }).strict();
export const ExtensionDeletedResponse = z.object({ name: z.string(), deleted: z.literal(true) })
  .strict();
export const EnabledExtensionsResponse = z.object({ enabled: z.array(z.string()) }).strict();

// ---------------------------------------------------------------- skills [LC-3]

/** What the API and the UI list of one installed skill. */
export const SkillViewSchema = z.object({
  name: z.string(),
  description: z.string(),
  entry: z.string(),
  tool_id: z.string(),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  archive_bytes: z.number().int(),
  installed_at: z.number().int(),
  args: z.array(z.string()),
}).strict();
export type SkillView = z.infer<typeof SkillViewSchema>;
/** Inspect: the manifest (parsed and as stored) and the entry script's source. */
export const SkillDetailSchema = SkillViewSchema.extend({
  manifest: z.object({
    name: z.string(),
    description: z.string(),
    entry: z.string(),
    args: z.record(z.string(), z.unknown()),
  }).strict(),
  manifest_text: z.string(),
  source: z.string(),
  hidden_characters: z.number().int().min(0),
  source_visible: z.string(),
}).strict();
export type SkillDetail = z.infer<typeof SkillDetailSchema>;
export const SkillsResponse = z.object({ skills: z.array(SkillViewSchema) }).strict();
export const SkillResponse = z.object({ skill: SkillViewSchema }).strict();
export const SkillDetailResponse = z.object({ skill: SkillDetailSchema }).strict();
export const SkillDeletedResponse = z.object({ name: z.string(), deleted: z.literal(true) })
  .strict();

// ---------------------------------------------------------------- slash commands

export const CommandDescriptorSchema = z.object({
  name: z.string(),
  aliases: z.array(z.string()),
  summary: z.string(),
  usage: z.string(),
  args: z.array(
    z.object({
      name: z.string(),
      required: z.boolean(),
      description: z.string(),
      pattern: z.string(),
    }).strict(),
  ),
}).strict();
export const CommandsResponse = z.object({ commands: z.array(CommandDescriptorSchema) }).strict();

export const CommandEffectSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("set_model"), model_id: z.string() }).strict(),
  z.object({ type: z.literal("compact_next_turn") }).strict(),
  /** [CX-9] The UI asks for a summary (POST …/compactions) and shows it to keep or drop. */
  z.object({ type: z.literal("compact_summary") }).strict(),
  z.object({ type: z.literal("new_conversation") }).strict(),
]);
export const CommandResultResponse = z.object({
  command: z.string(),
  model_invoked: z.literal(false),
  turn_created: z.literal(false),
  title: z.string(),
  lines: z.array(z.object({ label: z.string(), value: z.string() }).strict()),
  effect: CommandEffectSchema.nullable(),
  truncated: z.boolean(),
}).strict();
export type CommandResultResponse = z.infer<typeof CommandResultResponse>;

// ---------------------------------------------------------------- background Tasks [EX-6]

/** How a background Task stands: running, or how it ended (the store keeps the same words). */
export const TaskStatusName = z.enum([
  "running",
  "exited",
  "signaled",
  "timeout",
  "cancelled",
  "interrupted",
  "outcome_unknown",
  "failed",
]);

/** One background Task as the API and the Tasks panel show it. */
export const TaskViewSchema = z.object({
  task_id: z.string(),
  /** The Run that started it (its timeline), and that Run's Conversation. */
  run_id: z.string(),
  conversation_id: z.string().nullable(),
  call_id: z.string(),
  argv: z.array(z.string()),
  cwd: z.string(),
  timeout_s: z.number().int(),
  status: TaskStatusName,
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** Why nothing ran (`failed`): a fixed code. */
  error_code: z.string().nullable(),
  created_at: z.number().int(),
  ended_at: z.number().int().nullable(),
  elapsed_ms: z.number().int(),
  output_bytes: z.number().int(),
  /** Bytes dropped from the front of the ≤ 1 MiB spool (the tail is kept). */
  output_omitted_bytes: z.number().int(),
  /** The output's last bytes (4 KiB in a list, 64 KiB for one Task). */
  output_tail: z.string(),
  /** Bytes of output before output_tail. */
  output_tail_earlier_bytes: z.number().int(),
  change_set: z.object({
    total: z.number().int(),
    truncated: z.boolean(),
    counts: z.object({ added: z.number(), modified: z.number(), deleted: z.number() }).strict(),
    entries: z.array(
      z.object({ path: z.string(), kind: z.string(), note: z.string().nullable() }).strict(),
    ),
  }).strict().nullable(),
  /** Whether `exec/apply {task_id}` can apply its change set now. */
  applicable: z.boolean(),
}).strict();
/** `GET /api/agents/<agent>/tasks`: newest first, active ones included. */
export const TaskListResponse = z.object({
  tasks: z.array(TaskViewSchema),
  active: z.number().int(),
  active_max: z.number().int(),
}).strict();
/** `GET /api/agents/<agent>/tasks/<task>`. */
export const TaskResponse = z.object({ task: TaskViewSchema }).strict();
/** `POST …/tasks/<task>/cancel`: the Task after every process of it ended. */
export const CancelTaskResponse = z.object({ task: TaskViewSchema }).strict();
// ---------------------------------------------------------------- subagents [LC-2, UI-11]

/** One mailbox message of a delegation: the parent's message or the child's answer. */
export const DelegationMessageSchema = z.object({
  direction: z.enum(["parent_to_child", "child_to_parent"]),
  body: z.string(),
  bytes: z.number().int(),
  truncated: z.boolean(),
  digest: z.string(),
}).strict();

/** `GET /api/agents/<agent>/delegations`: the child Runs this Agent started, newest first. */
export const DelegationsResponse = z.object({
  delegations: z.array(
    z.object({
      id: z.string(),
      parent_run_id: z.string(),
      parent_conversation_id: z.string(),
      call_id: z.string(),
      child_agent_id: z.string(),
      /** The delegate's display name, or null when it no longer exists. */
      child_agent_name: z.string().nullable(),
      child_conversation_id: z.string(),
      child_run_id: z.string().nullable(),
      state: z.enum(["running", "completed", "failed", "cancelled", "timeout", "interrupted"]),
      code: z.string().nullable(),
      created_at: z.number(),
      finished_at: z.number().nullable(),
      mailbox: z.array(DelegationMessageSchema).max(2),
    }).strict(),
  ),
}).strict();
export type DelegationsJson = z.infer<typeof DelegationsResponse>;
export type DelegationJson = DelegationsJson["delegations"][number];

// ---------------------------------------------------------------- per-Agent policy [TL-9]

/**
 * `PUT /api/agents/<agent>/policy`. Past 64 rules the gateway's JSON shape bound (64 items per
 * array) already refuses it (422 `schema_violation`); the service checks the bound again for
 * "Always allow" (422 `policy_too_many_rules`).
 */
export const PolicyBody = z.object({ rules: z.array(PolicyRuleSchema).max(POLICY_RULES_MAX) })
  .strict();
export type PolicyBody = z.infer<typeof PolicyBody>;

const DecisionReason = z.enum(["platform deny", "Agent rule", "default"]);

/** A narrower rule (path or program) that applies to a tool, with where it comes from. */
const ScopedDecisionSchema = z.object({
  scope: z.string(),
  decision: z.enum(["allow", "ask", "deny"]),
  reason: DecisionReason,
  /** The rule's index in `rules` when it is an Agent rule. */
  rule_index: z.number().int().min(0).nullable(),
}).strict();

/** One row of the policy view: a catalog tool (or command/MCP form) and its effective decision. */
export const PolicyToolSchema = z.object({
  tool: z.string(),
  /** tool | command | mcp_server */
  kind: z.enum(["tool", "command", "mcp_server"]),
  description: z.string(),
  default_decision: z.enum(["allow", "ask", "deny"]),
  decision: z.enum(["allow", "ask", "deny"]),
  reason: DecisionReason,
  /** What decided it, in words (the platform's reason, or the rule). */
  why: z.string(),
  rule_index: z.number().int().min(0).nullable(),
  scoped: z.array(ScopedDecisionSchema),
}).strict();
export type PolicyToolJson = z.infer<typeof PolicyToolSchema>;

export const PolicyAuditSchema = z.object({
  at: z.number(),
  source: z.enum(["api", "always_allow"]),
  added: z.array(PolicyRuleSchema),
  removed: z.array(PolicyRuleSchema),
}).strict();

export const PolicyResponse = z.object({
  rules: z.array(PolicyRuleSchema),
  /** The platform's own denies: no rule can relax them. */
  platform: z.array(z.object({ scope: z.string(), reason: z.string() }).strict()),
  tools: z.array(PolicyToolSchema),
  /** The newest policy changes first. */
  audit: z.array(PolicyAuditSchema),
  rules_max: z.number().int(),
}).strict();
export type PolicyResponseJson = z.infer<typeof PolicyResponse>;
