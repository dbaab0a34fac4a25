/**
 * [PF-4] run_events keyed by its Run's range (agent migration 0019): a Run gets a fixed
 * `journal_key`, its events the rowids `journal_key × 1024 + (seq − 1)` (0022; 0019 had `+ seq`),
 * and the (run_id, seq) index is gone. An existing database keeps every event of every Run and reads them exactly as before
 * (plain and deflated bodies, seq order); what the old key enforced is still refused (a second
 * event at a seq, an event outside its Run's range or without a Run, a moved event); removing
 * a Run — retention, a Run delete, a Conversation delete's cascade — removes exactly its events.
 */
import { DatabaseSync } from "node:sqlite";
import { deflateRawSync } from "node:zlib";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { applyMigrations } from "../../runtime/store/migrate.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import {
  type EventRow,
  insertEvent,
  insertRun,
  listEvents,
  pruneToTombstone,
  reduceToSnapshot,
} from "../../runtime/store/run_store.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";

const uuid = () => crypto.randomUUID();
const DIGEST = `sha256:${"a".repeat(64)}`;

function migrated(upTo = AGENT_MIGRATIONS.length): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  applyMigrations(db, AGENT_MIGRATIONS.slice(0, upTo));
  return db;
}

/** A Conversation with one Turn and its Run, inserted the way each schema version allows. */
function seedRun(db: DatabaseSync, keyed: boolean): { conv: string; run: string } {
  const conv = uuid();
  assert(s.insertConversation(db, { id: conv, title: "t", now: 1 }, CONVERSATIONS_PER_AGENT_MAX));
  const turn = uuid();
  const run = uuid();
  db.prepare(
    `INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at, run_id)
     VALUES (?, ?, 1, 'completed', 'q', 1, ?)`,
  ).run(turn, conv, run);
  if (keyed) {
    insertRun(db, {
      id: run,
      conversation_id: conv,
      turn_id: turn,
      model_id: "m",
      started_summary: "{}",
      last_digest: DIGEST,
      created_at: 1,
    });
  } else {
    db.prepare(
      `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
         last_digest, created_at) VALUES (?, ?, ?, 'completed', 'm', '{}', ?, 1)`,
    ).run(run, conv, turn, DIGEST);
  }
  return { conv, run };
}

const LONG = JSON.stringify({
  text: Array.from({ length: 80 }, (_, i) => `Sentence ${i} of a long answer.`).join(" "),
});

/** Events as a pre-0019 database stored them (one deflated, the rest plain), out of seq order. */
function oldEvents(db: DatabaseSync, run: string, n: number): EventRow[] {
  const rows: EventRow[] = Array.from({ length: n }, (_, i) => ({
    seq: i + 1,
    kind: `k${i + 1}`,
    body: i === 1 ? LONG : JSON.stringify({ run, seq: i + 1 }),
    digest: DIGEST,
  }));
  const ins = db.prepare(
    "INSERT INTO run_events (run_id, seq, kind, body, body_z, digest) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (const e of [...rows].reverse()) {
    const z = e.body === LONG ? deflateRawSync(new TextEncoder().encode(LONG)) : null;
    ins.run(run, e.seq, e.kind, z ? "" : e.body, z, e.digest);
  }
  return rows;
}

const count = (db: DatabaseSync, sql: string, ...args: string[]) =>
  (db.prepare(sql).get(...args) as { n: number }).n;

Deno.test("migration 0019 keeps every event of every Run and reads them as before, without a run_events index", () => {
  const db = migrated(18);
  try {
    const a = seedRun(db, false);
    const b = seedRun(db, false);
    const before = new Map([[a.run, oldEvents(db, a.run, 5)], [b.run, oldEvents(db, b.run, 3)]]);
    applyMigrations(db, AGENT_MIGRATIONS);
    for (const [run, rows] of before) assertEquals(listEvents(db, run), rows);
    assertEquals(
      count(
        db,
        "SELECT count(*) AS n FROM sqlite_master WHERE tbl_name = 'run_events' AND type = 'index'",
      ),
      0,
    );
    // Existing Runs took distinct keys; a new Run takes the next one and appends after them.
    const keys = db.prepare("SELECT journal_key FROM runs ORDER BY journal_key").all()
      .map((r) => (r as { journal_key: number }).journal_key);
    assertEquals(new Set(keys).size, 2);
    const c = seedRun(db, true);
    const next = (db.prepare("SELECT journal_key FROM runs WHERE id = ?").get(c.run) as {
      journal_key: number;
    }).journal_key;
    assertEquals(next, Math.max(...keys) + 1);
    insertEvent(db, c.run, { seq: 1, kind: "run.started", body: "{}", digest: DIGEST });
    insertEvent(db, a.run, { seq: 6, kind: "k6", body: "{}", digest: DIGEST });
    assertEquals(listEvents(db, a.run).map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
    assertEquals(listEvents(db, c.run).map((e) => e.kind), ["run.started"]);
    assertEquals(listEvents(db, b.run), before.get(b.run));
    const max = (db.prepare("SELECT max(event_key) AS k FROM run_events").get() as { k: number })
      .k;
    assertEquals(max, next * 1024, "a new Run's events are the table's last rows");
  } finally {
    db.close();
  }
});

Deno.test("the event key refuses a second event at a seq, an event outside its Run or without one, and a moved event", () => {
  const db = migrated();
  try {
    const a = seedRun(db, true);
    const b = seedRun(db, true);
    insertEvent(db, a.run, { seq: 1, kind: "k", body: "{}", digest: DIGEST });
    insertEvent(db, b.run, { seq: 1, kind: "k", body: "{}", digest: DIGEST });
    assertThrows(() => insertEvent(db, a.run, { seq: 1, kind: "k", body: "{}", digest: DIGEST }));
    assertThrows(() => insertEvent(db, uuid(), { seq: 1, kind: "k", body: "{}", digest: DIGEST }));
    const keyOf = (run: string) =>
      (db.prepare("SELECT journal_key AS k FROM runs WHERE id = ?").get(run) as { k: number }).k;
    const raw = db.prepare(
      `INSERT INTO run_events (event_key, run_id, seq, kind, body, digest)
       VALUES (?, ?, ?, 'k', '{}', ?)`,
    );
    // b's range with a's id; a seq that is not the key's; no key at all.
    assertThrows(() => raw.run(keyOf(b.run) * 1024 + 1, a.run, 2, DIGEST));
    raw.run(keyOf(a.run) * 1024 + 1, a.run, 2, DIGEST); // the same row in its own range fits
    db.prepare("DELETE FROM run_events WHERE run_id = ? AND seq = 2").run(a.run);
    assertThrows(() => raw.run(keyOf(a.run) * 1024 + 3, a.run, 2, DIGEST));
    assertThrows(() =>
      db.prepare(
        "INSERT INTO run_events (run_id, seq, kind, body, digest) VALUES (?, 2, 'k', '{}', ?)",
      )
        .run(a.run, DIGEST)
    );
    assertThrows(() => db.prepare("UPDATE run_events SET seq = 2 WHERE run_id = ?").run(a.run));
    assertThrows(() =>
      db.prepare("UPDATE run_events SET run_id = ? WHERE run_id = ?").run(b.run, a.run)
    );
    assertThrows(() => db.prepare("UPDATE runs SET journal_key = 99 WHERE id = ?").run(a.run));
    // A body may still be rewritten in place (the digest check catches tampering).
    db.prepare("UPDATE run_events SET body = '{\"x\":1}' WHERE run_id = ?").run(a.run);
    assertEquals(listEvents(db, a.run).map((e) => e.body), ['{"x":1}']);
    assertEquals(listEvents(db, b.run).map((e) => e.body), ["{}"]);
  } finally {
    db.close();
  }
});

Deno.test("retention, a Run delete and a Conversation delete remove exactly that Run's events", () => {
  const db = migrated();
  try {
    const runs = Array.from({ length: 5 }, () => seedRun(db, true));
    for (const r of runs) {
      for (const seq of [1, 2, 3]) {
        insertEvent(db, r.run, { seq, kind: "k", body: `{"seq":${seq}}`, digest: DIGEST });
      }
    }
    const left = () => runs.map((r) => listEvents(db, r.run).length);
    reduceToSnapshot(db, runs[1].run, "{}");
    assertEquals(left(), [3, 0, 3, 3, 3]);
    pruneToTombstone(db, runs[2].run, "{}");
    assertEquals(left(), [3, 0, 0, 3, 3]);
    db.prepare("DELETE FROM runs WHERE id = ?").run(runs[3].run);
    assertEquals(left(), [3, 0, 0, 0, 3]);
    assertEquals(s.deleteConversation(db, runs[4].conv), "ok");
    assertEquals(left(), [3, 0, 0, 0, 0]);
    assertEquals(count(db, "SELECT count(*) AS n FROM run_events"), 3);
    assertEquals(
      count(db, "SELECT count(*) AS n FROM run_events WHERE run_id = ?", runs[0].run),
      3,
    );
  } finally {
    db.close();
  }
});
