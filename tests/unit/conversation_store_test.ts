/**
 * [CV-1..4, CV-6] Conversations and Turns in a real per-Agent state.sqlite:
 * the 100-Conversation cap, one running Turn, revision CAS, cascading delete
 * refused while running, continue/branch from the completed head, bounded pages.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import { insertEvent } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { withTempHome } from "../helpers/home.ts";

function withStateDb(fn: (db: DatabaseSync) => void): Promise<void> {
  return withTempHome((root) => {
    const db = openDatabase({ root, relative: "a/state.sqlite", migrations: AGENT_MIGRATIONS });
    try {
      fn(db);
    } finally {
      db.close();
    }
  });
}

const uuid = () => crypto.randomUUID();

function conv(db: DatabaseSync, title = "t"): string {
  const id = uuid();
  assert(s.insertConversation(db, { id, title, now: 1 }, CONVERSATIONS_PER_AGENT_MAX));
  return id;
}

/** Adds a finished Turn through the same begin/finish path the Run service uses. */
function turn(db: DatabaseSync, c: string, state: s.TurnState = "completed", msg = "hi"): string {
  const rev = s.getConversation(db, c)!.revision;
  const id = uuid();
  assertEquals(
    s.beginTurn(db, {
      conversationId: c,
      expectedRevision: rev,
      turnId: id,
      runId: uuid(),
      userMessage: msg,
      now: 10,
    }).result,
    "ok",
  );
  if (state !== "running") {
    s.finishTurn(db, id, {
      state,
      assistantMessage: "answer",
      code: "model_busy",
      stage: "model",
      retryable: true,
    }, 20);
  }
  return id;
}

Deno.test("the 101st Conversation of an Agent is refused and nothing is inserted", () =>
  withStateDb((db) => {
    for (let i = 0; i < CONVERSATIONS_PER_AGENT_MAX; i++) conv(db);
    assertEquals(
      s.insertConversation(db, { id: uuid(), title: "x", now: 1 }, CONVERSATIONS_PER_AGENT_MAX),
      false,
    );
    assertEquals(s.countConversations(db), CONVERSATIONS_PER_AGENT_MAX);
  }));

Deno.test("a second running Turn is refused as busy and a stale revision as stale", () =>
  withStateDb((db) => {
    const c = conv(db);
    const rev = s.getConversation(db, c)!.revision;
    turn(db, c, "running");
    const begin = (r: number) =>
      s.beginTurn(db, {
        conversationId: c,
        expectedRevision: r,
        turnId: uuid(),
        runId: null,
        userMessage: "x",
        now: 1,
      }).result;
    assertEquals(begin(rev + 1), "busy");
    const c2 = conv(db);
    assertEquals(
      s.beginTurn(db, {
        conversationId: c2,
        expectedRevision: 5,
        turnId: uuid(),
        runId: null,
        userMessage: "x",
        now: 1,
      }).result,
      "stale",
    );
  }));

Deno.test("the database itself rejects a second running Turn even without the service check", () =>
  withStateDb((db) => {
    const c = conv(db);
    turn(db, c, "running");
    let threw = false;
    try {
      db.prepare(
        "INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at) VALUES (?, ?, 99, 'running', 'x', 1)",
      ).run(uuid(), c);
    } catch (err) {
      threw = /UNIQUE/.test(String(err));
    }
    assert(threw, "unique partial index must refuse");
  }));

Deno.test("delete cascades Turns and child branches, and is refused while a branch runs", () =>
  withStateDb((db) => {
    const c = conv(db);
    turn(db, c);
    turn(db, c);
    const b = s.branchConversation(db, { sourceId: c, newId: uuid(), title: "b", now: 2 }, 100);
    assertEquals(b.result, "ok");
    const child = (db.prepare("SELECT id FROM conversations WHERE parent_id = ?").get(c) as {
      id: string;
    }).id;
    const running = turn(db, child, "running");
    assertEquals(s.deleteConversation(db, c), "busy");
    s.finishTurn(db, running, { state: "cancelled", code: "run_cancelled" }, 3);
    assertEquals(s.deleteConversation(db, c), "ok");
    assertEquals(s.countConversations(db), 0);
    assertEquals((db.prepare("SELECT count(*) AS n FROM turns").get() as { n: number }).n, 0);
    assertEquals(s.deleteConversation(db, c), "missing");
  }));

Deno.test("branch copies only completed Turns up to the head, renumbered, with fresh ids", () =>
  withStateDb((db) => {
    const c = conv(db);
    const t1 = turn(db, c);
    turn(db, c, "failed");
    const t3 = turn(db, c);
    turn(db, c, "interrupted");
    const newId = uuid();
    const r = s.branchConversation(db, { sourceId: c, newId, title: "b", now: 2 }, 100);
    assertEquals(r, { result: "ok", copied: 2 });
    const rows = s.pageTurns(db, newId, null, 10);
    assertEquals(rows.map((t) => [t.seq, t.state]), [[2, "completed"], [1, "completed"]]);
    assert(rows.every((t) => t.id !== t1 && t.id !== t3 && /^[0-9a-f-]{36}$/.test(t.id)));
    assertEquals(s.getConversation(db, newId)!.branched_from_turn_id, t3);
    assertEquals(s.getConversation(db, newId)!.head_turn_id, rows[0].id);
  }));

Deno.test("continue and branch need a completed head and no running Turn", () =>
  withStateDb((db) => {
    const c = conv(db);
    assertEquals(s.continueFromHead(db, c, 1).result, "no_head");
    turn(db, c, "failed");
    assertEquals(
      s.branchConversation(db, { sourceId: c, newId: uuid(), title: "b", now: 1 }, 100).result,
      "no_head",
    );
    const head = turn(db, c);
    turn(db, c, "running");
    assertEquals(s.continueFromHead(db, c, 1).result, "busy");
    assertEquals(
      s.branchConversation(db, { sourceId: c, newId: uuid(), title: "b", now: 1 }, 100).result,
      "busy",
    );
    db.exec("UPDATE turns SET state = 'cancelled' WHERE state = 'running'");
    assertEquals(s.continueFromHead(db, c, 1), { result: "ok", headTurnId: head });
  }));

Deno.test("a branch at the Conversation cap is refused as limit", () =>
  withStateDb((db) => {
    const c = conv(db);
    turn(db, c);
    for (let i = 1; i < 3; i++) conv(db);
    assertEquals(
      s.branchConversation(db, { sourceId: c, newId: uuid(), title: "b", now: 1 }, 3).result,
      "limit",
    );
  }));

Deno.test("every rename and Turn transition moves the revision", () =>
  withStateDb((db) => {
    const c = conv(db);
    const rev = () => s.getConversation(db, c)!.revision;
    assertEquals(rev(), 0);
    s.renameConversation(db, c, "new", 2);
    assertEquals(rev(), 1);
    const t = turn(db, c, "running");
    assertEquals(rev(), 2);
    s.finishTurn(db, t, { state: "completed", assistantMessage: "a" }, 3);
    assertEquals(rev(), 3);
    assertEquals(s.finishTurn(db, t, { state: "failed" }, 4), false);
    assertEquals(rev(), 3);
  }));

Deno.test("restart interrupts running Turns without committing partial output", () =>
  withStateDb((db) => {
    const c = conv(db);
    const t = turn(db, c, "running");
    assertEquals(s.interruptRunningTurns(db, 50), 1);
    const row = s.pageTurns(db, c, null, 1)[0];
    assertEquals([row.id, row.state, row.assistant_message, row.terminal_code], [
      t,
      "interrupted",
      null,
      "run_interrupted",
    ]);
    assertEquals(s.interruptRunningTurns(db, 51), 0);
  }));

Deno.test("a page reads limit + 1 rows through the (conversation_id, seq) index", () =>
  withStateDb((db) => {
    const c = conv(db);
    for (let i = 0; i < 10; i++) turn(db, c);
    assertEquals(s.pageTurns(db, c, null, 4).map((t) => t.seq), [10, 9, 8, 7, 6]);
    assertEquals(s.pageTurns(db, c, 3, 4).map((t) => t.seq), [2, 1]);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${s.PAGE_TURNS_SQL}`).all(c, 5, 4) as {
      detail: string;
    }[];
    const text = plan.map((p) => p.detail).join(" | ");
    assert(/SEARCH turns USING INDEX/.test(text), text);
    assert(!/TEMP B-TREE/.test(text), `page must not sort: ${text}`);
  }));

Deno.test("delete cascades a branch tree's Runs, events, usage, permissions and operations", () =>
  withStateDb((db) => {
    const c = conv(db);
    const t1 = turn(db, c);
    assertEquals(
      s.branchConversation(db, { sourceId: c, newId: uuid(), title: "b", now: 2 }, 100).result,
      "ok",
    );
    const child = (db.prepare("SELECT id FROM conversations WHERE parent_id = ?").get(c) as {
      id: string;
    }).id;
    const t2 = turn(db, child);
    for (const [cid, tid] of [[c, t1], [child, t2]]) {
      const run = uuid();
      db.prepare(
        `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
           last_digest, created_at, journal_key)
         VALUES (?, ?, ?, 'completed', 'm', '{}', 'd', 1,
           (SELECT coalesce(max(journal_key), 0) + 1 FROM runs))`,
      ).run(run, cid, tid);
      for (const seq of [1, 2]) {
        insertEvent(db, run, { seq, kind: "k", body: "{}", digest: `sha256:${"0".repeat(64)}` });
      }
      db.prepare(
        `INSERT INTO usage_ledger (run_id, call, state, model_id, scope_digest, token_estimate,
           created_at, updated_at) VALUES (?, 1, 'complete', 'm', 's', 1, 1, 1)`,
      ).run(run);
      db.prepare(
        `INSERT INTO permissions (id, run_id, call_id, tool_id, state, preview, created_at)
         VALUES (?, ?, 'c', 't', 'denied', 'p', 1)`,
      ).run(uuid(), run);
      db.prepare(
        `INSERT INTO operations (id, run_id, call_id, tool_id, state, args_digest, created_at,
           updated_at) VALUES (?, ?, 'c', 't', 'succeeded', 'a', 1, 1)`,
      ).run(uuid(), run);
    }
    assertEquals(s.deleteConversation(db, c), "ok");
    const tables = [
      "conversations",
      "turns",
      "runs",
      "run_events",
      "usage_ledger",
      "permissions",
      "operations",
    ];
    const left = tables.map((t) =>
      [t, (db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n] as const
    );
    assertEquals(left, tables.map((t) => [t, 0] as const));
  }));
