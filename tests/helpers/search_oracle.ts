/**
 * An oracle for the contentless search index [UI-9, PF-4]: the index must answer every term of
 * every indexed text (and a term of none) with exactly the docs an index built now from the
 * texts the database holds would answer — titles, user messages and completed answers, read
 * through the answer's one decoder. Throws with the first disagreement.
 */
import { DatabaseSync } from "node:sqlite";
import { answerOf } from "../../runtime/store/turn_answer.ts";

interface DocText {
  doc: number;
  title: string;
  user: string;
  answer: string;
}

function docTexts(db: DatabaseSync): DocText[] {
  const rows = db.prepare(
    `SELECT d.doc AS doc, d.turn_id AS turn_id, c.title AS title, t.user_message AS user_message,
            t.state AS state, t.assistant_message AS assistant_message, t.assistant_z AS assistant_z
     FROM search_docs d JOIN conversations c ON c.id = d.conversation_id
     LEFT JOIN turns t ON t.id = d.turn_id ORDER BY d.doc`,
  ).all() as unknown as {
    doc: number;
    turn_id: string | null;
    title: string;
    user_message: string | null;
    state: string | null;
    assistant_message: string | null;
    assistant_z: Uint8Array | null;
  }[];
  return rows.map((r) =>
    r.turn_id === null ? { doc: r.doc, title: r.title, user: "", answer: "" } : {
      doc: r.doc,
      title: "",
      user: r.user_message ?? "",
      answer: r.state === "completed" ? answerOf(r.assistant_message, r.assistant_z) ?? "" : "",
    }
  );
}

export function indexAgreesWithText(db: DatabaseSync): void {
  const texts = docTexts(db);
  const mem = new DatabaseSync(":memory:");
  try {
    mem.exec(
      "CREATE VIRTUAL TABLE f USING fts5(title, user_message, assistant_message, " +
        "tokenize = 'unicode61 remove_diacritics 2')",
    );
    const ins = mem.prepare(
      "INSERT INTO f (rowid, title, user_message, assistant_message) VALUES (?, ?, ?, ?)",
    );
    for (const t of texts) ins.run(t.doc, t.title, t.user, t.answer);
    const terms = new Set(["zzzabsent"]);
    for (const t of texts) {
      for (const w of `${t.title} ${t.user} ${t.answer}`.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
        if (w) terms.add(w);
      }
    }
    const docs = (d: DatabaseSync, table: string, term: string) =>
      (d.prepare(`SELECT rowid AS doc FROM ${table} WHERE ${table} MATCH ? ORDER BY rowid`)
        .all(`"${term}"`) as { doc: number }[]).map((r) => r.doc).join(",");
    const all = (d: DatabaseSync, table: string) =>
      (d.prepare(`SELECT rowid AS doc FROM ${table} ORDER BY rowid`).all() as { doc: number }[])
        .map((r) => r.doc).join(",");
    if (all(db, "search_fts") !== all(mem, "f")) {
      throw new Error(`index docs ${all(db, "search_fts")} vs ${all(mem, "f")}`);
    }
    for (const term of terms) {
      const want = docs(mem, "f", term);
      const got = docs(db, "search_fts", term);
      if (got !== want) throw new Error(`index disagrees on "${term}": ${got} vs ${want}`);
    }
  } finally {
    mem.close();
  }
}
