/**
 * [EV-2, SB-8, OP-3] The Agent database holds exactly the journal's bounds (agent migration 0022):
 * a Run keeps RUN_EVENTS_MAX durable events and RUN_DURABLE_BYTES_MAX durable bytes through the
 * real journal (`appendDurable`) and store, and ends at them with `run_event_limit`, never a
 * constraint error; the schema refuses seq 0, seq RUN_EVENTS_MAX + 1 and counts or bytes past the
 * bounds; an event's key is `journal_key × 1024 + (seq − 1)`. A database of the previous version
 * migrates on a real file with every Run, event (plain, deflated, the golden dictionary row) and
 * dependent row unchanged, its journals still valid, and every index and trigger it had; removing
 * a full Run — delete, Conversation delete, retention — removes exactly its range. Through a real
 * server and Worker, a Turn of 24 searches (about 340 KB of journal; the old schema's 256 KiB
 * ended it with `stream.error` and a tombstone) completes and replays valid.
 */
import { GOLDEN_BODY, GOLDEN_RUN, GOLDEN_Z_HEX, unhex } from "../helpers/agent_state.ts";
import { runStartedPayload, stageLargeReadPair } from "../helpers/run_db.ts";
import { DatabaseSync as ReadOnlyDatabase } from "node:sqlite";
import { deflateRawSync } from "node:zlib";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  appendDurable,
  chainDigest,
  genesisDigest,
  RunJournal,
  type Staged,
  validateJournal,
} from "../../runtime/events/journal.ts";
import {
  CONVERSATIONS_PER_AGENT_MAX,
  RUN_DURABLE_BYTES_MAX,
  RUN_EVENTS_MAX,
} from "../../runtime/limits.ts";
import type { Logger } from "../../runtime/log.ts";
import { enforceRetention } from "../../runtime/runs/run_recorder.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import {
  getRun,
  insertEvent,
  insertPermission,
  insertRun,
  listEvents,
  operationIntent,
  setRunTerminal,
  updateJournalHead,
  usageStarted,
} from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import type { FakeToolCall } from "../../tools/fake_ollama/frames.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

const AGENT = "44444444-4444-4444-8444-444444444444";
const D = `sha256:${"a".repeat(64)}`;
const log: Logger = { info() {}, warn() {}, error() {}, flush() {}, close() {} };
const CURRENT = AGENT_MIGRATIONS.length;
const BEFORE = AGENT_MIGRATIONS.slice(0, 21);

function open(home: string, migrations = AGENT_MIGRATIONS): DatabaseSync {
  return openDatabase({ root: home, relative: "state.sqlite", migrations });
}

interface RunIds {
  conv: string;
  turn: string;
  run: string;
}

/** A Conversation, its ended Turn and a running Run (insertRun: the same SQL in 0021 and 0022). */
function seedRun(
  db: DatabaseSync,
  ids: RunIds = { conv: crypto.randomUUID(), turn: crypto.randomUUID(), run: crypto.randomUUID() },
  summary = "{}",
) {
  assert(
    s.insertConversation(db, { id: ids.conv, title: "t", now: 1 }, CONVERSATIONS_PER_AGENT_MAX),
  );
  db.prepare(
    `INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at, run_id)
     VALUES (?, ?, 1, 'completed', 'q', 1, ?)`,
  ).run(ids.turn, ids.conv, ids.run);
  insertRun(db, {
    id: ids.run,
    conversation_id: ids.conv,
    turn_id: ids.turn,
    model_id: "m",
    started_summary: summary,
    last_digest: genesisDigest(ids.run),
    created_at: 1,
  });
  return ids;
}

const denied = { call_id: "call-1", tool_id: "file/write", reason: "non_interactive_ask" } as const;
const completed = { reason: "stop", model_calls: 0, tool_calls: 0, duration_ms: 1 } as const;

/** Stages `n` permission.denied events after the journal's head (refusals propagate). */
function stageDenied(j: RunJournal, n: number): Staged[] {
  const staged: Staged[] = [];
  for (let i = 0; i < n; i++) staged.push(j.stage("permission.denied", denied, staged.at(-1)));
  return staged;
}

/** A real journal of `events` durable events (run.started, permission.denied …, run.completed). */
function journalRows(ids: RunIds, events: number) {
  const j = new RunJournal({ run_id: ids.run, agent_id: AGENT, conversation_id: ids.conv });
  const all = [j.stage("run.started", runStartedPayload(ids.turn, ids.run, D))];
  j.accept(all);
  const mid = stageDenied(j, events - 2);
  j.accept(mid);
  const term = j.stage("run.completed", completed);
  j.accept([term]);
  return { rows: [...all, ...mid, term].map((x) => x.row), bytes: j.durableBytes, head: j.head };
}

/** Fills a Run through appendDurable to RUN_EVENTS_MAX − 1 events and returns its journal. */
function fillBelowTerminal(db: DatabaseSync, ids: RunIds) {
  const j = new RunJournal({ run_id: ids.run, agent_id: AGENT, conversation_id: ids.conv });
  appendDurable(db, j, [j.stage("run.started", runStartedPayload(ids.turn, ids.run, D))]);
  while (j.count < RUN_EVENTS_MAX - 1) {
    appendDurable(db, j, stageDenied(j, Math.min(100, RUN_EVENTS_MAX - 1 - j.count)));
  }
  return j;
}

const refusedWith = (code: string) => (e: unknown) => e instanceof AppError && e.code === code;

Deno.test("a Run holds RUN_EVENTS_MAX durable events through the journal and the store; the next is refused with run_event_limit", () => {
  const home = makeTempHome();
  const db = open(home);
  try {
    const ids = seedRun(db);
    const j = fillBelowTerminal(db, ids);
    assertEquals(getRun(db, ids.run)!.event_count, RUN_EVENTS_MAX - 1);
    // One past the non-terminal bound: refused by the journal, nothing written.
    assertThrows(
      () => j.stage("permission.denied", denied),
      (e) => assert(refusedWith("run_event_limit")(e), String(e)),
    );
    assertEquals(listEvents(db, ids.run).length, RUN_EVENTS_MAX - 1);
    // The terminal takes the reserved last slot: event RUN_EVENTS_MAX is stored.
    appendDurable(db, j, [j.stage("run.completed", completed)]);
    assert(setRunTerminal(db, ids.run, "completed", null, 2));
    const run = getRun(db, ids.run)!;
    assertEquals(run.event_count, RUN_EVENTS_MAX);
    const rows = listEvents(db, ids.run);
    assertEquals(rows.length, RUN_EVENTS_MAX);
    assertEquals(rows.at(-1)!.seq, RUN_EVENTS_MAX);
    const v = validateJournal(run, AGENT, rows);
    assert(v.ok, v.ok ? "" : v.reason);
    assertEquals(v.terminal?.kind, "run.completed");
    const keys = db.prepare(
      "SELECT min(event_key) AS lo, max(event_key) AS hi FROM run_events WHERE run_id = ?",
    ).get(ids.run) as { lo: number; hi: number };
    const jk = (db.prepare("SELECT journal_key AS k FROM runs WHERE id = ?").get(ids.run) as {
      k: number;
    }).k;
    assertEquals([keys.lo, keys.hi], [jk * 1024, jk * 1024 + 1023]);
    // Past the bound even a terminal is refused, before the state machine is asked.
    assertThrows(
      () =>
        j.stage("run.failed", {
          code: "run_event_limit",
          stage: "journal",
          retryable: false,
          duration_ms: 1,
        }),
      (e) => assert(refusedWith("run_event_limit")(e), String(e)),
    );
    assertEquals(getRun(db, ids.run)!.event_count, RUN_EVENTS_MAX);
  } finally {
    db.close();
  }
});

Deno.test("a Run's durable bytes grow past 256 KiB to their 1 MiB bound through the store, then end with run_event_limit", () => {
  const home = makeTempHome();
  const db = open(home);
  try {
    const ids = seedRun(db);
    const j = new RunJournal({ run_id: ids.run, agent_id: AGENT, conversation_id: ids.conv });
    appendDurable(db, j, [j.stage("run.started", runStartedPayload(ids.turn, ids.run, D))]);
    let refused: unknown = null;
    for (let i = 1; refused === null; i++) {
      try {
        const [req, done] = stageLargeReadPair(j, i, D);
        appendDurable(db, j, [req, done]);
      } catch (e) {
        refused = e;
      }
    }
    assert(refusedWith("run_event_limit")(refused), String(refused));
    appendDurable(db, j, [
      j.stage("run.failed", {
        code: "run_event_limit",
        stage: "journal",
        retryable: false,
        duration_ms: 1,
      }),
    ]);
    assert(setRunTerminal(db, ids.run, "failed", "run_event_limit", 2));
    const run = getRun(db, ids.run)!;
    assert(run.durable_bytes > 4 * 256 * 1024 - 64 * 1024, String(run.durable_bytes));
    assert(run.durable_bytes <= RUN_DURABLE_BYTES_MAX, String(run.durable_bytes));
    assertEquals(run.durable_bytes, j.durableBytes);
    const v = validateJournal(run, AGENT, listEvents(db, ids.run));
    assert(v.ok, v.ok ? "" : v.reason);
    assertEquals(v.terminal?.kind, "run.failed");
  } finally {
    db.close();
  }
});

Deno.test("the schema refuses seq 0, seq RUN_EVENTS_MAX + 1 and a Run's count or bytes past their bounds", () => {
  const home = makeTempHome();
  const db = open(home);
  try {
    const ids = seedRun(db);
    const jk = (db.prepare("SELECT journal_key AS k FROM runs WHERE id = ?").get(ids.run) as {
      k: number;
    }).k;
    const raw = db.prepare(
      `INSERT INTO run_events (event_key, run_id, seq, kind, body, digest)
       VALUES (?, ?, ?, 'k', '{}', ?)`,
    );
    const check = (e: unknown) => assert(String(e).includes("CHECK constraint failed"), String(e));
    // Keys inside the Run's own range, so only the CHECKs can refuse them.
    assertThrows(() => raw.run(jk * 1024 + 1023, ids.run, 0, D), check);
    assertThrows(() => raw.run(jk * 1024, ids.run, RUN_EVENTS_MAX + 1, D), check);
    assertThrows(() => raw.run(jk * 1024 + 1023, ids.run, RUN_EVENTS_MAX + 1, D), check);
    // …and one past the range is another Run's key.
    assertThrows(
      () => raw.run(jk * 1024 + 1024, ids.run, RUN_EVENTS_MAX + 1, D),
      (e) => assert(String(e).includes("outside its Run"), String(e)),
    );
    assertThrows(() => insertEvent(db, ids.run, { seq: 0, kind: "k", body: "{}", digest: D }));
    assertThrows(() =>
      insertEvent(db, ids.run, { seq: RUN_EVENTS_MAX + 1, kind: "k", body: "{}", digest: D })
    );
    // The bounds themselves fit.
    insertEvent(db, ids.run, { seq: 1, kind: "k", body: "{}", digest: D });
    insertEvent(db, ids.run, { seq: RUN_EVENTS_MAX, kind: "k", body: "{}", digest: D });
    assertEquals(listEvents(db, ids.run).map((e) => e.seq), [1, RUN_EVENTS_MAX]);
    const setHead = (count: number, bytes: number) =>
      updateJournalHead(db, ids.run, count, bytes, D);
    setHead(RUN_EVENTS_MAX, RUN_DURABLE_BYTES_MAX);
    assertEquals(
      [getRun(db, ids.run)!.event_count, getRun(db, ids.run)!.durable_bytes],
      [RUN_EVENTS_MAX, RUN_DURABLE_BYTES_MAX],
    );
    assertThrows(() => setHead(RUN_EVENTS_MAX + 1, 0), check);
    assertThrows(() => setHead(-1, 0), check);
    assertThrows(() => setHead(0, RUN_DURABLE_BYTES_MAX + 1), check);
    assertThrows(() => setHead(0, -1), check);
  } finally {
    db.close();
  }
});

// The golden row (tests/helpers/agent_state.ts): a body deflated with its Run's dictionary (0020).
const GOLDEN = GOLDEN_RUN;
const GOLDEN_Z = GOLDEN_Z_HEX;
const ENC = new TextEncoder();

const sortedKeys = (r: Record<string, unknown>) =>
  JSON.stringify(Object.keys(r).sort().map((k) => [k, r[k]]));
const DEPENDENTS = [
  "conversations",
  "turns",
  "usage_ledger",
  "operations",
  "permissions",
  "exec_records",
  "runner_access",
  "delegations",
];

/** Everything a migration of run_events and runs must keep, comparable across column orders. */
function contents(db: DatabaseSync) {
  const rows = (sql: string) =>
    db.prepare(sql).all().map((r) => sortedKeys(r as Record<string, unknown>)).sort();
  return {
    runs: rows("SELECT * FROM runs"),
    events: rows(
      "SELECT run_id, seq, kind, body, hex(body_z) AS z, digest FROM run_events",
    ),
    dependents: DEPENDENTS.map((t) => rows(`SELECT * FROM ${t}`)),
    // Every schema object but the two tables 0022 changes, as written.
    schema: rows(
      `SELECT type, name, tbl_name, sql FROM sqlite_schema
       WHERE NOT (type = 'table' AND name IN ('runs', 'run_events'))`,
    ),
  };
}

const RANGE_TRIGGERS_AND_INDEXES = [
  ["index", "runs_journal_key", "runs"],
  ["index", "runs_one_active", "runs"],
  ["index", "runs_retention", "runs"],
  ["index", "sqlite_autoindex_runs_1", "runs"],
  ["index", "sqlite_autoindex_runs_2", "runs"],
  ["trigger", "run_events_cascade", "runs"],
  ["trigger", "run_events_key_fixed", "run_events"],
  ["trigger", "run_events_key_run", "run_events"],
  ["trigger", "runs_dictionary_fixed", "runs"],
  ["trigger", "runs_journal_key_fixed", "runs"],
];

Deno.test("a database of the previous version migrates with every Run, event and dependent row unchanged, its journals valid and every index and trigger kept", () => {
  const home = makeTempHome();
  let db = open(home, BEFORE);
  const full = seedRun(db);
  const short = seedRun(db);
  const golden = seedRun(db, GOLDEN, GOLDEN.summary);
  try {
    // 0021's layout: event_key = journal_key × 1024 + seq.
    const oldInsert = db.prepare(
      `INSERT INTO run_events (event_key, run_id, seq, kind, body, body_z, digest)
       VALUES ((SELECT journal_key FROM runs WHERE id = ?) * 1024 + ?, ?, ?, ?, ?, ?, ?)`,
    );
    // The old bound (512 events), every other body deflated as 0018 stored them (no dictionary).
    for (const [ids, n] of [[full, 512], [short, 3]] as const) {
      const j = journalRows(ids, n);
      for (const r of j.rows) {
        const z = n > 3 && r.seq % 2 === 0 ? deflateRawSync(ENC.encode(r.body)) : null;
        oldInsert.run(ids.run, r.seq, ids.run, r.seq, r.kind, z ? "" : r.body, z, r.digest);
      }
      updateJournalHead(db, ids.run, n, j.bytes, j.head);
      assert(setRunTerminal(db, ids.run, "completed", null, 2));
    }
    const goldenDigest = chainDigest(genesisDigest(golden.run), GOLDEN_BODY);
    oldInsert.run(golden.run, 1, golden.run, 1, "run.started", "", unhex(GOLDEN_Z), goldenDigest);
    updateJournalHead(db, golden.run, 1, ENC.encode(GOLDEN_BODY).length, goldenDigest);
    // Rows that reference runs(id) with ON DELETE CASCADE.
    usageStarted(db, { runId: full.run, call: 1, modelId: "m", scope: D, estimate: 9, now: 3 });
    operationIntent(db, {
      id: crypto.randomUUID(),
      runId: full.run,
      callId: "call-1",
      toolId: "file/write",
      argsDigest: D,
      now: 3,
    });
    insertPermission(db, {
      id: crypto.randomUUID(),
      runId: short.run,
      callId: "call-1",
      toolId: "file/write",
      preview: "p",
      now: 3,
    });
    const indexesAndTriggers = (d: DatabaseSync) =>
      d.prepare(
        `SELECT type, name, tbl_name FROM sqlite_schema WHERE type IN ('index', 'trigger')
         ORDER BY type, name`,
      ).all().map((r) => [r.type, r.name, r.tbl_name]);
    const before = contents(db);
    const objectsBefore = indexesAndTriggers(db);
    assertEquals(before.events.length, 512 + 3 + 1);
    assertEquals(before.dependents.slice(2, 5).map((t) => t.length), [1, 1, 1]);
    db.close();

    db = open(home);
    assertEquals(
      (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version,
      CURRENT,
    );
    assertEquals(contents(db), before);
    assertEquals(indexesAndTriggers(db), objectsBefore);
    assertEquals(
      indexesAndTriggers(db).filter((o) => o[2] === "runs" || o[2] === "run_events"),
      RANGE_TRIGGERS_AND_INDEXES,
    );
    const misplaced = db.prepare(
      `SELECT count(*) AS n FROM run_events e JOIN runs r ON r.id = e.run_id
       WHERE e.event_key <> r.journal_key * 1024 + e.seq - 1`,
    ).get() as { n: number };
    assertEquals(misplaced.n, 0);
    assertEquals(db.prepare("PRAGMA foreign_key_check").all(), []);
    assertEquals(
      (db.prepare("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check,
      "ok",
    );
    for (const [ids, n] of [[full, 512], [short, 3]] as const) {
      const v = validateJournal(getRun(db, ids.run)!, AGENT, listEvents(db, ids.run));
      assert(v.ok, v.ok ? "" : v.reason);
      assertEquals([v.events.length, v.terminal?.kind], [n, "run.completed"]);
    }
    assertEquals(listEvents(db, golden.run), [
      { seq: 1, kind: "run.started", body: GOLDEN_BODY, digest: goldenDigest },
    ]);
    // A Run migrated at the old bound grows on past it.
    const more = { seq: 513, kind: "k", body: "{}", digest: D };
    db.prepare("UPDATE runs SET state = 'running', finished_at = NULL WHERE id = ?").run(full.run);
    insertEvent(db, full.run, more);
    assertEquals(listEvents(db, full.run).at(-1), more);
    db.close();

    // The migrated file carries exactly a new database's schema: it opens again (verifySchema).
    db = open(home);
    const fresh = open(makeTempHome());
    try {
      const schema = (d: DatabaseSync) =>
        d.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name").all();
      assertEquals(schema(db), schema(fresh));
    } finally {
      fresh.close();
    }
  } finally {
    db.close();
  }
});

Deno.test("deleting a full Run or its Conversation removes exactly its range, and retention reduces a full journal", () => {
  const home = makeTempHome();
  const db = open(home);
  try {
    const runs = [seedRun(db), seedRun(db), seedRun(db)];
    for (const ids of runs) {
      const j = fillBelowTerminal(db, ids);
      appendDurable(db, j, [j.stage("run.completed", completed)]);
      assert(setRunTerminal(db, ids.run, "completed", null, 2));
    }
    const keys = runs.map((r) =>
      (db.prepare("SELECT journal_key AS k FROM runs WHERE id = ?").get(r.run) as { k: number }).k
    );
    assertEquals(keys, [keys[0], keys[0] + 1, keys[0] + 2], "adjacent ranges");
    const valid = (ids: { run: string }) => {
      const v = validateJournal(getRun(db, ids.run)!, AGENT, listEvents(db, ids.run));
      assert(v.ok, v.ok ? "" : v.reason);
      return v.events.length;
    };
    const total = () =>
      (db.prepare("SELECT count(*) AS n FROM run_events").get() as { n: number }).n;
    assertEquals(runs.map(valid), [RUN_EVENTS_MAX, RUN_EVENTS_MAX, RUN_EVENTS_MAX]);
    db.prepare("DELETE FROM runs WHERE id = ?").run(runs[1].run);
    assertEquals([valid(runs[0]), valid(runs[2]), total()], [
      RUN_EVENTS_MAX,
      RUN_EVENTS_MAX,
      2 * RUN_EVENTS_MAX,
    ]);
    assertEquals(s.deleteConversation(db, runs[2].conv), "ok");
    assertEquals([valid(runs[0]), total()], [RUN_EVENTS_MAX, RUN_EVENTS_MAX]);
    assertEquals(enforceRetention(db, log, 0), 1);
    const run = getRun(db, runs[0].run)!;
    assertEquals([run.journal, total()], ["snapshot_only", 0]);
    const snap = JSON.parse(run.snapshot!);
    assertEquals([snap.events, snap.terminal.kind], [RUN_EVENTS_MAX, "run.completed"]);
  } finally {
    db.close();
  }
});

Deno.test("a real Turn whose search results take its journal past 256 KiB completes and replays valid", async () => {
  const h = await startRunHarness();
  try {
    // Every line holds the 24 words the Turn searches for: each search fills its 12 KiB.
    const words = Array.from({ length: 24 }, (_, i) => `w${String(i + 1).padStart(2, "0")}`);
    const line = (n: number) => `line ${n}: ${words.join(" ")} lorem ipsum dolor sit amet\n`;
    Deno.writeTextFileSync(
      `${h.server.home}/data/agents/${h.agent}/workspace/hay.txt`,
      Array.from({ length: 200 }, (_, i) => line(i + 1)).join(""),
      { mode: 0o600 },
    );
    // 6 responses of 4 distinct searches: the Turn's 24 tool calls, then the answer.
    const steps: FakeToolCall[][] = Array.from(
      { length: 6 },
      (_, r) =>
        words.slice(r * 4, r * 4 + 4).map((w) => ({
          name: "file__grep",
          arguments: { pattern: w },
        })),
    );
    const src = scenarios.scriptedTools(steps);
    h.ollama.enqueue(...Array.from({ length: steps.length + 1 }, () => src));
    const conv = await newConversation(h);
    const r = await submit(h, conv, "search the hay");
    assertEquals(r.status, 202);
    const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
    assertEquals(frames.at(-1)!.event, "run.completed");
    assertEquals(frames.at(-1)!.data.payload.tool_calls, 24);
    const state = new ReadOnlyDatabase(`${h.server.home}/data/agents/${h.agent}/state.sqlite`, {
      readOnly: true,
    });
    try {
      const run = state.prepare("SELECT state, event_count, durable_bytes FROM runs WHERE id = ?")
        .get(r.body.run_id) as { state: string; event_count: number; durable_bytes: number };
      // The old schema's 256 KiB: this Turn's INSERTs failed there with a constraint error.
      assert(run.durable_bytes > 256 * 1024, String(run.durable_bytes));
      assert(run.durable_bytes <= RUN_DURABLE_BYTES_MAX, String(run.durable_bytes));
      assertEquals(run.state, "completed");
      assertEquals(listEvents(state, r.body.run_id).length, run.event_count);
    } finally {
      state.close();
    }
    // The replay validates the whole journal (chain, head, count, bytes) before answering.
    let cursor: number | null = 0;
    let events = 0;
    while (cursor !== null) {
      const page = await h.api(
        "GET",
        `/api/agents/${h.agent}/runs/${r.body.run_id}/replay?cursor=${cursor}`,
      );
      assertEquals(page.status, 200);
      events += page.body.events.length;
      cursor = page.body.next_cursor;
    }
    assert(events > 24 * 2, String(events));
  } finally {
    await h.close();
  }
});
