/**
 * The only SQL for checkpoints [TL-11] in an Agent's `state.sqlite`
 * (migration 0008): one row per committed workspace mutation, with what it
 * replaced and what it left.
 *
 * What this file enforces: a mutation's rows are written in one transaction
 * with the per-Agent bound — after the insert, while the kept bytes exceed
 * `maxBytes`, the oldest kept checkpoint expires (its bytes dropped, the row
 * kept and marked `expired`, so a rewind can say so); the Turn and
 * Conversation of a row come from the Run's own row, never from the caller;
 * reads are bounded to one Conversation's Turns from one sequence on.
 */
import type { DatabaseSync } from "node:sqlite";
import { expectOneChange, transaction } from "./sqlite.ts";

/** What a mutation replaced: nothing, bytes kept, or bytes over the per-file bound. */
export type CheckpointBefore =
  | { state: "absent" }
  | { state: "kept"; bytes: Uint8Array }
  | { state: "too_large"; size: number };

/** What one committed mutation of one path replaced and left. */
export interface CheckpointInput {
  path: string;
  before: CheckpointBefore;
  /** What the mutation left; null when it deleted the file. */
  after: { digest: string; dev: string; ino: string } | null;
}

export type CheckpointState = "absent" | "kept" | "too_large" | "expired";

export interface CheckpointRow {
  seq: number;
  turn_id: string;
  path: string;
  before_state: CheckpointState;
  before_bytes: Uint8Array | null;
  after_digest: string | null;
  after_dev: string | null;
  after_ino: string | null;
}

/**
 * Records the checkpoints of one tool call of `runId` and expires the oldest
 * kept content past `maxBytes`. Returns how many checkpoints expired.
 */
export function recordCheckpoints(
  db: DatabaseSync,
  r: {
    runId: string;
    callId: string;
    toolId: string;
    entries: readonly CheckpointInput[];
    maxBytes: number;
    now: number;
  },
): number {
  if (r.entries.length === 0) return 0;
  return transaction(db, () => {
    const ins = db.prepare(
      `INSERT INTO checkpoints (conversation_id, turn_id, run_id, call_id, tool_id, path,
         before_state, before_bytes, before_size, after_digest, after_dev, after_ino, created_at)
       SELECT conversation_id, turn_id, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ?`,
    );
    for (const e of r.entries) {
      const b = e.before;
      ins.run(
        r.callId,
        r.toolId,
        e.path,
        b.state,
        b.state === "kept" ? b.bytes : null,
        b.state === "kept" ? b.bytes.length : b.state === "too_large" ? b.size : 0,
        e.after?.digest ?? null,
        e.after?.dev ?? null,
        e.after?.ino ?? null,
        r.now,
        r.runId,
      );
    }
    return expireOldest(db, r.maxBytes, r.now);
  });
}

/** Kept checkpoint bytes of the Agent. */
export function keptBytes(db: DatabaseSync): number {
  const row = db.prepare(
    "SELECT coalesce(sum(before_size), 0) AS n FROM checkpoints WHERE before_state = 'kept'",
  ).get() as { n: number };
  return row.n;
}

function expireOldest(db: DatabaseSync, maxBytes: number, now: number): number {
  let total = keptBytes(db);
  let expired = 0;
  const oldest = db.prepare(
    `SELECT seq, before_size FROM checkpoints WHERE before_state = 'kept'
     ORDER BY seq LIMIT 1`,
  );
  const drop = db.prepare(
    `UPDATE checkpoints SET before_state = 'expired', before_bytes = NULL, expired_at = ?
     WHERE seq = ? AND before_state = 'kept'`,
  );
  while (total > maxBytes) {
    const o = oldest.get() as { seq: number; before_size: number } | undefined;
    if (!o) break;
    expectOneChange(drop.run(now, o.seq), "expireCheckpoint");
    total -= o.before_size;
    expired++;
  }
  return expired;
}

/**
 * The checkpoints of `conversationId`'s Turns with `seq >= fromSeq`, in commit
 * order, without their bytes (a plan needs only states and digests).
 */
export function checkpointsFrom(
  db: DatabaseSync,
  conversationId: string,
  fromSeq: number,
): CheckpointRow[] {
  return db.prepare(
    `SELECT c.seq, c.turn_id, c.path, c.before_state, NULL AS before_bytes, c.after_digest,
            c.after_dev, c.after_ino
     FROM checkpoints c JOIN turns t ON t.id = c.turn_id
     WHERE c.conversation_id = ? AND t.seq >= ? ORDER BY c.seq`,
  ).all(conversationId, fromSeq) as unknown as CheckpointRow[];
}

/** The kept bytes of one checkpoint (null when it is not, or no longer, kept). */
export function checkpointBytes(db: DatabaseSync, seq: number): Uint8Array | null {
  const row = db.prepare(
    "SELECT before_bytes FROM checkpoints WHERE seq = ? AND before_state = 'kept'",
  ).get(seq) as { before_bytes: Uint8Array } | undefined;
  return row ? new Uint8Array(row.before_bytes) : null;
}
