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
import { searchIndex } from "../../runtime/store/search_store.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

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
    applyMigrations(db, AGENT_MIGRATIONS);
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
