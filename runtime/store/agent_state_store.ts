/**
 * The only SQL for Conversations and Turns in an Agent's private
 * `state.sqlite` [CV-1..4, CV-6]. (Runs, events, usage and permissions live in
 * the same database but have their own store module.)
 *
 * Enforced here: the per-Agent Conversation cap (checked inside the inserting
 * transaction), at most one running Turn per Conversation (the unique partial
 * index plus a revision compare-and-swap), cascading deletes refused while any
 * Turn in the Conversation tree is running, and Turn pages that read only the
 * page (an index range scan on `(conversation_id, seq)` with LIMIT).
 * No statement here ever runs VACUUM.
 */
import type { DatabaseSync } from "node:sqlite";
import { indexDeflatedTurn } from "./search_store.ts";
import { answerOf, storedAnswer } from "./turn_answer.ts";
import { expectOneChange, prepareUncached, transaction } from "./sqlite.ts";
import type { TURN_STATES } from "../protocol/api.ts";

/** The states a Turn row may hold: the protocol's list (one owner). */
export type TurnState = typeof TURN_STATES[number];

export interface ConversationRow {
  id: string;
  title: string;
  revision: number;
  parent_id: string | null;
  head_turn_id: string | null;
  branched_from_turn_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface TurnRow {
  id: string;
  seq: number;
  state: TurnState;
  user_message: string;
  assistant_message: string | null;
  created_at: number;
  finished_at: number | null;
  run_id: string | null;
  terminal_code: string | null;
  terminal_stage: string | null;
  retryable: number | null;
  /** What a failed/cancelled Turn had shown (never model history). */
  partial_text: string | null;
}

const CONV_COLS =
  "id, title, revision, parent_id, head_turn_id, branched_from_turn_id, created_at, updated_at";
/** The columns every Turn reader selects; rows become TurnRows only through `turnRowOf`. */
export const TURN_COLS = "id, seq, state, user_message, assistant_message, assistant_z, " +
  "created_at, finished_at, run_id, terminal_code, terminal_stage, retryable, partial_text";

/** A Turn row as stored (TURN_COLS) → the TurnRow every caller sees, the answer as text. */
export function turnRowOf(raw: unknown): TurnRow {
  const { assistant_z, ...row } = raw as TurnRow & { assistant_z: Uint8Array | null };
  return { ...row, assistant_message: answerOf(row.assistant_message, assistant_z) };
}

export function getConversation(db: DatabaseSync, id: string): ConversationRow | null {
  const row = db.prepare(`SELECT ${CONV_COLS} FROM conversations WHERE id = ?`).get(id);
  return (row as ConversationRow | undefined) ?? null;
}

/** Most recently updated first; `limit` is the per-Agent cap so the list is bounded. */
export function listConversations(db: DatabaseSync, limit: number): ConversationRow[] {
  return db.prepare(
    `SELECT ${CONV_COLS} FROM conversations ORDER BY updated_at DESC, id DESC LIMIT ?`,
  ).all(limit) as unknown as ConversationRow[];
}

export function countConversations(db: DatabaseSync): number {
  return (db.prepare("SELECT count(*) AS n FROM conversations").get() as { n: number }).n;
}

/** Inserts a Conversation unless `max` already exist. Returns false at the cap. */
export function insertConversation(
  db: DatabaseSync,
  row: { id: string; title: string; now: number },
  max: number,
): boolean {
  return transaction(db, () => insertConversationInTransaction(db, row, max));
}

/** As `insertConversation`, for callers that already hold a transaction (an import). */
export function insertConversationInTransaction(
  db: DatabaseSync,
  row: { id: string; title: string; now: number },
  max: number,
): boolean {
  if (countConversations(db) >= max) return false;
  db.prepare(
    `INSERT INTO conversations (id, title, revision, created_at, updated_at)
     VALUES (?, ?, 0, ?, ?)`,
  ).run(row.id, row.title, row.now, row.now);
  return true;
}

export type MutationResult = "ok" | "missing" | "busy" | "stale";

/** Whether the Conversation itself (not its branches) has a running Turn. */
export function hasRunningTurn(db: DatabaseSync, conversationId: string): boolean {
  return db.prepare(
    "SELECT 1 AS x FROM turns WHERE conversation_id = ? AND state = 'running' LIMIT 1",
  ).get(conversationId) !== undefined;
}

/** The position of a Turn in its Conversation, or null when it is not a Turn of that Conversation. */
export function turnSeqIn(db: DatabaseSync, conversationId: string, turnId: string): number | null {
  const row = db.prepare("SELECT seq FROM turns WHERE id = ? AND conversation_id = ?")
    .get(turnId, conversationId) as { seq: number } | undefined;
  return row?.seq ?? null;
}

/** Whether the Conversation or any descendant (branch) has a running Turn. */
export function treeHasRunningTurn(db: DatabaseSync, conversationId: string): boolean {
  return db.prepare(
    `WITH RECURSIVE tree(id) AS (
       SELECT ? UNION SELECT c.id FROM conversations c JOIN tree t ON c.parent_id = t.id)
     SELECT 1 AS x FROM turns WHERE state = 'running'
       AND conversation_id IN (SELECT id FROM tree) LIMIT 1`,
  ).get(conversationId) !== undefined;
}

/** Title change bumps the revision (so older page cursors stop verifying). */
export function renameConversation(
  db: DatabaseSync,
  id: string,
  title: string,
  now: number,
): MutationResult {
  const r = db.prepare(
    "UPDATE conversations SET title = ?, revision = revision + 1, updated_at = ? WHERE id = ?",
  ).run(title, now, id);
  return r.changes === 1 ? "ok" : "missing";
}

/**
 * Deletes a Conversation with its Turns and child Conversations (and, through
 * foreign keys, every row that references them) in one transaction. Refused
 * with "busy" while any Turn in the tree is running. No VACUUM [CV-4].
 */
export function deleteConversation(db: DatabaseSync, id: string): MutationResult {
  return transaction(db, () => {
    if (!getConversation(db, id)) return "missing";
    if (treeHasRunningTurn(db, id)) return "busy";
    expectOneChange(
      db.prepare("DELETE FROM conversations WHERE id = ?").run(id),
      "deleteConversation",
    );
    return "ok";
  });
}

/** The latest completed Turn (the head a Conversation continues or branches from). */
export function completedHead(
  db: DatabaseSync,
  conversationId: string,
): { id: string; seq: number } | null {
  const row = db.prepare(
    `SELECT id, seq FROM turns WHERE conversation_id = ? AND state = 'completed'
     ORDER BY seq DESC LIMIT 1`,
  ).get(conversationId);
  return (row as { id: string; seq: number } | undefined) ?? null;
}

/** Marks the completed head as the point the next Turn continues from. */
export function continueFromHead(
  db: DatabaseSync,
  id: string,
  now: number,
): { result: MutationResult | "no_head"; headTurnId?: string } {
  return transaction(db, () => {
    if (!getConversation(db, id)) return { result: "missing" };
    if (hasRunningTurn(db, id)) return { result: "busy" };
    const head = completedHead(db, id);
    if (!head) return { result: "no_head" };
    expectOneChange(
      db.prepare(
        "UPDATE conversations SET head_turn_id = ?, revision = revision + 1, updated_at = ? WHERE id = ?",
      ).run(head.id, now, id),
      "continueFromHead",
    );
    return { result: "ok", headTurnId: head.id };
  });
}

// A UUIDv4 generated inside SQLite, so a branch copies Turns without loading them.
const SQL_UUID4 = "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || " +
  "substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) || " +
  "substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))";

/** Branch copies carry a deflated answer as it is; the search doc of each is written here. */
function indexDeflatedCopies(db: DatabaseSync, conversationId: string): void {
  const rows = db.prepare(
    `SELECT id, user_message, assistant_z FROM turns
     WHERE conversation_id = ? AND assistant_z IS NOT NULL`,
  ).all(conversationId) as unknown as {
    id: string;
    user_message: string;
    assistant_z: Uint8Array;
  }[];
  for (const r of rows) {
    indexDeflatedTurn(db, r.id, r.user_message, answerOf(null, r.assistant_z) ?? "");
  }
}

/**
 * Creates a child Conversation holding copies of the source's completed Turns
 * up to its completed head (renumbered 1..n), all in one transaction.
 */
export function branchConversation(
  db: DatabaseSync,
  opts: { sourceId: string; newId: string; title: string; now: number },
  max: number,
): { result: MutationResult | "no_head" | "limit"; copied?: number } {
  return transaction(db, () => {
    if (!getConversation(db, opts.sourceId)) return { result: "missing" };
    if (hasRunningTurn(db, opts.sourceId)) return { result: "busy" };
    const head = completedHead(db, opts.sourceId);
    if (!head) return { result: "no_head" };
    if (countConversations(db) >= max) return { result: "limit" };
    db.prepare(
      `INSERT INTO conversations
         (id, title, revision, parent_id, head_turn_id, branched_from_turn_id, created_at, updated_at)
       VALUES (?, ?, 0, ?, NULL, ?, ?, ?)`,
    ).run(opts.newId, opts.title, opts.sourceId, head.id, opts.now, opts.now);
    const r = db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                          assistant_z, created_at, finished_at)
       SELECT ${SQL_UUID4}, ?, row_number() OVER (ORDER BY seq), 'completed', user_message,
              assistant_message, assistant_z, created_at, finished_at
       FROM turns WHERE conversation_id = ? AND state = 'completed' AND seq <= ?`,
    ).run(opts.newId, opts.sourceId, head.seq);
    indexDeflatedCopies(db, opts.newId);
    const headRow = db.prepare(
      "SELECT id FROM turns WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
    ).get(opts.newId) as { id: string };
    expectOneChange(
      db.prepare("UPDATE conversations SET head_turn_id = ? WHERE id = ?").run(
        headRow.id,
        opts.newId,
      ),
      "branchConversation",
    );
    return { result: "ok", copied: Number(r.changes) };
  });
}

/**
 * Branches `sourceId` before one of its Turns [UI-8, TL-11]: a new
 * Conversation holding copies of the source's completed Turns before it (none
 * when it is the first). The original is left as it is. Refused while the
 * source has a running Turn, for a Turn of another Conversation, and at the
 * cap — all checked in the inserting transaction.
 *
 * The branch point is recorded so the alternatives can be navigated: a branch
 * before Turn T of P is an alternative of T. Branching a branch before its
 * first own Turn makes another alternative of the same Turn (same parent and
 * Turn), not a branch of a branch.
 */
export function branchBefore(
  db: DatabaseSync,
  opts: { sourceId: string; beforeTurnId: string; newId: string; title: string; now: number },
  max: number,
): { result: MutationResult | "limit" | "turn_missing"; copied?: number } {
  return transaction(db, () => {
    const src = db.prepare(
      "SELECT parent_id, branched_before_turn_id, branch_base FROM conversations WHERE id = ?",
    ).get(opts.sourceId) as
      | { parent_id: string | null; branched_before_turn_id: string | null; branch_base: number }
      | undefined;
    if (!src) return { result: "missing" };
    if (hasRunningTurn(db, opts.sourceId)) return { result: "busy" };
    const turn = db.prepare("SELECT seq FROM turns WHERE id = ? AND conversation_id = ?")
      .get(opts.beforeTurnId, opts.sourceId) as { seq: number } | undefined;
    if (!turn) return { result: "turn_missing" };
    if (countConversations(db) >= max) return { result: "limit" };
    const sameGroup = src.parent_id !== null && src.branched_before_turn_id !== null &&
      turn.seq === src.branch_base + 1;
    const parent = sameGroup ? src.parent_id : opts.sourceId;
    const point = sameGroup ? src.branched_before_turn_id : opts.beforeTurnId;
    db.prepare(
      `INSERT INTO conversations (id, title, revision, parent_id, head_turn_id,
         branched_from_turn_id, branched_before_turn_id, branch_base, created_at, updated_at)
       VALUES (?, ?, 0, ?, NULL, NULL, ?, 0, ?, ?)`,
    ).run(opts.newId, opts.title, parent, point, opts.now, opts.now);
    const r = db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                          assistant_z, created_at, finished_at)
       SELECT ${SQL_UUID4}, ?, row_number() OVER (ORDER BY seq), 'completed', user_message,
              assistant_message, assistant_z, created_at, finished_at
       FROM turns WHERE conversation_id = ? AND state = 'completed' AND seq < ?`,
    ).run(opts.newId, opts.sourceId, turn.seq);
    const copied = Number(r.changes);
    indexDeflatedCopies(db, opts.newId);
    const head = db.prepare(
      "SELECT id FROM turns WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
    ).get(opts.newId) as { id: string } | undefined;
    const from = db.prepare(
      `SELECT id FROM turns WHERE conversation_id = ? AND state = 'completed' AND seq < ?
       ORDER BY seq DESC LIMIT 1`,
    ).get(opts.sourceId, turn.seq) as { id: string } | undefined;
    expectOneChange(
      db.prepare(
        `UPDATE conversations SET head_turn_id = ?, branched_from_turn_id = ?, branch_base = ?
         WHERE id = ?`,
      ).run(head?.id ?? null, from?.id ?? null, copied, opts.newId),
      "branchBefore",
    );
    return { result: "ok", copied };
  });
}

/** One set of alternatives: the parent at one Turn and its branches before that Turn. */
export interface BranchGroupRow {
  /** The Turn of THIS Conversation where the alternatives diverge (null: none yet). */
  anchor_turn_id: string | null;
  members: { conversation_id: string; title: string; turn_id: string | null }[];
}

/**
 * The alternatives visible from `conversationId` [UI-8]: the group it belongs
 * to (when it is a branch made before a Turn) and one group per own Turn that
 * has branches made before it. Members oldest first, the parent first.
 */
export function branchGroups(db: DatabaseSync, conversationId: string): BranchGroupRow[] {
  const me = db.prepare(
    "SELECT parent_id, branched_before_turn_id, branch_base FROM conversations WHERE id = ?",
  ).get(conversationId) as
    | { parent_id: string | null; branched_before_turn_id: string | null; branch_base: number }
    | undefined;
  if (!me) return [];
  const firstOwn = (id: string, base: number): string | null =>
    (db.prepare("SELECT id FROM turns WHERE conversation_id = ? AND seq = ?").get(id, base + 1) as
      | { id: string }
      | undefined)?.id ?? null;
  const titleOf = (id: string): string =>
    (db.prepare("SELECT title FROM conversations WHERE id = ?").get(id) as { title: string })
      .title;
  const childrenAt = db.prepare(
    `SELECT id, title, branch_base FROM conversations
     WHERE parent_id = ? AND branched_before_turn_id = ? ORDER BY created_at, id`,
  );
  const group = (parent: string, turnId: string) => [
    { conversation_id: parent, title: titleOf(parent), turn_id: turnId },
    ...(childrenAt.all(parent, turnId) as { id: string; title: string; branch_base: number }[])
      .map((c) => ({
        conversation_id: c.id,
        title: c.title,
        turn_id: firstOwn(c.id, c.branch_base),
      })),
  ];
  const out: BranchGroupRow[] = [];
  if (me.parent_id !== null && me.branched_before_turn_id !== null) {
    out.push({
      anchor_turn_id: firstOwn(conversationId, me.branch_base),
      members: group(me.parent_id, me.branched_before_turn_id),
    });
  }
  const points = db.prepare(
    `SELECT DISTINCT c.branched_before_turn_id AS turn_id FROM conversations c
     JOIN turns t ON t.id = c.branched_before_turn_id AND t.conversation_id = ?
     WHERE c.parent_id = ? ORDER BY t.seq`,
  ).all(conversationId, conversationId) as { turn_id: string }[];
  for (const p of points) {
    out.push({ anchor_turn_id: p.turn_id, members: group(conversationId, p.turn_id) });
  }
  return out;
}

/**
 * One page of Turns, newest first: Turns with `seq < beforeSeq` (all when null),
 * at most `limit + 1` rows so the caller learns whether an older page exists
 * without reading it. Uses the `(conversation_id, seq)` unique index.
 */
export function pageTurns(
  db: DatabaseSync,
  conversationId: string,
  beforeSeq: number | null,
  limit: number,
): TurnRow[] {
  return db.prepare(
    `SELECT ${TURN_COLS} FROM turns WHERE conversation_id = ? AND seq < ?
     ORDER BY seq DESC LIMIT ?`,
  ).all(
    conversationId,
    beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  ).map(turnRowOf);
}

/** The SQL `pageTurns` runs, for EXPLAIN QUERY PLAN in tests and benchmarks. */
export const PAGE_TURNS_SQL = `SELECT ${TURN_COLS} FROM turns WHERE conversation_id = ? ` +
  "AND seq < ? ORDER BY seq DESC LIMIT ?";

/** What a new Turn needs: the revision CAS input, ids and the user message. */
export interface BeginTurnInput {
  conversationId: string;
  expectedRevision: number;
  turnId: string;
  runId: string | null;
  userMessage: string;
  now: number;
}

/**
 * Accepts a new Turn as `running` [CV-2]: the Conversation's revision must
 * still equal `expectedRevision` (the revision the caller compiled history
 * at) and no other Turn may be running. Bumps the revision.
 */
export function beginTurn(
  db: DatabaseSync,
  t: BeginTurnInput,
): { result: MutationResult; seq?: number; revision?: number } {
  return transaction(db, () => beginTurnInTransaction(db, t));
}

/** As `beginTurn`, for callers that already hold a transaction (Turn + run.started). */
export function beginTurnInTransaction(
  db: DatabaseSync,
  t: BeginTurnInput,
): { result: MutationResult; seq?: number; revision?: number } {
  {
    const conv = getConversation(db, t.conversationId);
    if (!conv) return { result: "missing" };
    if (hasRunningTurn(db, t.conversationId)) return { result: "busy" };
    if (conv.revision !== t.expectedRevision) return { result: "stale" };
    const { next } = db.prepare(
      "SELECT coalesce(max(seq), 0) + 1 AS next FROM turns WHERE conversation_id = ?",
    ).get(t.conversationId) as { next: number };
    db.prepare(
      `INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at, run_id)
       VALUES (?, ?, ?, 'running', ?, ?, ?)`,
    ).run(t.turnId, t.conversationId, next, t.userMessage, t.now, t.runId);
    expectOneChange(
      db.prepare(
        `UPDATE conversations SET revision = revision + 1, updated_at = ?
         WHERE id = ? AND revision = ?`,
      ).run(t.now, t.conversationId, t.expectedRevision),
      "beginTurn",
    );
    return { result: "ok", seq: next, revision: t.expectedRevision + 1 };
  }
}

export interface TurnTerminal {
  state: Exclude<TurnState, "running">;
  /** Only for `completed`: the committed assistant message. */
  assistantMessage?: string;
  /** Safe summary for non-completed Turns: fixed code, stage, retryability. */
  code?: string;
  stage?: string;
  retryable?: boolean;
  /** Failed/cancelled only: the visible text of the open answer block (≤ 12 KiB, non-empty). */
  partialText?: string;
}

/** running → terminal, once; bumps the Conversation revision. Returns false if not running. */
export function finishTurn(
  db: DatabaseSync,
  turnId: string,
  terminal: TurnTerminal,
  now: number,
): boolean {
  return transaction(db, () => finishTurnInTransaction(db, turnId, terminal, now));
}

/** As `finishTurn`, for callers that already hold a transaction (e.g. the run terminal). */
export function finishTurnInTransaction(
  db: DatabaseSync,
  turnId: string,
  terminal: TurnTerminal,
  now: number,
): boolean {
  const completed = terminal.state === "completed";
  const answer = completed ? storedAnswer(terminal.assistantMessage ?? "") : null;
  const row = db.prepare(
    `UPDATE turns SET state = ?, assistant_message = ?, assistant_z = ?, finished_at = ?,
       terminal_code = ?, terminal_stage = ?, retryable = ?, partial_text = ?
     WHERE id = ? AND state = 'running' RETURNING conversation_id, user_message`,
  ).get(
    terminal.state,
    answer ? answer.plain : null,
    answer ? answer.z : null,
    now,
    completed ? null : (terminal.code ?? null),
    completed ? null : (terminal.stage ?? null),
    completed ? null : (terminal.retryable === undefined ? null : terminal.retryable ? 1 : 0),
    (terminal.state === "failed" || terminal.state === "cancelled") && terminal.partialText
      ? terminal.partialText
      : null,
    turnId,
  ) as { conversation_id: string; user_message: string } | undefined;
  if (!row) return false;
  // The trigger indexed the Turn unless its answer is deflated: then it is indexed here.
  if (answer?.z) indexDeflatedTurn(db, turnId, row.user_message, terminal.assistantMessage ?? "");
  expectOneChange(
    db.prepare(
      "UPDATE conversations SET revision = revision + 1, updated_at = ? WHERE id = ?",
    ).run(now, row.conversation_id),
    "finishTurn",
  );
  return true;
}

/**
 * [CV-6] At server start every Turn left `running` becomes `interrupted`, and
 * its Conversation's revision moves, in one transaction. Partial output is
 * never committed (assistant_message stays NULL). Returns the count.
 */
export function interruptRunningTurns(db: DatabaseSync, now: number): number {
  return transaction(db, () => {
    const convs = db.prepare(
      "SELECT DISTINCT conversation_id AS id FROM turns WHERE state = 'running'",
    ).all() as unknown as { id: string }[];
    const r = db.prepare(
      `UPDATE turns SET state = 'interrupted', assistant_message = NULL, finished_at = ?,
         terminal_code = 'run_interrupted', terminal_stage = 'restart', retryable = 1
       WHERE state = 'running'`,
    ).run(now);
    const bump = db.prepare(
      "UPDATE conversations SET revision = revision + 1, updated_at = ? WHERE id = ?",
    );
    for (const c of convs) bump.run(now, c.id);
    return Number(r.changes);
  });
}

// ── history beyond the read bound [CX-1] ──────────────────────────────────────

/**
 * Ids of the completed Turns (with a committed answer) older than `beforeSeq`,
 * oldest first, streamed row by row: only ids are read, never message text.
 */
export function completedTurnIdsBefore(
  db: DatabaseSync,
  conversationId: string,
  beforeSeq: number,
): Iterable<string> {
  const stmt = prepareUncached(
    db,
    `SELECT id FROM turns WHERE conversation_id = ? AND seq < ? AND state = 'completed'
       AND (assistant_message IS NOT NULL OR assistant_z IS NOT NULL) ORDER BY seq`,
  );
  return {
    *[Symbol.iterator]() {
      for (const row of stmt.iterate(conversationId, beforeSeq)) {
        yield (row as { id: string }).id;
      }
    },
  };
}
