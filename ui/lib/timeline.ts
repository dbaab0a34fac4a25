/**
 * The Run details timeline model [UI-3]: canonical events in seq order,
 * sorted into four lanes (User / Harness / LLM / Tool), filtered by lane and
 * text, with derived facts for the inspector. Pure; no DOM.
 */
import { stepsBySeq } from "./progress.ts";
import type { EventEnvelope } from "./types.ts";

export type Lane = "user" | "harness" | "llm" | "tool";
export const LANES: readonly Lane[] = ["user", "harness", "llm", "tool"];
export const LANE_LABELS: Record<Lane, string> = {
  user: "User",
  harness: "Harness",
  llm: "LLM",
  tool: "Tool",
};

/** Which lane an event kind belongs to. */
export function laneOf(kind: string): Lane {
  if (kind.startsWith("user.") || kind.startsWith("turn.") || kind.startsWith("permission.")) {
    return "user";
  }
  if (kind.startsWith("model.") || kind.startsWith("assistant.")) return "llm";
  // [LC-2] A delegation's status is the progress of its agent/delegate call.
  if (kind.startsWith("tool.") || kind.startsWith("operation.") || kind.startsWith("subagent.")) {
    return "tool";
  }
  return "harness";
}

export interface TimelineFilter {
  lanes: ReadonlySet<Lane>;
  text: string;
}

export const ALL_LANES: ReadonlySet<Lane> = new Set(LANES);

export interface TimelineRow {
  event: EventEnvelope;
  lane: Lane;
  index: number;
  /** The model call (step) the event belongs to; 0 before the first [SB-8]. */
  step: number;
}

/**
 * Stream control events (`stream.gap`, `stream.snapshot`) carry no seq: the
 * gap sorts before the journal, the snapshot after it.
 */
function sortKey(e: EventEnvelope): number {
  if (e.seq >= 0) return e.seq;
  return e.kind === "stream.snapshot" ? Number.MAX_SAFE_INTEGER : -1;
}

/** Dedupes by seq (control events by kind), sorts by seq and applies the filter. */
export function buildTimeline(
  events: readonly EventEnvelope[],
  filter: TimelineFilter,
): TimelineRow[] {
  const byKey = new Map<string, EventEnvelope>();
  for (const e of events) {
    const key = e.seq >= 0 ? `#${e.seq}` : e.kind;
    if (!byKey.has(key)) byKey.set(key, e);
  }
  const q = filter.text.trim().toLowerCase();
  const steps = stepsBySeq([...byKey.values()]);
  return [...byKey.values()]
    .sort((a, b) => sortKey(a) - sortKey(b))
    .map((event) => ({
      event,
      lane: laneOf(event.kind),
      // Stream control events stay with their neighbours: the gap before, the snapshot after.
      step: steps.get(event.seq) ??
        (event.kind === "stream.snapshot" ? Math.max(0, ...steps.values()) : 0),
    }))
    .filter((r) => filter.lanes.has(r.lane) && (q === "" || r.event.kind.toLowerCase().includes(q)))
    .map((r, index) => ({ ...r, index }));
}

export interface DerivedFact {
  label: string;
  value: string;
}

/** An envelope's time in epoch ms, as the server sends it (null for stream control frames). */
export function ms(ts: number | null): number | null {
  return ts;
}

/** "+1.2 s" since the first event of the Run, or "" when a time is missing. */
export function sinceStart(event: EventEnvelope, all: readonly EventEnvelope[]): string {
  const t = ms(event.ts);
  let first: number | null = null;
  for (const e of all) {
    const x = e.seq >= 0 ? ms(e.ts) : null;
    if (x !== null && (first === null || x < first)) first = x;
  }
  return t === null || first === null ? "" : `+${fmtMs(Math.max(0, t - first))}`;
}

/**
 * What a tool or approval event is about, "file/read_text notes.md": its tool and path-like
 * argument (approval events borrow them from the call they belong to).
 */
export function eventSubject(event: EventEnvelope, all: readonly EventEnvelope[]): string {
  const p = event.payload;
  const callId = typeof p.call_id === "string" ? p.call_id : null;
  if (callId === null) return "";
  const req = all.find((e) => e.kind === "tool.call.requested" && e.payload.call_id === callId);
  const tool = typeof p.tool_id === "string" ? p.tool_id : String(req?.payload.tool_id ?? "");
  const args = (req?.payload.args ?? {}) as Record<string, unknown>;
  const subject = ["path", "pattern", "command"].map((k) => args[k]).find((v) =>
    typeof v === "string" && v !== ""
  ) as string | undefined;
  return [tool, subject].filter(Boolean).join(" ");
}

/** Facts derived from the envelope and its neighbours (not in the payload itself). */
export function deriveFacts(event: EventEnvelope, all: readonly EventEnvelope[]): DerivedFact[] {
  const facts: DerivedFact[] = [
    { label: "Lane", value: laneOf(event.kind) },
    { label: "Sequence", value: `#${event.seq}` },
  ];
  const sorted = [...all].sort((a, b) => a.seq - b.seq);
  const t = event.ts;
  const first = sorted.length ? sorted[0].ts : null;
  if (t !== null && first !== null) {
    facts.push({ label: "Since run start", value: fmtMs(t - first) });
  }
  const prev = sorted.filter((e) => e.seq < event.seq).at(-1);
  const tp = prev ? prev.ts : null;
  if (t !== null && tp !== null) facts.push({ label: "Since previous", value: fmtMs(t - tp) });
  const pairs: Record<string, string> = {
    "model.response.finished": "model.request.started",
    "tool.call.finished": "tool.call.started",
    "tool.call.completed": "tool.call.started",
    "permission.decided": "permission.requested",
  };
  const opener = pairs[event.kind];
  if (opener) {
    const start = sorted.filter((e) => e.kind === opener && e.seq < event.seq).at(-1);
    const ts = start ? start.ts : null;
    if (t !== null && ts !== null) {
      facts.push({ label: `Duration (from #${start!.seq})`, value: fmtMs(t - ts) });
    }
  }
  const bytes = new TextEncoder().encode(JSON.stringify(event.payload)).byteLength;
  facts.push({ label: "Payload size", value: `${bytes} B` });
  return facts;
}

export function fmtMs(n: number): string {
  if (n < 0) return "—";
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(n / 60_000)} m ${Math.round((n % 60_000) / 1000)} s`;
}

/** Next index for step/play, clamped to the rows. */
export function stepIndex(current: number, delta: number, length: number): number {
  if (length === 0) return -1;
  if (current < 0) return delta > 0 ? 0 : length - 1;
  return Math.min(length - 1, Math.max(0, current + delta));
}

/**
 * An event kind cut after each dot ("model.", "transport.", …) so a narrow
 * timeline wraps it between words instead of mid-word.
 */
export function kindSegments(kind: string): string[] {
  return kind.split(/(?<=\.)/);
}
