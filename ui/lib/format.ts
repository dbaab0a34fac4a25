/**
 * Small pure formatters for the chat and composer: the context meter text
 * [UI-4] ("≈X / window, N% left", "exact X / …" with a verified tokenizer, or
 * the unavailable reason), token counts,
 * durations and relative times.
 */
import type { ContextProjection, Turn } from "./types.ts";
import { COUNTING_REASON_LABELS } from "../../runtime/protocol/api.ts";
import { utf8Bytes } from "../../runtime/protocol/utf8.ts";

export function fmtTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  // One decimal below 100k so a 32,768-token window reads 32.8k, not a rounded-up 33k.
  if (n < 100_000) return `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
  return `${Math.round(n / 1000)}k`;
}

/** The server's bounds on what the composer sends [GW-4, SC-1] (the UI does not import runtime/). */
export const MESSAGE_MAX_BYTES = 8192;
export const COMMAND_MAX_BYTES = 4096;
/** The byte count shows from this share of the bound on. */
const SIZE_SHOWN_FROM = 0.9;

export interface SizeView {
  /** Null while the draft is comfortably within the bound. */
  text: string | null;
  over: boolean;
}

/**
 * The composer's byte count for what Enter would send (the trimmed draft): a
 * message may hold 8192 UTF-8 bytes, a slash command 4096. Over the bound the
 * draft stays, Send is disabled and the text says by how much.
 */
export function sizeView(draft: string): SizeView {
  const text = draft.trim();
  const max = text.startsWith("/") ? COMMAND_MAX_BYTES : MESSAGE_MAX_BYTES;
  const bytes = utf8Bytes(text);
  const n = (x: number) => x.toLocaleString("en-US");
  if (bytes > max) {
    const by = bytes - max;
    return {
      text: `${n(by)} byte${by === 1 ? "" : "s"} over the ${n(max)}-byte limit`,
      over: true,
    };
  }
  if (bytes >= max * SIZE_SHOWN_FROM) return { text: `${n(bytes)} / ${n(max)} bytes`, over: false };
  return { text: null, over: false };
}

export interface MeterView {
  text: string;
  /** 0..100 used, or null when unavailable. */
  usedPercent: number | null;
  level: "ok" | "warn" | "high" | "unknown";
  title: string;
}

export function meterView(p: ContextProjection | null): MeterView {
  if (p === null) {
    return { text: "Context: loading…", usedPercent: null, level: "unknown", title: "" };
  }
  const d = p.detail;
  if (!p.available || d === null) {
    const reason = p.reason ?? "unknown";
    return {
      text: `Context: unavailable (${reason})`,
      usedPercent: null,
      level: "unknown",
      title: `The next turn's size cannot be estimated: ${reason}`,
    };
  }
  // Every number is the server's: used (fixed context + history), window, free [CX-5].
  const m = d.meter;
  const exact = m.counting === "exact";
  const mark = exact ? "exact " : "≈";
  const calibrated = m.basis === "calibrated";
  const title = [
    exact
      ? `Counted exactly with the ${d.counting.tokenizer ?? "model's"} tokenizer (+2 % margin)`
      : `Upper bound (1 token per byte)${
        d.counting.reason ? `: ${COUNTING_REASON_LABELS[d.counting.reason]}` : ""
      }`,
    calibrated
      ? `calibrated from the model's last ${d.calibration.samples} prompt count${
        d.calibration.samples === 1 ? "" : "s"
      } (×${d.calibration.ratio})`
      : "not calibrated yet",
    `room for ${fmtTokens(m.free_tokens)} tokens of message`,
    `${fmtTokens(m.output_reserve)} reserved for the answer`,
    `${fmtTokens(d.tokens_before_auto_compaction)} before compaction`,
  ].join("; ");
  return {
    text: `${mark}${fmtTokens(m.used_tokens)} / ${fmtTokens(m.window)}, ${m.free_percent}% left${
      calibrated ? " · calibrated" : ""
    }`,
    usedPercent: m.used_percent,
    level: m.used_percent >= 80 ? "high" : m.used_percent >= 60 ? "warn" : "ok",
    title,
  };
}

export function fmtDuration(ms: number | null): string {
  if (ms === null || ms < 0) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}

/** A wall-clock time of day ("14:03:12"), for records such as an approval's decision. */
export function fmtClock(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export function turnDuration(t: Turn): number | null {
  if (t.durationMs !== null && t.durationMs > 0) return t.durationMs;
  return t.createdAt !== null && t.finishedAt !== null ? t.finishedAt - t.createdAt : null;
}

export function fmtRelative(at: number | null, now = Date.now()): string {
  if (at === null) return "";
  const s = Math.round((now - at) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** Scroll position test for autoscroll: within `slack` px of the bottom. */
export function isNearBottom(top: number, height: number, scrollHeight: number, slack = 48) {
  return scrollHeight - (top + height) <= slack;
}

/** Merges an older page in front of the loaded turns, without duplicates, in seq order. */
export function mergeTurns(older: readonly Turn[], current: readonly Turn[]): Turn[] {
  const byId = new Map<string, Turn>();
  for (const t of older) byId.set(t.id, t);
  for (const t of current) byId.set(t.id, t);
  return [...byId.values()].sort((a, b) => a.seq - b.seq);
}

/** The server's default title for a new Conversation (the one constant both sides use). */
export { DEFAULT_CONVERSATION_TITLE as DEFAULT_TITLE } from "../../runtime/protocol/api.ts";
export const AUTO_TITLE_MAX_CHARS = 60;

/**
 * A title from the first message of a still-untitled Conversation: control and
 * format characters become spaces, whitespace collapses, ≤ 60 characters.
 * Null when there is nothing printable.
 */
export function autoTitle(message: string): string | null {
  const flat = message.replace(/[\p{Cc}\p{Cf}]/gu, " ").replace(/\s+/g, " ").trim();
  if (flat === "") return null;
  const chars = Array.from(flat);
  return chars.length <= AUTO_TITLE_MAX_CHARS
    ? flat
    : `${chars.slice(0, AUTO_TITLE_MAX_CHARS - 1).join("").trimEnd()}…`;
}
