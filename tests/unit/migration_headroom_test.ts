/**
 * [CV-1, PF-4] Migrations that rebuild a table on a database near its cap: 0019 and 0022 copy
 * `run_events`, so until they commit the file holds the old and the new copy. Under the cap
 * alone an Agent close to it could not migrate, and an Agent that cannot migrate does not open.
 * `openDatabase` migrates with room above the cap and vacuums the file back under it.
 */
import { DatabaseSync } from "node:sqlite";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { applyMigrations, schemaVersion } from "../../runtime/store/migrate.ts";
import { openDatabase } from "../../runtime/store/sqlite.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { withTempHome } from "../helpers/home.ts";

const REL = "data/agents/00000000-0000-4000-8000-000000000009/state.sqlite";
const CAP = 4 * 1024 * 1024;
/** The last schema before the rebuilds. */
const BEFORE_REBUILDS = 18;
const RUNS = 13;
const EVENTS_PER_RUN = 110;
const DIGEST = `sha256:${"a".repeat(64)}`;

/** Hex text that does not compress: ~2 KiB of event body. */
function noise(bytes: number): string {
  const b = new Uint8Array(bytes / 2);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Runs with events the way schema 18 stored them: ~3 MiB of the 4 MiB cap. */
function seedAtSchema18(db: DatabaseSync): number {
  let events = 0;
  for (let r = 0; r < RUNS; r++) {
    const conv = crypto.randomUUID();
    const turn = crypto.randomUUID();
    const run = crypto.randomUUID();
    assert(
      s.insertConversation(db, { id: conv, title: "t", now: 1 }, CONVERSATIONS_PER_AGENT_MAX),
    );
    db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at, run_id)
       VALUES (?, ?, 1, 'completed', 'q', 1, ?)`,
    ).run(turn, conv, run);
    db.prepare(
      `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
         last_digest, created_at) VALUES (?, ?, ?, 'completed', 'm', '{}', ?, 1)`,
    ).run(run, conv, turn, DIGEST);
    const ins = db.prepare(
      "INSERT INTO run_events (run_id, seq, kind, body, digest) VALUES (?, ?, ?, ?, ?)",
    );
    db.exec("BEGIN");
    for (let i = 1; i <= EVENTS_PER_RUN; i++) {
      ins.run(run, i, "tool.result", JSON.stringify({ pad: noise(2048) }), DIGEST);
      events++;
    }
    db.exec("COMMIT");
  }
  return events;
}

const bytesOf = (db: DatabaseSync) =>
  (db.prepare("SELECT page_count * page_size AS n FROM pragma_page_count, pragma_page_size")
    .get() as { n: number }).n;
/** The Agent database opened as the server opens it (every migration), under the test's cap. */
const openCurrent = (home: string) =>
  openDatabase({
    root: home,
    relative: REL,
    migrations: AGENT_MIGRATIONS,
    maxBytes: CAP,
    create: false,
  });
const eventCount = (db: DatabaseSync) =>
  (db.prepare("SELECT count(*) AS n FROM run_events").get() as { n: number }).n;

Deno.test("an Agent database near its cap migrates through the run_events rebuilds and ends under the cap", () =>
  withTempHome((home) => {
    const old = openDatabase({
      root: home,
      relative: REL,
      migrations: AGENT_MIGRATIONS.slice(0, BEFORE_REBUILDS),
      maxBytes: CAP,
    });
    let events: number;
    try {
      events = seedAtSchema18(old);
      const size = bytesOf(old);
      assert(size > 0.7 * CAP && size < CAP, `seeded ${size} bytes`);
    } finally {
      old.close();
    }
    const path = `${home}/${REL}`;

    // Control: the same migrations under the cap alone run out of room and roll back.
    const copy = `${home}/control.sqlite`;
    Deno.copyFileSync(path, copy);
    const raw = new DatabaseSync(copy);
    try {
      const page = (raw.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
      raw.exec(`PRAGMA max_page_count = ${CAP / page}`);
      assertThrows(
        () => applyMigrations(raw, AGENT_MIGRATIONS),
        (e) => assert(/full/i.test(String(e)), String(e)),
      );
      assertEquals(schemaVersion(raw), BEFORE_REBUILDS);
    } finally {
      raw.close();
    }

    const db = openCurrent(home);
    try {
      assertEquals(schemaVersion(db), AGENT_MIGRATIONS.length);
      assertEquals(eventCount(db), events);
      assert(bytesOf(db) <= CAP, `${bytesOf(db)} bytes after the migration, cap ${CAP}`);
      const page = (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
      assertEquals(
        (db.prepare("PRAGMA max_page_count").get() as { max_page_count: number }).max_page_count,
        CAP / page,
        "the cap applies again",
      );
    } finally {
      db.close();
    }
    // Opening again migrates nothing and keeps the cap.
    const again = openCurrent(home);
    try {
      assertEquals(eventCount(again), events);
    } finally {
      again.close();
    }
  }));
