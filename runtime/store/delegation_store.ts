/**
 * The only SQL for delegations [LC-2] in the PARENT Agent's `state.sqlite`
 * (migration 0011): one row per started delegation and its two-message
 * mailbox.
 *
 * What this file enforces: a delegation row and its parent→child message are
 * written in one transaction; the mailbox holds at most one message per
 * direction (two in all — a third is `subagent_mailbox_full`, by the primary
 * key as well as by the check here); a delegation ends once (`running` →
 * terminal); recovery turns every `running` row into `interrupted`; retention
 * keeps the newest DELEGATIONS_RETAINED_MAX rows; reads are bounded.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import { DELEGATIONS_RETAINED_MAX, SUBAGENT_MAILBOX_MAX } from "../limits.ts";
import { transaction } from "./sqlite.ts";

export type DelegationState =
  | "running"
  | "completed"
  | "failed"
  | "cancelled"
  | "timeout"
  | "interrupted";

export type MailboxDirection = "parent_to_child" | "child_to_parent";

export interface MailboxMessage {
  direction: MailboxDirection;
  body: string;
  /** Bytes of the message before any cut. */
  bytes: number;
  truncated: boolean;
  digest: string;
}

export interface DelegationRow {
  id: string;
  parent_run_id: string;
  parent_conversation_id: string;
  call_id: string;
  child_agent_id: string;
  child_conversation_id: string;
  child_run_id: string | null;
  state: DelegationState;
  code: string | null;
  created_at: number;
  finished_at: number | null;
}

/** Delegations this parent Run made (0 or 1). */
export function delegationsOfRun(db: DatabaseSync, parentRunId: string): number {
  const r = db.prepare(`SELECT count(*) AS n FROM delegations WHERE parent_run_id = ?`)
    .get(parentRunId) as { n: number };
  return r.n;
}

/** Writes a started delegation with its parent→child message; prunes the oldest finished. */
export function insertDelegation(
  db: DatabaseSync,
  d: Omit<DelegationRow, "state" | "code" | "finished_at">,
  message: MailboxMessage,
): void {
  transaction(db, () => {
    db.prepare(
      `INSERT INTO delegations (id, parent_run_id, parent_conversation_id, call_id,
         child_agent_id, child_conversation_id, child_run_id, state, code, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'running', NULL, ?)`,
    ).run(
      d.id,
      d.parent_run_id,
      d.parent_conversation_id,
      d.call_id,
      d.child_agent_id,
      d.child_conversation_id,
      d.child_run_id,
      d.created_at,
    );
    insertMessage(db, d.id, message, d.created_at);
    db.prepare(
      `DELETE FROM delegations WHERE state <> 'running' AND id NOT IN
         (SELECT id FROM delegations ORDER BY created_at DESC, id LIMIT ?)`,
    ).run(DELEGATIONS_RETAINED_MAX);
  });
}

function insertMessage(db: DatabaseSync, id: string, m: MailboxMessage, now: number): void {
  const held = db.prepare(
    `SELECT direction FROM delegation_mailbox WHERE delegation_id = ?`,
  ).all(id) as { direction: string }[];
  if (held.length >= SUBAGENT_MAILBOX_MAX || held.some((h) => h.direction === m.direction)) {
    throw new AppError("subagent_mailbox_full");
  }
  db.prepare(
    `INSERT INTO delegation_mailbox (delegation_id, direction, body, bytes, truncated, digest,
       created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(id, m.direction, m.body, m.bytes, m.truncated ? 1 : 0, m.digest, now);
}

/** Posts one mailbox message; `subagent_mailbox_full` when its direction is taken. */
export function postMailbox(
  db: DatabaseSync,
  delegationId: string,
  m: MailboxMessage,
  now: number,
): void {
  transaction(db, () => insertMessage(db, delegationId, m, now));
}

/** Ends a running delegation (once); false when it had already ended. */
export function finishDelegation(
  db: DatabaseSync,
  id: string,
  state: Exclude<DelegationState, "running">,
  code: string | null,
  answer: MailboxMessage | null,
  now: number,
): boolean {
  return transaction(db, () => {
    const r = db.prepare(
      `UPDATE delegations SET state = ?, code = ?, finished_at = ?
       WHERE id = ? AND state = 'running'`,
    ).run(state, code, now, id);
    if (Number(r.changes) !== 1) return false;
    if (answer) insertMessage(db, id, answer, now);
    return true;
  });
}

/** [CV-6] Start-up: every delegation left running ends `interrupted`; returns how many. */
export function interruptRunningDelegations(db: DatabaseSync, now: number): number {
  const r = db.prepare(
    `UPDATE delegations SET state = 'interrupted', code = 'run_interrupted', finished_at = ?
     WHERE state = 'running'`,
  ).run(now);
  return Number(r.changes);
}

/** The newest delegations of this (parent) Agent, newest first, at most `limit`. */
export function listDelegations(db: DatabaseSync, limit: number): DelegationRow[] {
  return db.prepare(
    `SELECT id, parent_run_id, parent_conversation_id, call_id, child_agent_id,
       child_conversation_id, child_run_id, state, code, created_at, finished_at
     FROM delegations ORDER BY created_at DESC, id LIMIT ?`,
  ).all(limit) as unknown as DelegationRow[];
}

/** One delegation's mailbox, parent→child first. */
export function mailboxOf(db: DatabaseSync, delegationId: string): MailboxMessage[] {
  const rows = db.prepare(
    `SELECT direction, body, bytes, truncated, digest FROM delegation_mailbox
     WHERE delegation_id = ? ORDER BY direction DESC`,
  ).all(delegationId) as unknown as (Omit<MailboxMessage, "truncated"> & { truncated: number })[];
  return rows.map((r) => ({ ...r, truncated: r.truncated === 1 }));
}
