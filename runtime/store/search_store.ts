/**
 * The only SQL for Conversation search [UI-9] over an Agent's `state.sqlite`.
 * The index (`search_fts`, mapped through `search_docs`) is maintained by the
 * triggers of migration 0006 inside every transaction that writes a title or a
 * Turn, so nothing here writes. The MATCH expression is built by the caller
 * from quoted terms only (runtime/conversations/search.ts); this module binds
 * it as a parameter and bounds the result with LIMIT.
 */
import type { DatabaseSync } from "node:sqlite";

export interface SearchHitRow {
  conversation_id: string;
  /** Null when the hit is the Conversation's title. */
  turn_id: string | null;
  title: string;
  snippet: string;
}

/**
 * Best-ranked hits for an FTS5 MATCH expression, at most `limit`. The snippet
 * is plain text (no markers), `tokens` tokens around the best match with "…"
 * where it was cut. Throws the SQLite error on an expression FTS5 refuses.
 */
export function searchIndex(
  db: DatabaseSync,
  match: string,
  limit: number,
  tokens: number,
): SearchHitRow[] {
  return db.prepare(
    `SELECT d.conversation_id AS conversation_id, d.turn_id AS turn_id, c.title AS title,
            snippet(search_fts, -1, '', '', '…', ?) AS snippet
     FROM search_fts f
     JOIN search_docs d ON d.doc = f.rowid
     JOIN conversations c ON c.id = d.conversation_id
     WHERE search_fts MATCH ?
     ORDER BY f.rank, d.doc
     LIMIT ?`,
  ).all(tokens, match, limit) as unknown as SearchHitRow[];
}
