/**
 * The model picker's entries [UI-7, MB-10, MB-14]: ready and chat-only models,
 * each once, with their badges; unavailable ones stay listed (disabled by the
 * caller) with the reason; unsupported ones (e.g. embedding models) are not
 * offered. Pure.
 */
import type { ModelProfile } from "./types.ts";

/** [UI-7, MB-10] ready and chat-only models once each; unavailable ones shown disabled. */
export function pickable(models: ModelProfile[]): ModelProfile[] {
  const seen = new Set<string>();
  return models.filter((m) => m.state !== "unsupported" && !seen.has(m.id) && seen.add(m.id));
}

export function modelLabel(m: ModelProfile): string {
  if (!m.available) return `${m.id} — unavailable${m.reason ? ` (${m.reason})` : ""}`;
  const badges = [
    m.state === "chat_only" ? "chat only" : m.capabilities.includes("tools") ? "tools" : null,
    m.capabilities.includes("thinking") ? "thinking" : null,
  ].filter(Boolean);
  return badges.length ? `${m.id} · ${badges.join(" · ")}` : m.id;
}
