/**
 * Conversation search [UI-9]: per-Agent full-text search over Conversation
 * titles and visible Turn text (SQLite FTS5, runtime/store/search_store.ts).
 *
 * Enforced here: the query is 1..SEARCH_QUERY_MAX_BYTES UTF-8 bytes with no
 * control or format characters; it is split into at most SEARCH_TERMS_MAX
 * whitespace-separated terms, each turned into an FTS5 string literal (double
 * quotes doubled), so FTS5 operators typed by the user (`OR`, `NEAR(`, `-`,
 * `col:`, `*`, `^`, parentheses) are always searched as text, never parsed as
 * query syntax. The last term matches as a prefix (type-ahead). Anything FTS5
 * still refuses is `search_query_invalid` (422), never an SQL error. At most
 * SEARCH_RESULTS_MAX hits, best first.
 */
import { escapeName } from "../display_name.ts";
import { AppError } from "../errors.ts";
import {
  SEARCH_QUERY_MAX_BYTES,
  SEARCH_RESULTS_MAX,
  SEARCH_SNIPPET_TOKENS,
  SEARCH_TERMS_MAX,
} from "../limits.ts";
import { searchIndexStepwise } from "../store/search_store.ts";
import { nextLoopTurn } from "../loop_turns.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export interface SearchHit {
  conversation_id: string;
  title: string;
  /** Null when the title matched. */
  turn_id: string | null;
  snippet: string;
}

const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}\p{Cs}]/u;

/**
 * The FTS5 MATCH expression for a user query: every term a quoted string, the
 * last one a prefix. Throws `search_query_invalid` for a query out of bounds.
 * Pure.
 */
export function toMatchExpression(q: string): string {
  const bytes = utf8Bytes(q);
  if (bytes > SEARCH_QUERY_MAX_BYTES) throw new AppError("search_query_invalid", "too long");
  // Whitespace separates terms; controls/format characters (NUL, ESC, bidi …) are refused.
  if (CONTROL_OR_FORMAT.test(q.replace(/[\t\n\r]/g, " "))) {
    throw new AppError("search_query_invalid", "control character");
  }
  const terms = q.split(/\s+/u).filter((t) => t.length > 0);
  if (terms.length === 0) throw new AppError("search_query_invalid", "empty");
  if (terms.length > SEARCH_TERMS_MAX) throw new AppError("search_query_invalid", "too many terms");
  return terms.map((t, i) => {
    const literal = `"${t.replaceAll('"', '""')}"`;
    return i === terms.length - 1 ? `${literal}*` : literal;
  }).join(" ");
}

/**
 * Runs a validated query over one Agent's state database. Each hit's snippet
 * waits for its own loop turn (`nextLoopTurn`), as the Run path's sections do
 * [PF-2].
 */
export async function searchConversations(db: DatabaseSync, q: string): Promise<SearchHit[]> {
  const match = toMatchExpression(q);
  let rows;
  try {
    rows = await searchIndexStepwise(
      db,
      match,
      SEARCH_RESULTS_MAX,
      SEARCH_SNIPPET_TOKENS,
      nextLoopTurn,
    );
  } catch {
    // FTS5 refused the expression; the SQLite text never reaches the client.
    throw new AppError("search_query_invalid", "fts refused");
  }
  return rows.map((r) => ({
    conversation_id: r.conversation_id,
    title: escapeName(r.title),
    turn_id: r.turn_id,
    snippet: r.snippet,
  }));
}
