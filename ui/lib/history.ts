/**
 * Upward history paging [CV-3, UI-2]: follows the server's opaque `before`
 * cursor from the oldest Turn on screen. Pages already shown are skipped (at
 * most OLDER_PAGES_PER_CLICK pages per request) so each "Load earlier" shows
 * new Turns; a cursor retired by a revision change (`invalid_session_cursor`)
 * is replaced once by a fresh one from the latest page.
 */
import { errorCode } from "./endpoints.ts";
import { mergeTurns } from "./format.ts";
import type { ConversationPage, Turn } from "./types.ts";

export const OLDER_PAGES_PER_CLICK = 8;

/** The one read the pager needs (the Api's getConversation, bound to a conversation). */
export type PageSource = (before: string | null) => Promise<ConversationPage>;

export interface OlderResult {
  turns: Turn[];
  before: string | null;
}

export async function loadOlderTurns(
  source: PageSource,
  shown: readonly Turn[],
  cursor: string,
): Promise<OlderResult> {
  let next: string | null = cursor;
  let turns = [...shown];
  let retried = false;
  for (let i = 0; i < OLDER_PAGES_PER_CLICK && next !== null; i++) {
    let page: ConversationPage;
    try {
      page = await source(next);
    } catch (err) {
      if (errorCode(err) !== "invalid_session_cursor" || retried) throw err;
      retried = true;
      next = (await source(null)).before;
      continue;
    }
    const known = new Set(turns.map((t) => t.id));
    const fresh = page.turns.some((t) => !known.has(t.id));
    turns = mergeTurns(page.turns, turns);
    next = page.before;
    if (fresh) break;
  }
  return { turns, before: next };
}
