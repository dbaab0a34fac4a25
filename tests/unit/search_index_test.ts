/**
 * [UI-9, PF-4] The search index and a Turn's life (agent migration 0015): a
 * running Turn is not in the index; it enters it exactly once, in the
 * transaction that ends it (finish, restart interruption), with its answer
 * only when completed. A database migrated while a Turn was running keeps no
 * early doc of it, so that Turn too is indexed once. And run_events keeps its
 * rows and key across its move to a rowid table (migration 0014).
 */
import { DatabaseSync } from "node:sqlite";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { applyMigrations } from "../../runtime/store/migrate.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import { searchIndex, searchIndexStepwise } from "../../runtime/store/search_store.ts";
import { nextLoopTurn } from "../../runtime/loop_turns.ts";
import { setImmediate } from "node:timers";
import { allTurns } from "../../runtime/store/history_store.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { indexAgreesWithText } from "../helpers/search_oracle.ts";

const uuid = () => crypto.randomUUID();

function migrated(upTo = AGENT_MIGRATIONS.length): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  applyMigrations(db, AGENT_MIGRATIONS.slice(0, upTo));
  return db;
}

function conv(db: DatabaseSync): string {
  const id = uuid();
  assert(s.insertConversation(db, { id, title: "t", now: 1 }, CONVERSATIONS_PER_AGENT_MAX));
  return id;
}

function begin(db: DatabaseSync, c: string, msg: string): string {
  const id = uuid();
  const r = s.beginTurn(db, {
    conversationId: c,
    expectedRevision: s.getConversation(db, c)!.revision,
    turnId: id,
    runId: uuid(),
    userMessage: msg,
    now: 10,
  });
  assertEquals(r.result, "ok");
  return id;
}

// ── Before migration 0021 the store's Turn and search SQL differed (no assistant_z, an
// external-content index with snippet()); a database seeded at an older version is written and
// searched with that SQL, copied here, so a migration's before/after can be compared.

const schema = (db: DatabaseSync) =>
  (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;

function finish(db: DatabaseSync, id: string, t: s.TurnTerminal, now: number): boolean {
  if (schema(db) >= 21) return s.finishTurn(db, id, t, now);
  const done = t.state === "completed";
  return db.prepare(
    `UPDATE turns SET state = ?, assistant_message = ?, finished_at = ?, terminal_code = ?,
       partial_text = ? WHERE id = ? AND state = 'running'`,
  ).run(
    t.state,
    done ? t.assistantMessage ?? "" : null,
    now,
    done ? null : t.code ?? null,
    !done && t.partialText ? t.partialText : null,
    id,
  ).changes === 1;
}

function branch(db: DatabaseSync, sourceId: string, title: string, now: number): void {
  if (schema(db) >= 21) {
    assertEquals(s.branchConversation(db, { sourceId, newId: uuid(), title, now }, 9).result, "ok");
    return;
  }
  const id = uuid();
  assert(s.insertConversation(db, { id, title, now }, CONVERSATIONS_PER_AGENT_MAX));
  db.prepare(
    `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                        created_at, finished_at)
     SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
              substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' ||
              hex(randomblob(6))),
            ?, row_number() OVER (ORDER BY seq), 'completed', user_message, assistant_message,
            created_at, finished_at
     FROM turns WHERE conversation_id = ? AND state = 'completed'`,
  ).run(id, sourceId);
}

function search(db: DatabaseSync, match: string, limit: number, tokens: number) {
  if (schema(db) >= 21) return searchIndex(db, match, limit, tokens);
  return db.prepare(
    `SELECT d.conversation_id AS conversation_id, d.turn_id AS turn_id, c.title AS title,
            snippet(search_fts, -1, '', '', '…', ?) AS snippet
     FROM search_fts f
     JOIN search_docs d ON d.doc = f.rowid
     JOIN conversations c ON c.id = d.conversation_id
     WHERE search_fts MATCH ?
     ORDER BY f.rank, d.doc
     LIMIT ?`,
  ).all(tokens, match, limit) as unknown as ReturnType<typeof searchIndex>;
}

const hits = (db: DatabaseSync, term: string) =>
  searchIndex(db, `"${term}"`, 50, 8).map((h) => h.turn_id);
const docsOf = (db: DatabaseSync, turnId: string) =>
  (db.prepare("SELECT count(*) AS n FROM search_docs WHERE turn_id = ?").get(turnId) as {
    n: number;
  }).n;

Deno.test("a running Turn enters the search index once, when it completes, answer included", () => {
  const db = migrated();
  try {
    const c = conv(db);
    const t = begin(db, c, "where do zebras sleep");
    assertEquals(hits(db, "zebras"), []);
    assertEquals(docsOf(db, t), 0);
    assert(s.finishTurn(db, t, { state: "completed", assistantMessage: "okapi forests" }, 20));
    assertEquals(hits(db, "zebras"), [t]);
    assertEquals(hits(db, "okapi"), [t]);
    assertEquals(docsOf(db, t), 1);
  } finally {
    db.close();
  }
});

Deno.test("a failed Turn is indexed at its terminal with its user message only", () => {
  const db = migrated();
  try {
    const c = conv(db);
    const t = begin(db, c, "albatross question");
    assert(s.finishTurn(db, t, {
      state: "failed",
      code: "model_busy",
      stage: "model",
      retryable: true,
      partialText: "penguin partial",
    }, 20));
    assertEquals(hits(db, "albatross"), [t]);
    assertEquals(hits(db, "penguin"), []);
    assertEquals(docsOf(db, t), 1);
  } finally {
    db.close();
  }
});

Deno.test("restart interruption indexes the Turn it ends, once", () => {
  const db = migrated();
  try {
    const t = begin(db, conv(db), "heron migration");
    assertEquals(s.interruptRunningTurns(db, 30), 1);
    assertEquals(hits(db, "heron"), [t]);
    assertEquals(docsOf(db, t), 1);
  } finally {
    db.close();
  }
});

Deno.test("a Turn running across migration 0015 loses its early doc and is indexed once at its end", () => {
  const db = migrated(14);
  try {
    const t = begin(db, conv(db), "flamingo nest");
    assertEquals(docsOf(db, t), 1); // the 0006 triggers indexed it at its start
    applyMigrations(db, AGENT_MIGRATIONS);
    assertEquals(docsOf(db, t), 0);
    assertEquals(hits(db, "flamingo"), []);
    assert(s.finishTurn(db, t, { state: "completed", assistantMessage: "pelican reply" }, 20));
    assertEquals(hits(db, "flamingo"), [t]);
    assertEquals(hits(db, "pelican"), [t]);
    assertEquals(docsOf(db, t), 1);
  } finally {
    db.close();
  }
});

Deno.test("run_events keeps its rows, its key and its cascade as a rowid table (migration 0014)", () => {
  const db = migrated(13);
  try {
    const c = conv(db);
    const t = begin(db, c, "q");
    const run = (db.prepare("SELECT run_id FROM turns WHERE id = ?").get(t) as { run_id: string })
      .run_id;
    db.prepare(
      `INSERT INTO runs (id, conversation_id, turn_id, model_id, state, started_summary,
         last_digest, durable_bytes, created_at)
       VALUES (?, ?, ?, 'm', 'running', '{}', ?, 0, 1)`,
    ).run(run, c, t, `sha256:${"0".repeat(64)}`);
    const ins = db.prepare(
      "INSERT INTO run_events (run_id, seq, kind, body, digest) VALUES (?, ?, 'k', ?, ?)",
    );
    for (const seq of [1, 2]) ins.run(run, seq, `{"seq":${seq}}`, `sha256:${"a".repeat(64)}`);
    // Up to 0018: 0019 replaces this key with the event_key range (run_events_key_test.ts).
    applyMigrations(db, AGENT_MIGRATIONS.slice(0, 18));
    const rows = db.prepare("SELECT seq, body FROM run_events WHERE run_id = ? ORDER BY seq")
      .all(run) as { seq: number; body: string }[];
    assertEquals(rows.map((r) => [r.seq, r.body]), [[1, '{"seq":1}'], [2, '{"seq":2}']]);
    let dup = false;
    try {
      ins.run(run, 2, "{}", `sha256:${"b".repeat(64)}`);
    } catch {
      dup = true;
    }
    assert(dup, "(run_id, seq) stays the key");
    db.prepare("DELETE FROM runs WHERE id = ?").run(run);
    assertEquals(
      (db.prepare("SELECT count(*) AS n FROM run_events").get() as { n: number }).n,
      0,
    );
  } finally {
    db.close();
  }
});

/** FTS5's own check, reading the text through the view: throws when index and text disagree. */
function indexMatchesText(db: DatabaseSync): void {
  db.exec("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)");
}

const QUERIES = [
  '"zebras"',
  '"okapi"',
  '"albatross"',
  '"penguin"',
  '"title"',
  '"heron" OR "renamed"',
];
const allHits = (db: DatabaseSync) => QUERIES.map((q) => search(db, q, 50, 4));

/** A Conversation with a completed, a failed and an interrupted Turn, renamed, and a branch of it. */
function seedHistory(db: DatabaseSync): string {
  const c = conv(db);
  const done = begin(db, c, "where do zebras sleep tonight under the open african sky");
  assert(finish(db, done, { state: "completed", assistantMessage: "okapi forests" }, 20));
  const failed = begin(db, c, "albatross question");
  assert(finish(db, failed, {
    state: "failed",
    code: "model_busy",
    stage: "model",
    retryable: true,
    partialText: "penguin partial",
  }, 21));
  begin(db, c, "heron migration");
  assertEquals(s.interruptRunningTurns(db, 30), 1);
  assertEquals(s.renameConversation(db, c, "renamed title", 31), "ok");
  branch(db, c, "branch title", 32);
  return c;
}

Deno.test("an Agent database migrated to 0016 answers every search as before, snippets included, and keeps no copy of the text", () => {
  const db = migrated(15);
  try {
    seedHistory(db);
    const before = allHits(db);
    // Every query but the failed Turn's partial text (never indexed) finds something.
    assertEquals(before.map((h) => h.length > 0), [true, true, true, false, true, true]);
    // Up to 0020: 0021 makes the index contentless (search_deflated_answer_test.ts).
    applyMigrations(db, AGENT_MIGRATIONS.slice(0, 20));
    assertEquals(allHits(db), before);
    indexMatchesText(db);
    const tables = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'search_fts%' ORDER BY name",
    ).all().map((r) => (r as { name: string }).name);
    assertEquals(tables, [
      "search_fts",
      "search_fts_config",
      "search_fts_data",
      "search_fts_docsize",
      "search_fts_idx",
    ]);
  } finally {
    db.close();
  }
});

Deno.test("renames, Turn edits, Turn deletes and a Conversation delete with its branches keep the index equal to the text", () => {
  const db = migrated();
  try {
    const c = seedHistory(db);
    indexMatchesText(db);
    assertEquals(s.renameConversation(db, c, "heron lake", 40), "ok");
    assertEquals(searchIndex(db, '"renamed"', 50, 4), []);
    assertEquals(searchIndex(db, '"lake"', 50, 4).map((h) => h.snippet), ["heron lake"]);
    const t = (db.prepare("SELECT id FROM turns WHERE conversation_id = ? AND state = 'completed'")
      .get(c) as { id: string }).id;
    db.prepare("UPDATE turns SET assistant_message = 'tapir swamps' WHERE id = ?").run(t);
    assertEquals(hits(db, "okapi").filter((h) => h === t), []);
    assertEquals(hits(db, "tapir"), [t]);
    indexMatchesText(db);
    db.prepare("DELETE FROM turns WHERE id = ?").run(t);
    assertEquals(hits(db, "tapir"), []);
    indexMatchesText(db);
    indexAgreesWithText(db);
    assertEquals(s.deleteConversation(db, c), "ok");
    assertEquals((db.prepare("SELECT count(*) AS n FROM search_docs").get() as { n: number }).n, 0);
    for (const h of allHits(db)) assertEquals(h, []);
    indexMatchesText(db);
    indexAgreesWithText(db);
  } finally {
    db.close();
  }
});

Deno.test("the index check fails when the index holds text the Turns do not (control)", () => {
  const db = migrated(20);
  try {
    seedHistory(db);
    db.prepare(
      "INSERT INTO search_fts (rowid, title, user_message, assistant_message) VALUES (999, '', 'stray', '')",
    ).run();
    let failed = false;
    try {
      indexMatchesText(db);
    } catch {
      failed = true;
    }
    assert(failed, "integrity-check compares the index with the view");
  } finally {
    db.close();
  }
});

Deno.test("every search_docs lookup of the search triggers goes through an index (migration 0017)", () => {
  const db = migrated();
  try {
    const plans = [
      "SELECT doc FROM search_docs WHERE conversation_id = 'x' AND turn_id IS NULL",
      "DELETE FROM search_docs WHERE conversation_id = 'x' AND turn_id IS NULL",
      "SELECT doc FROM search_docs WHERE turn_id = 'x'",
      "DELETE FROM search_docs WHERE turn_id = 'x'",
    ].map((q) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${q}`).all() as { detail: string }[]).map((r) => r.detail)
        .join("; ")
    );
    for (const p of plans) assert(/^SEARCH search_docs USING .*INDEX/.test(p), p);
    const indexes = db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'search_docs' ORDER BY name",
    ).all().map((r) => (r as { name: string }).name);
    assertEquals(indexes, ["search_docs_title", "sqlite_autoindex_search_docs_1"]);
  } finally {
    db.close();
  }
});

// About 6 KB of prose-like text: stored deflated from migration 0021 on.
const LONG_ANSWER = Array.from(
  { length: 90 },
  (_, i) =>
    `Sentence ${i} explains how the quokka colony shares burrows${i === 89 ? " marmoset" : ""}.`,
).join(" ");
const LONG_QUERIES = ['"quokka"', '"marmoset"', '"burrows" OR "okapi"', '"sentence 42"'];

/** A Conversation with a long completed answer and a short one; returns it and the long Turn. */
function seedLong(db: DatabaseSync): { c: string; long: string } {
  const c = conv(db);
  const long = begin(db, c, "tell me about quokkas");
  assert(finish(db, long, { state: "completed", assistantMessage: LONG_ANSWER }, 20));
  const short = begin(db, c, "and okapis");
  assert(finish(db, short, { state: "completed", assistantMessage: "okapi forests" }, 21));
  return { c, long };
}

/** Hits without the random ids: conversation title, Turn seq, snippet. */
function hitsBySeq(db: DatabaseSync, q: string) {
  return search(db, q, 50, 8).map((h) => [
    h.title,
    h.turn_id === null
      ? 0
      : (db.prepare("SELECT seq FROM turns WHERE id = ?").get(h.turn_id) as { seq: number }).seq,
    h.snippet,
  ]);
}

Deno.test("an Agent database migrated to 0021 answers every search as before, snippets included, from a contentless index", () => {
  const db = migrated(20);
  try {
    seedHistory(db);
    seedLong(db);
    const before = [...allHits(db), ...LONG_QUERIES.map((q) => search(db, q, 50, 8))];
    assert(before.slice(-4).every((h) => h.length > 0));
    applyMigrations(db, AGENT_MIGRATIONS);
    assertEquals([...allHits(db), ...LONG_QUERIES.map((q) => searchIndex(db, q, 50, 8))], before);
    indexAgreesWithText(db);
    const tables = db.prepare(
      "SELECT name FROM sqlite_master WHERE name LIKE 'search_%' ORDER BY name",
    ).all().map((r) => (r as { name: string }).name);
    assert(
      !tables.includes("search_content") && !tables.includes("search_fts_content"),
      `${tables}`,
    );
    // Rows written before 0021 stay plain and read as before.
    assertEquals(
      (db.prepare("SELECT count(*) AS n FROM turns WHERE assistant_z IS NOT NULL").get() as {
        n: number;
      }).n,
      0,
    );
  } finally {
    db.close();
  }
});

Deno.test("the server's search makes the same rows as searchIndex, one snippet per loop turn [PF-2]", async () => {
  const db = migrated();
  try {
    seedHistory(db);
    seedLong(db);
    seedLong(db);
    for (const q of [...QUERIES, ...LONG_QUERIES]) {
      const whole = searchIndex(db, q, 50, 8);
      let betweens = 0;
      const stepwise = await searchIndexStepwise(db, q, 50, 8, () => {
        betweens++;
        return Promise.resolve();
      });
      assertEquals(stepwise, whole, q);
      assertEquals(betweens, whole.length, `${q}: one wait before each snippet`);
    }
    // With the loop's own turns: immediates queued by others run between two snippets.
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const rows = await searchIndexStepwise(db, '"quokka" OR "okapi"', 50, 8, nextLoopTurn);
    ticking = false;
    assert(rows.length >= 4, `${rows.length} hits`);
    assert(ticks >= rows.length, `${ticks} loop turns for ${rows.length} snippets`);
  } finally {
    db.close();
  }
});

Deno.test("a long answer is stored once, deflated, and reads, searches and snippets as a plain one", () => {
  const plain = migrated(20);
  const db = migrated();
  try {
    seedLong(plain);
    const { c, long } = seedLong(db);
    const row = db.prepare(
      "SELECT assistant_message AS m, length(assistant_z) AS z FROM turns WHERE id = ?",
    ).get(long) as { m: string | null; z: number };
    assertEquals(row.m, null);
    assert(row.z * 2 < LONG_ANSWER.length, `deflated to ${row.z} of ${LONG_ANSWER.length}`);
    const short = db.prepare(
      "SELECT assistant_message AS m FROM turns WHERE seq = 2 AND conversation_id = ?",
    )
      .get(c) as { m: string };
    assertEquals(short.m, "okapi forests", "a short answer stays plain");
    assertEquals(s.pageTurns(db, c, null, 10).map((t) => t.assistant_message), [
      "okapi forests",
      LONG_ANSWER,
    ]);
    assertEquals(allTurns(db, c, 10).map((t) => t.assistant_message), [
      LONG_ANSWER,
      "okapi forests",
    ]);
    assertEquals([...s.completedTurnIdsBefore(db, c, 3)].length, 2);
    for (const q of LONG_QUERIES) assertEquals(hitsBySeq(db, q), hitsBySeq(plain, q), q);
    assert(String(hitsBySeq(db, '"marmoset"')[0][2]).includes("marmoset"));
    indexAgreesWithText(db);
  } finally {
    plain.close();
    db.close();
  }
});

Deno.test("branch copies of a deflated answer are searchable, its text cannot change in SQL, and deletes leave no doc", () => {
  const db = migrated();
  try {
    const { c, long } = seedLong(db);
    assertEquals(
      s.branchConversation(db, { sourceId: c, newId: uuid(), title: "copy", now: 30 }, 9).result,
      "ok",
    );
    const shortId = (db.prepare("SELECT id FROM turns WHERE conversation_id = ? AND seq = 2")
      .get(c) as { id: string }).id;
    assertEquals(
      s.branchBefore(
        db,
        { sourceId: c, beforeTurnId: shortId, newId: uuid(), title: "before", now: 31 },
        9,
      ).result,
      "ok",
    );
    assertEquals(hits(db, "marmoset").length, 3);
    indexAgreesWithText(db);
    for (
      const set of [
        "user_message = 'x'",
        "assistant_message = 'x'",
        "assistant_z = NULL",
        "state = 'failed'",
      ]
    ) {
      assertThrows(() => db.prepare(`UPDATE turns SET ${set} WHERE id = ?`).run(long));
    }
    assertThrows(() =>
      db.prepare("UPDATE turns SET assistant_z = x'00', assistant_message = NULL WHERE id = ?")
        .run(shortId)
    );
    assertEquals(s.deleteConversation(db, c), "ok");
    assertEquals(hits(db, "marmoset"), []);
    assertEquals(hits(db, "okapi"), []);
    assertEquals((db.prepare("SELECT count(*) AS n FROM search_docs").get() as { n: number }).n, 0);
    indexAgreesWithText(db);
  } finally {
    db.close();
  }
});

Deno.test("the text oracle fails when the index holds a doc the texts do not (control)", () => {
  const db = migrated();
  try {
    seedLong(db);
    db.prepare(
      "INSERT INTO search_fts (rowid, title, user_message, assistant_message) VALUES (999, '', 'stray', '')",
    ).run();
    assertThrows(() => indexAgreesWithText(db));
  } finally {
    db.close();
  }
});
