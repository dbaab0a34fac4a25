/**
 * The only SQL for Conversation search [UI-9] over an Agent's `state.sqlite`.
 * The index (`search_fts`, contentless since migration 0021, mapped through
 * `search_docs`) is maintained by the triggers of migrations 0006, 0015, 0016
 * and 0021 inside every transaction that writes a title or a Turn; the one doc
 * a trigger cannot write — a Turn whose answer is stored deflated — is written
 * by `indexDeflatedTurn` in the same transaction. The MATCH expression is built
 * by the caller from quoted terms only (runtime/conversations/search.ts); this
 * module binds it as a parameter and bounds the result with LIMIT.
 *
 * The index keeps no text [PF-4]: a hit's snippet is made from the hit's own
 * text (title, user message, answer — inflated when stored deflated) by the same
 * `snippet()` over an in-memory FTS5 table with the same tokenizer holding only
 * that text, so it is the snippet the index would have made (a snippet depends
 * only on its document and the query). The server makes them one per loop turn
 * (`searchIndexStepwise`).
 */
import { DatabaseSync } from "node:sqlite";
import { answerOf } from "./turn_answer.ts";

export interface SearchHitRow {
  conversation_id: string;
  /** Null when the hit is the Conversation's title. */
  turn_id: string | null;
  title: string;
  snippet: string;
}

/** The index's columns and tokenizer (migration 0021), for the snippet table too. */
const FTS_COLUMNS = "title, user_message, assistant_message, " +
  "tokenize = 'unicode61 remove_diacritics 2'";

/**
 * Indexes a Turn whose answer the row holds deflated (its doc already exists in
 * search_docs: the trigger made it when the Turn ended or was inserted).
 */
export function indexDeflatedTurn(
  db: DatabaseSync,
  turnId: string,
  userMessage: string,
  answer: string,
): void {
  db.prepare(
    `INSERT INTO search_fts (rowid, title, user_message, assistant_message)
     SELECT doc, '', ?, ? FROM search_docs WHERE turn_id = ?`,
  ).run(userMessage, answer, turnId);
}

interface Hit {
  doc: number;
  conversation_id: string;
  turn_id: string | null;
  title: string;
  user_message: string | null;
  state: string | null;
  assistant_message: string | null;
  assistant_z: Uint8Array | null;
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
  return rankedHits(db, match, limit).map((h) => rowWithSnippet(h, match, tokens));
}

/**
 * `searchIndex`, with `between()` awaited before each hit's snippet [PF-2]: a
 * snippet re-reads its hit's whole text (up to ~3 ms for a long answer and a
 * common prefix), and fifty of them in one go held the server's event loop for
 * over 100 ms. The hits and their texts are read first, in one statement, so
 * the rows are those of one moment whatever happens between two snippets.
 */
export async function searchIndexStepwise(
  db: DatabaseSync,
  match: string,
  limit: number,
  tokens: number,
  between: () => Promise<void>,
): Promise<SearchHitRow[]> {
  const rows: SearchHitRow[] = [];
  for (const h of rankedHits(db, match, limit)) {
    await between();
    rows.push(rowWithSnippet(h, match, tokens));
  }
  return rows;
}

function rankedHits(db: DatabaseSync, match: string, limit: number): Hit[] {
  return db.prepare(
    `SELECT f.rowid AS doc, d.conversation_id AS conversation_id, d.turn_id AS turn_id,
            c.title AS title, t.user_message AS user_message, t.state AS state,
            t.assistant_message AS assistant_message, t.assistant_z AS assistant_z
     FROM search_fts f
     JOIN search_docs d ON d.doc = f.rowid
     JOIN conversations c ON c.id = d.conversation_id
     LEFT JOIN turns t ON t.id = d.turn_id
     WHERE search_fts MATCH ?
     ORDER BY f.rank, d.doc
     LIMIT ?`,
  ).all(match, limit) as unknown as Hit[];
}

/**
 * A hit's row with its snippet, made from the hit's own text (what its doc was
 * indexed with) as the only document of an in-memory FTS5 table: a snippet
 * depends only on its document and the query. (One table per hit: FTS5 does not
 * narrow `snippet()`'s MATCH to one rowid of a shared table, and a DELETE
 * re-tokenizes the text it removes.)
 */
function rowWithSnippet(h: Hit, match: string, tokens: number): SearchHitRow {
  const mem = new DatabaseSync(":memory:");
  try {
    mem.exec(`CREATE VIRTUAL TABLE hit USING fts5(${FTS_COLUMNS})`);
    const insert = mem.prepare(
      "INSERT INTO hit (rowid, title, user_message, assistant_message) VALUES (?, ?, ?, ?)",
    );
    if (h.turn_id === null) {
      insert.run(h.doc, h.title, "", "");
    } else {
      const answer = h.state === "completed"
        ? answerOf(h.assistant_message, h.assistant_z) ?? ""
        : "";
      insert.run(h.doc, "", h.user_message ?? "", answer);
    }
    const r = mem.prepare(
      "SELECT snippet(hit, -1, '', '', '…', ?) AS snippet FROM hit WHERE hit MATCH ?",
    ).get(tokens, match) as { snippet: string } | undefined;
    return {
      conversation_id: h.conversation_id,
      turn_id: h.turn_id,
      title: h.title,
      snippet: r?.snippet ?? "",
    };
  } finally {
    mem.close();
  }
}
