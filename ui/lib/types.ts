/**
 * The UI's view of the §13 API, and tolerant normalizers that turn response
 * JSON into these shapes. Normalizers keep only the fields the UI renders and
 * coerce types, so a surprising server value can never reach the DOM as
 * anything but text.
 */

export const SYSTEM_AGENT_ID = "00000000-0000-4000-8000-000000000001";

export interface Agent {
  id: string;
  name: string;
  state: string;
  generation: number | null;
  system: boolean;
  /** [AG-5] Why start-up found this Agent broken (state `unavailable`), else null. */
  unavailableReason: string | null;
  /** The Agent's own default model (null: the catalog default) [MB-14]. */
  defaultModelId: string | null;
  /** Reasoning (`think`) for thinking models [MB-12]. */
  reasoning: boolean;
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

export type TurnState = "running" | "completed" | "failed" | "cancelled" | "interrupted";

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

export interface ContextProjection {
  available: boolean;
  reason: string | null;
  usedTokens: number | null;
  window: number | null;
  remainingPercent: number | null;
  safeUserTokens: number | null;
  beforeCompaction: number | null;
}

export interface PendingPermission {
  id: string;
  runId: string | null;
  conversationId: string | null;
  tool: string;
  preview: string;
  diff: string;
}

export interface EventEnvelope {
  seq: number;
  kind: string;
  ts: string;
  payload: Record<string, unknown>;
  run_id: string;
  agent_id: string;
  conversation_id: string;
}

export interface CommandArg {
  name: string;
  required: boolean;
  description: string;
}

export interface CommandDescriptor {
  name: string;
  aliases: string[];
  summary: string;
  usage: string;
  args: CommandArg[];
}

export interface CommandLine {
  label: string;
  value: string;
}

export type CommandEffect =
  | { type: "set_model"; model_id: string }
  | { type: "compact_next_turn" }
  | { type: "new_conversation" };

export interface CommandResult {
  command: string;
  title: string;
  lines: CommandLine[];
  effect: CommandEffect | null;
  modelInvoked: boolean;
  turnCreated: boolean;
}

type Obj = Record<string, unknown>;

export function obj(v: unknown): Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Obj : {};
}
export function str(v: unknown, fallback = ""): string {
  return typeof v === "string" ? v : typeof v === "number" ? String(v) : fallback;
}
export function strOrNull(v: unknown): string | null {
  return typeof v === "string" && v.length > 0 ? v : null;
}
export function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}
function time(v: unknown): number | null {
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (typeof v === "string") {
    const t = Date.parse(v);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}
/** The array under the first key that holds one (or the value itself). */
export function list(v: unknown, ...keys: string[]): unknown[] {
  if (Array.isArray(v)) return v;
  const o = obj(v);
  for (const k of keys) if (Array.isArray(o[k])) return o[k] as unknown[];
  return [];
}

export function toAgent(v: unknown): Agent {
  const o = obj(v);
  const id = str(o.id);
  return {
    id,
    name: str(o.name, id),
    state: str(o.state, "active"),
    generation: num(o.generation),
    system: o.system === true || o.is_system === true || id === SYSTEM_AGENT_ID,
    unavailableReason: typeof o.unavailable_reason === "string" ? o.unavailable_reason : null,
    defaultModelId: typeof o.default_model_id === "string" ? o.default_model_id : null,
    reasoning: o.reasoning === true,
  };
}

export function toConversation(v: unknown): Conversation {
  const o = obj(v);
  return {
    id: str(o.id),
    title: str(o.title, "Untitled"),
    updatedAt: time(o.updated_at),
    parentId: strOrNull(o.parent_id),
    activeRunId: strOrNull(o.active_run_id),
  };
}

const TURN_STATES: readonly TurnState[] = [
  "running",
  "completed",
  "failed",
  "cancelled",
  "interrupted",
];

export function toTurn(v: unknown): Turn {
  const o = obj(v);
  const term = obj(o.terminal ?? o.error);
  const state = str(o.state ?? o.status) as TurnState;
  return {
    id: str(o.id),
    seq: num(o.seq) ?? 0,
    state: TURN_STATES.includes(state) ? state : "failed",
    userMessage: str(o.user_message ?? o.message),
    assistantMessage: typeof o.assistant_message === "string" ? o.assistant_message : null,
    partialText: typeof o.partial_text === "string" && o.partial_text !== ""
      ? o.partial_text
      : null,
    runId: strOrNull(o.run_id),
    code: strOrNull(o.terminal_code ?? term.code),
    stage: strOrNull(o.terminal_stage ?? term.stage),
    retryable: (o.retryable ?? term.retryable) === true || o.retryable === 1,
    createdAt: time(o.created_at),
    finishedAt: time(o.finished_at),
    durationMs: num(term.duration_ms),
  };
}

export function toPage(v: unknown): ConversationPage {
  const o = obj(v);
  const conversation = toConversation(o.conversation ?? o.session ?? o);
  const turns = list(o, "turns").map(toTurn).sort((a, b) => a.seq - b.seq);
  if (conversation.activeRunId === null) {
    const running = turns.find((t) => t.state === "running" && t.runId);
    if (running) conversation.activeRunId = running.runId;
  }
  const page = obj(o.page);
  const before = strOrNull(page.next_before_cursor ?? o.before ?? o.next_before ?? page.before);
  return { conversation, turns, before };
}

export function toModel(v: unknown): ModelProfile {
  const o = obj(v);
  const availability = o.availability ?? o.available;
  return {
    id: str(o.id ?? o.model_id),
    window: num(o.window ?? o.context_window),
    available: availability === true || availability === "available",
    reason: strOrNull(o.reason),
    capabilities: list(o.capabilities).filter((c): c is string => typeof c === "string"),
    isDefault: o.default === true,
    ...(typeof o.state === "string" ? { state: o.state } : {}),
  };
}

export function toProjection(v: unknown): ContextProjection {
  const o = obj(v);
  const window = num(o.window ?? o.window_tokens);
  const used = num(o.fixed_context_tokens ?? o.context_tokens ?? o.used_tokens);
  const remaining = num(o.remaining_percent ?? o.remaining_pct);
  const unavailable = o.available === false || o.status === "unavailable" ||
    (window === null || used === null);
  return {
    available: !unavailable,
    reason: strOrNull(o.reason) ?? (unavailable ? "no estimate yet" : null),
    usedTokens: used,
    window,
    remainingPercent: remaining ??
      (used !== null && window ? Math.max(0, Math.round(100 * (1 - used / window))) : null),
    safeUserTokens: num(o.safe_user_tokens),
    beforeCompaction: num(o.tokens_before_compaction ?? o.tokens_before_auto_compaction),
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
  };
}

export function toPermission(v: unknown): PendingPermission {
  const o = obj(v);
  const preview = o.preview;
  return {
    id: str(o.id),
    runId: strOrNull(o.run_id),
    conversationId: strOrNull(o.conversation_id),
    tool: str(o.tool ?? o.tool_id, "tool"),
    preview: typeof preview === "string"
      ? preview
      : preview
      ? JSON.stringify(preview, null, 2)
      : "",
    diff: str(o.diff),
  };
}

export function toEnvelope(v: unknown): EventEnvelope | null {
  const o = obj(v);
  const seq = num(o.seq);
  const kind = strOrNull(o.kind);
  if (kind === null) return null;
  return {
    seq: seq ?? -1,
    kind,
    ts: str(o.ts),
    payload: obj(o.payload),
    run_id: str(o.run_id),
    agent_id: str(o.agent_id),
    conversation_id: str(o.conversation_id),
  };
}

export function toCommands(v: unknown): CommandDescriptor[] {
  return list(v, "commands").map((c) => {
    const o = obj(c);
    return {
      name: str(o.name),
      aliases: list(o.aliases).map((a) => str(a)),
      summary: str(o.summary),
      usage: str(o.usage, `/${str(o.name)}`),
      args: list(o.args).map((a) => {
        const x = obj(a);
        return {
          name: str(x.name),
          required: x.required === true,
          description: str(x.description),
        };
      }),
    };
  });
}

export function toCommandResult(v: unknown): CommandResult {
  const o = obj(v);
  const e = obj(o.effect);
  let effect: CommandEffect | null = null;
  if (e.type === "set_model" && typeof e.model_id === "string") {
    effect = { type: "set_model", model_id: e.model_id };
  } else if (e.type === "compact_next_turn") effect = { type: "compact_next_turn" };
  else if (e.type === "new_conversation") effect = { type: "new_conversation" };
  return {
    command: str(o.command),
    title: str(o.title, str(o.command)),
    lines: list(o.lines).map((l) => ({ label: str(obj(l).label), value: str(obj(l).value) })),
    effect,
    modelInvoked: o.model_invoked === true,
    turnCreated: o.turn_created === true,
  };
}
