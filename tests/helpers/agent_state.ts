/**
 * Test access to a real Agent's `state.sqlite` next to a running (or stopped)
 * server, for seeding Turns that only the Run service would otherwise create.
 * Uses the product's own store functions and file checks; WAL lets the test
 * and the server hold the database at the same time.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
import { listEvents } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";

export function openAgentState(home: string, agentId: string): DatabaseSync {
  return openDatabase({
    root: home,
    relative: `data/agents/${agentId}/state.sqlite`,
    migrations: AGENT_MIGRATIONS,
    create: false,
  });
}

/** Appends one Turn through begin/finish (the Run service's path); returns its id. */
export function addTurn(
  db: DatabaseSync,
  conversationId: string,
  state: s.TurnState = "completed",
  message = "hello",
): string {
  const conv = s.getConversation(db, conversationId);
  if (!conv) throw new Error("no such conversation");
  const turnId = crypto.randomUUID();
  const r = s.beginTurn(db, {
    conversationId,
    expectedRevision: conv.revision,
    turnId,
    runId: crypto.randomUUID(),
    userMessage: message,
    now: Date.now(),
  });
  if (r.result !== "ok") throw new Error(`beginTurn: ${r.result}`);
  if (state !== "running") {
    s.finishTurn(db, turnId, {
      state,
      assistantMessage: `answer to ${message}`,
      code: "model_busy",
      stage: "model",
      retryable: true,
    }, Date.now());
  }
  return turnId;
}

/**
 * Bulk-inserts `count` completed Turns after the current last one in one
 * transaction (for paging tests and the benchmark), and moves the revision.
 */
export function bulkTurns(db: DatabaseSync, conversationId: string, count: number): void {
  db.exec("BEGIN IMMEDIATE");
  try {
    const { last } = db.prepare(
      "SELECT coalesce(max(seq), 0) AS last FROM turns WHERE conversation_id = ?",
    ).get(conversationId) as { last: number };
    const ins = db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                          created_at, finished_at)
       VALUES (?, ?, ?, 'completed', ?, ?, ?, ?)`,
    );
    for (let i = 1; i <= count; i++) {
      const seq = last + i;
      ins.run(
        crypto.randomUUID(),
        conversationId,
        seq,
        `message ${seq}`,
        `answer ${seq}`,
        seq,
        seq,
      );
    }
    db.prepare("UPDATE conversations SET revision = revision + 1 WHERE id = ?").run(conversationId);
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/**
 * Tampers with one journal row the way an editor of the file would: reads its text through the
 * store (bodies are stored deflated), edits it and writes it back as a plain body. Returns
 * whether the edit changed the text.
 */
export function tamperEvent(
  db: DatabaseSync,
  runId: string,
  seq: number,
  edit: (body: string) => string,
): boolean {
  const row = listEvents(db, runId).find((e) => e.seq === seq);
  if (!row) throw new Error(`no event ${seq}`);
  const body = edit(row.body);
  db.prepare("UPDATE run_events SET body = ?, body_z = NULL WHERE run_id = ? AND seq = ?")
    .run(body, runId, seq);
  return body !== row.body;
}

/**
 * The golden journal row [PF-4]: a `run.started` body as this release stored it, deflated with
 * its Run's preset dictionary (agent migration 0020). FROZEN: if it stops reading back, the
 * dictionary changed and every journal written with it became unreadable
 * (run_events_deflate_test.ts; run_events_bound_test.ts carries it through migration 0022).
 */
export const GOLDEN_RUN = {
  run: "77777777-7777-4777-8777-777777777777",
  conv: "55555555-5555-4555-8555-555555555555",
  turn: "66666666-6666-4666-8666-666666666666",
  summary: '{"budget":28672,"history_count":0,"model_id":"qwen3.5:2b",' +
    '"turn_id":"66666666-6666-4666-8666-666666666666","window":32768}',
};
/** The canonical body of the golden row (343 bytes). */
export const GOLDEN_BODY =
  `{"agent_id":"00000000-0000-4000-8000-000000000001","conversation_id":"${GOLDEN_RUN.conv}",` +
  `"kind":"run.started","payload":${GOLDEN_RUN.summary},"run_id":"${GOLDEN_RUN.run}","seq":1,` +
  `"ts":1796191378646,"v":1}`;
/** Its stored form (45 bytes, hex). */
export const GOLDEN_Z_HEX =
  "4371a10114e8820913106101e3428121157c31e8a289cc8004257050f234b73433b4343436b730333183062b00";

export function unhex(h: string): Uint8Array {
  return new Uint8Array(h.match(/../g)!.map((x) => parseInt(x, 16)));
}
