import type { DatabaseSync } from "node:sqlite";
import { assertEquals, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import { withTempHome } from "../helpers/home.ts";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { openDatabase } from "../../runtime/store/sqlite.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import {
  delegationsOfRun,
  finishDelegation,
  insertDelegation,
  interruptRunningDelegations,
  listDelegations,
  type MailboxMessage,
  mailboxOf,
  postMailbox,
} from "../../runtime/store/delegation_store.ts";
import { CONVERSATIONS_PER_AGENT_MAX, DELEGATIONS_RETAINED_MAX } from "../../runtime/limits.ts";

const uuid = () => crypto.randomUUID();

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

/** A parent Run (completed Turn) in the test's one Conversation. */
function parentRun(db: DatabaseSync): { conv: string; run: string } {
  let conv = s.listConversations(db, 1)[0]?.id;
  if (!conv) {
    conv = uuid();
    s.insertConversation(db, { id: conv, title: "t", now: 1 }, CONVERSATIONS_PER_AGENT_MAX);
  }
  const turn = uuid();
  const run = uuid();
  const rev = s.getConversation(db, conv)!.revision;
  s.beginTurn(db, {
    conversationId: conv,
    expectedRevision: rev,
    turnId: turn,
    runId: run,
    userMessage: "m",
    now: 1,
  });
  db.prepare(
    `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
       last_digest, created_at) VALUES (?, ?, ?, 'completed', 'm', '{}', 'd', 1)`,
  ).run(run, conv, turn);
  s.finishTurn(db, turn, { state: "completed", assistantMessage: "a" }, 2);
  return { conv, run };
}

const msg = (direction: MailboxMessage["direction"], body = "hi"): MailboxMessage => ({
  direction,
  body,
  bytes: body.length,
  truncated: false,
  digest: `sha256:${"0".repeat(64)}`,
});

function delegate(db: DatabaseSync, at = 1): { id: string; run: string } {
  const p = parentRun(db);
  const id = uuid();
  insertDelegation(db, {
    id,
    parent_run_id: p.run,
    parent_conversation_id: p.conv,
    call_id: "call-1",
    child_agent_id: uuid(),
    child_conversation_id: uuid(),
    child_run_id: uuid(),
    created_at: at,
  }, msg("parent_to_child"));
  return { id, run: p.run };
}

Deno.test("a delegation's mailbox holds two messages, one per direction; a third is refused", () =>
  withStateDb((db) => {
    const d = delegate(db);
    assertThrows(
      () => postMailbox(db, d.id, msg("parent_to_child", "again"), 2),
      expectCode("subagent_mailbox_full"),
    );
    postMailbox(db, d.id, msg("child_to_parent", "answer"), 2);
    assertThrows(
      () => postMailbox(db, d.id, msg("child_to_parent", "more"), 3),
      expectCode("subagent_mailbox_full"),
    );
    assertEquals(mailboxOf(db, d.id).map((m) => [m.direction, m.body]), [
      ["parent_to_child", "hi"],
      ["child_to_parent", "answer"],
    ]);
    // The database holds the bound as well: a raw third row is refused by the key.
    assertThrows(() =>
      db.prepare(
        `INSERT INTO delegation_mailbox (delegation_id, direction, body, bytes, truncated, digest,
           created_at) VALUES (?, 'child_to_parent', 'x', 1, 0, 'd', 1)`,
      ).run(d.id)
    );
  }));

Deno.test("a delegation ends once; its answer joins the mailbox in the same write", () =>
  withStateDb((db) => {
    const d = delegate(db);
    assertEquals(delegationsOfRun(db, d.run), 1);
    assertEquals(
      finishDelegation(db, d.id, "completed", null, msg("child_to_parent", "a"), 5),
      true,
    );
    assertEquals(finishDelegation(db, d.id, "failed", "x", null, 6), false);
    const [row] = listDelegations(db, 10);
    assertEquals([row.state, row.finished_at, mailboxOf(db, d.id).length], ["completed", 5, 2]);
  }));

Deno.test("a second delegation of the same parent Run is refused by the database", () =>
  withStateDb((db) => {
    const d = delegate(db);
    const [row] = listDelegations(db, 1);
    assertThrows(() =>
      insertDelegation(db, { ...row, id: uuid(), created_at: 2 }, msg("parent_to_child"))
    );
    assertEquals(listDelegations(db, 10).map((r) => r.id), [d.id]);
  }));

Deno.test("restart recovery interrupts every running delegation and nothing else", () =>
  withStateDb((db) => {
    const a = delegate(db, 1);
    const b = delegate(db, 2);
    finishDelegation(db, b.id, "completed", null, null, 3);
    assertEquals(interruptRunningDelegations(db, 9), 1);
    const byId = new Map(listDelegations(db, 10).map((r) => [r.id, r]));
    assertEquals([byId.get(a.id)!.state, byId.get(a.id)!.code], ["interrupted", "run_interrupted"]);
    assertEquals(byId.get(b.id)!.state, "completed");
  }));

Deno.test(`retention keeps the newest ${DELEGATIONS_RETAINED_MAX} delegations, never a running one`, () =>
  withStateDb((db) => {
    const first = delegate(db, 0); // stays running: never pruned
    for (let i = 1; i <= DELEGATIONS_RETAINED_MAX + 1; i++) {
      const d = delegate(db, i);
      finishDelegation(db, d.id, "completed", null, null, i);
    }
    const n = (db.prepare("SELECT count(*) AS n FROM delegations").get() as { n: number }).n;
    assertEquals(n, DELEGATIONS_RETAINED_MAX + 1);
    assertEquals(listDelegations(db, 1000).some((r) => r.id === first.id), true);
  }));
