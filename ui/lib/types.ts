/**
 * The UI's view of the §13 API. Every response is parsed with the server's own
 * schema from runtime/protocol/api.ts (bundled from the same module), then
 * mapped to the shapes the components render: one server field per UI field,
 * no fallbacks between names. A response that does not match its schema is a
 * `bad_response` error, never a guess.
 */
import type * as z from "zod";
import {
  AgentSchema,
  type CommandDescriptorSchema,
  CommandResultResponse,
  CommandsResponse,
  ContextPreviewResponse,
  ConversationDetailResponse,
  ConversationSchema,
  PendingPermissionSchema,
  type PolicyRuleJson,
  PublicModelSchema,
  StreamFrameSchema,
  type TURN_STATES,
  TurnSchema,
} from "../../runtime/protocol/api.ts";

export { DEFAULT_CONVERSATION_TITLE } from "../../runtime/protocol/api.ts";

export interface Agent {
  id: string;
  name: string;
  state: string;
  generation: number;
  system: boolean;
  /** [AG-5] Why start-up found this Agent broken (state `unavailable`), else null. */
  unavailableReason: string | null;
  /** The Agent's own default model (null: the catalog default) [MB-14]. */
  defaultModelId: string | null;
  /** Reasoning (`think`) for thinking models [MB-12]. */
  reasoning: boolean;
  /** The external ACP runner its Turns run on (null: native) [LC-6]. */
  runner: string | null;
  /** document/extract_text offered to its Runs [LC-4]. */
  documents: boolean;
}

/** One entry of a workspace directory (the operator's read-only browser). */
export interface WorkspaceEntry {
  name: string;
  kind: "file" | "directory" | "other";
  size: number | null;
  modifiedMs: number | null;
}

export interface WorkspaceFile {
  path: string;
  size: number;
  modifiedMs: number | null;
  /** Null when the file is not UTF-8 text. */
  text: string | null;
}

export interface Instructions {
  present: boolean;
  text: string;
  digest: string | null;
}

export interface Conversation {
  id: string;
  title: string;
  updatedAt: number | null;
  parentId: string | null;
  activeRunId: string | null;
}

export type TurnState = typeof TURN_STATES[number];

export interface Turn {
  id: string;
  seq: number;
  state: TurnState;
  userMessage: string;
  assistantMessage: string | null;
  /** What a stopped/failed Turn had shown when it ended (never model history). */
  partialText: string | null;
  runId: string | null;
  code: string | null;
  stage: string | null;
  retryable: boolean;
  createdAt: number | null;
  finishedAt: number | null;
  durationMs: number | null;
}

export interface ConversationPage {
  conversation: Conversation;
  turns: Turn[];
  /** Opaque cursor for the next older page, or null when there is none. */
  before: string | null;
}

export interface ModelProfile {
  id: string;
  window: number | null;
  available: boolean;
  reason: string | null;
  capabilities: string[];
  isDefault: boolean;
  /** ready | chat_only | unsupported | unavailable [MB-10]. */
  state?: string;
}

/** The server's projection as it arrived (available variant) [CX-5, CX-8]. */
export type ProjectionDetail = Extract<z.infer<typeof ContextPreviewResponse>, { available: true }>;

export interface ContextProjection {
  available: boolean;
  reason: string | null;
  usedTokens: number | null;
  window: number | null;
  remainingPercent: number | null;
  safeUserTokens: number | null;
  beforeCompaction: number | null;
  /** The parsed projection the meter and breakdown bar read (null when unavailable). */
  detail: ProjectionDetail | null;
}

export interface PendingPermission {
  id: string;
  runId: string | null;
  /** Known for approvals streamed from a watched Run; the durable list does not carry it. */
  conversationId: string | null;
  /**
   * The Agent whose permission this is, when not the open one: a delegate's call surfaced in
   * the parent's Conversation [LC-2]. Absent: the open Agent.
   */
  agentId?: string;
  tool: string;
  preview: string;
  diff: string;
  /** The narrowed rule "Always allow" adds; null when the approval offers none [TL-10]. */
  alwaysAllow: PolicyRule | null;
  /** Bytes of the full diff one click away; null when none is kept [TL-12]. */
  fullDiffBytes: number | null;
}

/** One rule of an Agent's policy [TL-9]: the server's shape. */
export type PolicyRule = PolicyRuleJson;

/** A rule's scope in words ("file/write in notes/"). */
export function ruleScope(r: { tool: string; path_prefix?: string }): string {
  if (r.path_prefix === undefined) return r.tool;
  return r.path_prefix === "."
    ? `${r.tool} in the whole workspace`
    : `${r.tool} in ${r.path_prefix}/`;
}

/**
 * One frame of a Run's event stream or replay: a journal event (server fields as
 * sent), or a stream control frame (`stream.gap`, `stream.snapshot`) with seq -1,
 * ts null and empty ids.
 */
export interface EventEnvelope {
  seq: number;
  kind: string;
  /** Milliseconds since the epoch (the server's `ts`); null for control frames. */
  ts: number | null;
  payload: Record<string, unknown>;
  run_id: string;
  agent_id: string;
  conversation_id: string;
}

export type CommandDescriptor = z.infer<typeof CommandDescriptorSchema>;
export type CommandArg = CommandDescriptor["args"][number];

export interface CommandLine {
  label: string;
  value: string;
}

export type CommandEffect =
  | { type: "set_model"; model_id: string }
  | { type: "compact_next_turn" }
  | { type: "compact_summary" }
  | { type: "new_conversation" };

export interface CommandResult {
  command: string;
  title: string;
  lines: CommandLine[];
  effect: CommandEffect | null;
  modelInvoked: boolean;
  turnCreated: boolean;
}

/** A response that does not match its schema: the fixed code the UI shows for it. */
export class BadResponseError extends Error {
  readonly code = "bad_response";
  constructor(what: string) {
    super(`bad_response: ${what}`);
    this.name = "BadResponseError";
  }
}

/** Parses `v` with the server's schema or throws `bad_response`. */
export function parse<S extends z.ZodType>(schema: S, v: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(v);
  if (!r.success) throw new BadResponseError(what);
  return r.data;
}

function time(iso: string | null): number | null {
  if (iso === null) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : t;
}

export function toAgent(v: unknown): Agent {
  const a = parse(AgentSchema, v, "agent");
  return {
    id: a.id,
    name: a.name,
    state: a.state,
    generation: a.generation,
    system: a.is_system,
    unavailableReason: a.unavailable_reason,
    defaultModelId: a.default_model_id,
    reasoning: a.reasoning,
    runner: a.runner,
    documents: a.documents,
  };
}

export function toConversation(v: unknown): Conversation {
  const c = parse(ConversationSchema, v, "conversation");
  return {
    id: c.id,
    title: c.title,
    updatedAt: time(c.updated_at),
    parentId: c.parent_id,
    // The server's Conversation has no Run field: a page derives it from its running Turn.
    activeRunId: null,
  };
}

export function toTurn(v: unknown): Turn {
  const t = parse(TurnSchema, v, "turn");
  return {
    id: t.id,
    seq: t.seq,
    state: t.state,
    userMessage: t.user_message,
    assistantMessage: t.assistant_message,
    partialText: t.partial_text,
    runId: t.run_id,
    code: t.terminal?.code ?? null,
    stage: t.terminal?.stage ?? null,
    retryable: t.terminal?.retryable ?? false,
    createdAt: time(t.created_at),
    finishedAt: time(t.finished_at),
    durationMs: t.terminal?.duration_ms ?? null,
  };
}

export function toPage(v: unknown): ConversationPage {
  const d = parse(ConversationDetailResponse, v, "conversation page");
  const conversation = toConversation(d.session);
  const turns = d.turns.map(toTurn).sort((a, b) => a.seq - b.seq);
  conversation.activeRunId = turns.find((t) => t.state === "running" && t.runId)?.runId ?? null;
  return { conversation, turns, before: d.page.next_before_cursor };
}

export function toModel(v: unknown): ModelProfile {
  const m = parse(PublicModelSchema, v, "model");
  return {
    id: m.id,
    window: m.window,
    available: m.available,
    reason: m.reason ?? null,
    capabilities: m.capabilities,
    isDefault: m.default,
    state: m.state,
  };
}

export function toProjection(v: unknown): ContextProjection {
  const p = parse(ContextPreviewResponse, v, "context preview");
  if (!p.available) return unavailableProjection(p.reason);
  return {
    available: true,
    reason: null,
    // The meter's numbers come from one server object: used (fixed + history), window, free.
    usedTokens: p.meter.used_tokens,
    window: p.meter.window,
    remainingPercent: p.meter.free_percent,
    safeUserTokens: p.meter.free_tokens,
    beforeCompaction: p.tokens_before_auto_compaction,
    detail: p,
  };
}

/** A projection that only says why the next Turn cannot be estimated. */
export function unavailableProjection(reason: string): ContextProjection {
  return {
    available: false,
    reason,
    usedTokens: null,
    window: null,
    remainingPercent: null,
    safeUserTokens: null,
    beforeCompaction: null,
    detail: null,
  };
}

export function toPermission(v: unknown): PendingPermission {
  const p = parse(PendingPermissionSchema, v, "permission");
  return {
    id: p.id,
    runId: p.run_id,
    conversationId: null,
    tool: p.tool_id,
    preview: p.preview,
    diff: "",
    alwaysAllow: p.always_allow ?? null,
    fullDiffBytes: p.full_diff_bytes ?? null,
  };
}

/** A frame from replay or the event stream; null when it does not match the contract. */
export function toEnvelope(v: unknown): EventEnvelope | null {
  const r = StreamFrameSchema.safeParse(v);
  if (!r.success) return null;
  const f = r.data;
  if (f.kind === "stream.gap" || f.kind === "stream.snapshot") {
    return {
      seq: -1,
      kind: f.kind,
      ts: null,
      payload: f.payload,
      run_id: "",
      agent_id: "",
      conversation_id: "",
    };
  }
  return {
    seq: f.seq,
    kind: f.kind,
    ts: f.ts,
    payload: f.payload,
    run_id: f.run_id,
    agent_id: f.agent_id,
    conversation_id: f.conversation_id,
  };
}

export function toCommands(v: unknown): CommandDescriptor[] {
  return parse(CommandsResponse, v, "commands").commands;
}

export function toCommandResult(v: unknown): CommandResult {
  const r = parse(CommandResultResponse, v, "command result");
  return {
    command: r.command,
    title: r.title,
    lines: r.lines,
    effect: r.effect,
    modelInvoked: r.model_invoked,
    turnCreated: r.turn_created,
  };
}
