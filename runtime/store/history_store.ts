/**
 * SQL for Conversation export and import [UI-9] in an Agent's `state.sqlite`.
 * Export reads every Turn of one Conversation (at most `limit + 1`, so the
 * caller sees overflow without reading past it). Import creates a new
 * Conversation and its Turns in ONE transaction, under the per-Agent cap:
 * either all of it exists afterwards or none of it. Imported Turns carry no
 * Run (run_id NULL); the search triggers index them in the same transaction.
 */
import type { DatabaseSync } from "node:sqlite";
import {
  insertConversationInTransaction,
  TURN_COLS,
  type TurnRow,
  turnRowOf,
  type TurnState,
} from "./agent_state_store.ts";
import { transaction } from "./sqlite.ts";

/** Every Turn of a Conversation oldest first, at most `limit + 1` rows. */
export function allTurns(db: DatabaseSync, conversationId: string, limit: number): TurnRow[] {
  return db.prepare(
    `SELECT ${TURN_COLS} FROM turns WHERE conversation_id = ? ORDER BY seq LIMIT ?`,
  ).all(conversationId, limit + 1).map(turnRowOf);
}

export interface ImportedTurn {
  state: Exclude<TurnState, "running">;
  userMessage: string;
  /** Completed Turns only. */
  assistantMessage: string | null;
}

/**
 * Inserts a new Conversation with `turns` (renumbered 1..n, fresh ids) unless
 * `max` Conversations already exist. Non-completed Turns get the fixed
 * terminal summary `imported` / `import`, not retryable. Returns false at the cap.
 */
export function importConversation(
  db: DatabaseSync,
  c: { id: string; title: string; now: number; turns: readonly ImportedTurn[] },
  max: number,
): boolean {
  return transaction(db, () => {
    if (!insertConversationInTransaction(db, c, max)) return false;
    const ins = db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                          created_at, finished_at, terminal_code, terminal_stage, retryable)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    c.turns.forEach((t, i) => {
      const done = t.state === "completed";
      ins.run(
        crypto.randomUUID(),
        c.id,
        i + 1,
        t.state,
        t.userMessage,
        done ? (t.assistantMessage ?? "") : null,
        c.now,
        c.now,
        done ? null : "imported",
        done ? null : "import",
        done ? null : 0,
      );
    });
    return true;
  });
}
