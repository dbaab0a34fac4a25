/**
 * Live state of Runs the browser watches, keyed by run id, so switching
 * Conversations keeps each live Run [UI-5]. Pure reducer (`applyMessage`)
 * plus a small store that owns one SSE connection per running Run. Deltas
 * accumulate as plain text; durable envelopes are kept once per seq.
 */
import { isTerminalKind } from "../../runtime/protocol/events.ts";
import { type EventEnvelope, toEnvelope } from "./types.ts";
import { openEventStream, type SseMessage, type StreamHandle } from "./sse.ts";

/** Run views kept in the page; the oldest finished ones are dropped first. */
export const RUN_VIEWS_MAX = 64;

/** Bound on the live output kept per command (the server streams ≤ 256 KiB) [EX-4]. */
export const LIVE_OUTPUT_MAX_CHARS = 256 * 1024;

/** Bound on the live text kept per Run (the server commits ≤ 12 KiB). */
export const LIVE_TEXT_MAX_CHARS = 64 * 1024;

export interface RunView {
  runId: string;
  agentId: string;
  conversationId: string;
  events: EventEnvelope[];
  liveText: string;
  /** The same deltas per answer block (block = model call number), for multi-block answers. */
  liveBlocks: ReadonlyMap<number, string>;
  /** Live reasoning of the Run (ephemeral deltas) [MB-12]. */
  liveReasoning?: string;
  /** Live output of running commands by call id (`tool.output.delta`) [EX-4]. */
  liveOutput: ReadonlyMap<string, string>;
  terminal: EventEnvelope | null;
  connection: "connecting" | "open" | "closed" | "lost";
  lostReason: string | null;
  gaps: number;
}

export function emptyRun(agentId: string, conversationId: string, runId: string): RunView {
  return {
    runId,
    agentId,
    conversationId,
    events: [],
    liveText: "",
    liveBlocks: new Map(),
    liveOutput: new Map(),
    terminal: null,
    connection: "connecting",
    lostReason: null,
    gaps: 0,
  };
}

function deltaText(payload: Record<string, unknown>): string {
  for (const k of ["text", "delta", "content"]) {
    const v = payload[k];
    if (typeof v === "string") return v;
  }
  return "";
}

/** Applies one SSE message to a RunView (returns a new object when it changed). */
export function applyMessage(view: RunView, msg: SseMessage): RunView {
  let parsed: unknown;
  try {
    parsed = JSON.parse(msg.data);
  } catch {
    return view; // not JSON: ignore rather than render it
  }
  const env = toEnvelope(parsed);
  if (env === null) return view;
  if (env.kind === "assistant.block.delta") {
    if (view.liveText.length >= LIVE_TEXT_MAX_CHARS) return view;
    const delta = deltaText(env.payload);
    const text = (view.liveText + delta).slice(0, LIVE_TEXT_MAX_CHARS);
    const block = typeof env.payload.block === "number" ? env.payload.block : 1;
    const liveBlocks = new Map(view.liveBlocks);
    liveBlocks.set(
      block,
      (liveBlocks.get(block) ?? "") + delta.slice(0, text.length - view.liveText.length),
    );
    return { ...view, liveText: text, liveBlocks, connection: "open" };
  }
  if (env.kind === "assistant.reasoning.delta") {
    const so = view.liveReasoning ?? "";
    if (so.length >= LIVE_TEXT_MAX_CHARS) return view;
    const text = (so + deltaText(env.payload)).slice(0, LIVE_TEXT_MAX_CHARS);
    return { ...view, liveReasoning: text, connection: "open" };
  }
  if (env.kind === "tool.output.delta") {
    // Ephemeral command output [EX-4] shares the seq of the last durable event.
    const callId = typeof env.payload.call_id === "string" ? env.payload.call_id : "";
    const prev = view.liveOutput.get(callId) ?? "";
    if (callId === "" || prev.length >= LIVE_OUTPUT_MAX_CHARS) return view;
    const liveOutput = new Map(view.liveOutput);
    liveOutput.set(callId, (prev + deltaText(env.payload)).slice(0, LIVE_OUTPUT_MAX_CHARS));
    return { ...view, liveOutput, connection: "open" };
  }
  if (env.seq >= 0 && view.events.some((e) => e.seq === env.seq)) return view;
  const events = [...view.events, env];
  // The durable fallback ends with a snapshot that carries the converged state [EV-3].
  const settled = env.kind === "stream.snapshot" && typeof env.payload.state === "string" &&
    env.payload.state !== "running";
  return {
    ...view,
    events,
    connection: "open",
    gaps: view.gaps + (env.kind === "stream.gap" ? 1 : 0),
    terminal: view.terminal ?? (isTerminalKind(env.kind) || settled ? env : null),
  };
}

export interface RunStore {
  get(runId: string): RunView | undefined;
  /** Number of Run views held (≤ RUN_VIEWS_MAX once finished ones can be dropped). */
  size(): number;
  /** Runs being watched that have not reached a terminal event. */
  live(): RunView[];
  /** Every Run view held, live or finished. */
  all(): RunView[];
  /** Starts watching a Run (idempotent). */
  watch(agentId: string, conversationId: string, runId: string): void;
  subscribe(fn: () => void): () => void;
  /** Stops every stream (logout, unmount). */
  closeAll(): void;
}

export function runEventsUrl(agentId: string, runId: string): string {
  return `/api/agents/${encodeURIComponent(agentId)}/runs/${encodeURIComponent(runId)}/events`;
}

export interface RunStoreOptions {
  /** Prefix for stream URLs (tests use a loopback origin). @default "" (same origin) */
  origin?: string;
  /** Delay before reconnect n. @default 400 ms × n */
  backoffMs?(attempt: number): number;
  /** Called once a Run's stream gave up (its view is `lost`, with the reason). */
  onLost?(view: RunView): void;
}

export function createRunStore(
  onTerminal: (view: RunView) => void,
  opts: RunStoreOptions = {},
): RunStore {
  const views = new Map<string, RunView>();
  const streams = new Map<string, StreamHandle>();
  const listeners = new Set<() => void>();
  const emit = () => listeners.forEach((fn) => fn());
  const update = (runId: string, next: RunView) => {
    views.set(runId, next);
    emit();
  };
  /** Keeps at most RUN_VIEWS_MAX views, dropping the oldest finished or lost ones. */
  const prune = () => {
    for (const [id, v] of views) {
      if (views.size <= RUN_VIEWS_MAX) break;
      if (v.terminal !== null || v.connection === "lost") {
        views.delete(id);
        streams.delete(id);
      }
    }
  };
  return {
    get: (id) => views.get(id),
    size: () => views.size,
    live: () => [...views.values()].filter((v) => v.terminal === null && v.connection !== "lost"),
    all: () => [...views.values()],
    watch(agentId, conversationId, runId) {
      if (streams.has(runId)) return;
      const initial = views.get(runId) ?? emptyRun(agentId, conversationId, runId);
      // A fresh stream replays the live record from its start: drop the old live text.
      views.set(runId, {
        ...initial,
        liveText: "",
        liveBlocks: new Map(),
        connection: "connecting",
        lostReason: null,
      });
      prune();
      const handle = openEventStream({
        url: `${opts.origin ?? ""}${runEventsUrl(agentId, runId)}`,
        backoffMs: opts.backoffMs,
        isTerminal: () => views.get(runId)?.terminal != null,
        onMessage(msg) {
          const prev = views.get(runId);
          if (!prev) return;
          const next = applyMessage(prev, msg);
          if (next === prev) return;
          update(runId, next);
          if (next.terminal && !prev.terminal) {
            streams.get(runId)?.close();
            update(runId, { ...next, connection: "closed" });
            onTerminal(views.get(runId)!);
          }
        },
        onGiveUp(reason) {
          const prev = views.get(runId);
          streams.delete(runId);
          if (!prev) return;
          update(runId, { ...prev, connection: "lost", lostReason: reason });
          opts.onLost?.(views.get(runId)!);
        },
      });
      streams.set(runId, handle);
      emit();
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    closeAll() {
      for (const s of streams.values()) s.close();
      streams.clear();
    },
  };
}
