/**
 * Test access to a real Agent's `state.sqlite` next to a running (or stopped)
 * server, for seeding Turns that only the Run service would otherwise create.
 * Uses the product's own store functions and file checks; WAL lets the test
 * and the server hold the database at the same time.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import * as s from "../../runtime/store/agent_state_store.ts";
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
