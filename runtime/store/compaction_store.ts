/**
 * The `compactions` table [CX-9]: the one store module for /compact
 * summaries. State moves only forward: pending → active | dropped,
 * active → undone | superseded; every transition is one conditional UPDATE
 * so a stale request changes nothing.
 */
import { type DatabaseSync, transaction } from "./sqlite.ts";

export type CompactionState = "pending" | "active" | "dropped" | "undone" | "superseded";

export interface CompactionRow {
  id: string;
  conversation_id: string;
  through_turn_id: string;
  through_seq: number;
  turns: number;
  summary: string;
  model_id: string;
  state: CompactionState;
  created_at: number;
  decided_at: number | null;
}

export function insertCompaction(db: DatabaseSync, row: Omit<CompactionRow, "decided_at">): void {
  db.prepare(
    `INSERT INTO compactions (id, conversation_id, through_turn_id, through_seq, turns, summary,
       model_id, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.id,
    row.conversation_id,
    row.through_turn_id,
    row.through_seq,
    row.turns,
    row.summary,
    row.model_id,
    row.state,
    row.created_at,
  );
}

export function getCompaction(
  db: DatabaseSync,
  conversationId: string,
  id: string,
): CompactionRow | null {
  return (db.prepare("SELECT * FROM compactions WHERE id = ? AND conversation_id = ?")
    .get(id, conversationId) as CompactionRow | undefined) ?? null;
}

export function activeCompaction(db: DatabaseSync, conversationId: string): CompactionRow | null {
  return (db.prepare("SELECT * FROM compactions WHERE conversation_id = ? AND state = 'active'")
    .get(conversationId) as CompactionRow | undefined) ?? null;
}

/** One state transition; false when the row was not in `from` (nothing changed). */
export function moveCompaction(
  db: DatabaseSync,
  id: string,
  from: CompactionState,
  to: CompactionState,
  at: number,
): boolean {
  const r = db.prepare(
    "UPDATE compactions SET state = ?, decided_at = ? WHERE id = ? AND state = ?",
  ).run(to, at, id, from);
  return Number(r.changes) === 1;
}

/** Keeps a pending summary: the active one (if any) is superseded, in one transaction. */
export function keepCompaction(
  db: DatabaseSync,
  conversationId: string,
  id: string,
  at: number,
): boolean {
  return transaction(db, () => {
    const row = getCompaction(db, conversationId, id);
    if (!row || row.state !== "pending") return false;
    db.prepare(
      `UPDATE compactions SET state = 'superseded', decided_at = ?
       WHERE conversation_id = ? AND state = 'active'`,
    ).run(at, conversationId);
    return moveCompaction(db, id, "pending", "active", at);
  });
}
