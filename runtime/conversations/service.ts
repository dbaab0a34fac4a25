/**
 * Conversation service [CV-1..4]: list, create (≤ 100 per Agent), detail with
 * one bounded Turn page, rename, delete (cascading; refused while a Run is
 * active), and continue/branch from the completed head.
 *
 * Retry is deliberately not a server operation: a failed retryable Turn only
 * refills the browser's draft from the Turn's `user_message`; resubmitting goes
 * through the normal Run admission like any other message, so retry can never
 * bypass a fence, a cap or the one-active-Run rule.
 */
import {
  type BranchGroupJson,
  type ConversationJson,
  DEFAULT_CONVERSATION_TITLE,
  type TurnJson,
} from "../protocol/api.ts";
import { escapeName } from "../display_name.ts";
import { AppError } from "../errors.ts";
import {
  CONVERSATION_TITLE_MAX_CHARS,
  CONVERSATIONS_PER_AGENT_MAX,
  TURN_PAGE_DEFAULT,
} from "../limits.ts";
import type { AgentService } from "../agents/service.ts";
import * as store from "../store/agent_state_store.ts";
import type { ConversationRow, TurnRow } from "../store/agent_state_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import type { CursorCodec } from "./cursor.ts";

// The default title is part of the API contract (the UI shows the same one before the reply).
export { DEFAULT_CONVERSATION_TITLE };

/** The API's shapes (runtime/protocol/api.ts): the views this service answers with. */
export type ConversationView = ConversationJson;
export type TurnView = TurnJson;
/** One set of alternatives `‹ 1/2 ›` navigates [UI-8]. */
export type BranchGroupView = BranchGroupJson;

export interface ConversationDetail {
  session: ConversationView;
  /** Oldest first within the page. */
  turns: TurnView[];
  page: { limit: number; has_more: boolean; next_before_cursor: string | null };
}

export interface ConversationServiceOptions {
  agents: AgentService;
  cursors: CursorCodec;
  /** @default Date.now */
  now?: () => number;
}

export type ConversationService = ReturnType<typeof createConversationService>;

const iso = (ms: number) => new Date(ms).toISOString();

export function toConversationView(row: ConversationRow): ConversationView {
  return {
    id: row.id,
    // A title is a name the operator reads: hidden characters escaped [OP-1].
    title: escapeName(row.title),
    revision: row.revision,
    parent_id: row.parent_id,
    head_turn_id: row.head_turn_id,
    branched_from_turn_id: row.branched_from_turn_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toTurnView(row: TurnRow): TurnView {
  const terminal = row.state === "completed" || row.state === "running" ? null : {
    code: row.terminal_code,
    stage: row.terminal_stage,
    retryable: row.retryable === 1,
    duration_ms: row.finished_at === null ? 0 : Math.max(0, row.finished_at - row.created_at),
  };
  return {
    id: row.id,
    seq: row.seq,
    state: row.state,
    user_message: row.user_message,
    assistant_message: row.state === "completed" ? row.assistant_message : null,
    run_id: row.run_id,
    created_at: iso(row.created_at),
    finished_at: row.finished_at === null ? null : iso(row.finished_at),
    partial_text: row.state === "failed" || row.state === "cancelled" ? row.partial_text : null,
    terminal,
  };
}

const BRANCH_SUFFIX = " (branch)";

export function branchTitle(title: string): string {
  const suffix = BRANCH_SUFFIX;
  return Array.from(title).slice(0, CONVERSATION_TITLE_MAX_CHARS - suffix.length).join("") +
    suffix;
}

export function createConversationService(opts: ConversationServiceOptions) {
  const now = opts.now ?? Date.now;

  function stateDb(agentId: string): DatabaseSync {
    opts.agents.requireUsable(agentId);
    return opts.agents.pool.get(agentId);
  }

  function requireConversation(db: DatabaseSync, id: string): ConversationRow {
    const row = store.getConversation(db, id);
    if (!row) throw new AppError("conversation_not_found");
    return row;
  }

  function failOn(result: store.MutationResult | "no_head" | "limit"): void {
    switch (result) {
      case "ok":
        return;
      case "missing":
        throw new AppError("conversation_not_found");
      case "busy":
      case "stale":
        throw new AppError("conversation_busy");
      case "no_head":
        throw new AppError("conversation_no_head");
      case "limit":
        throw new AppError("conversation_limit");
      default: {
        const never: never = result;
        throw new Error(`unhandled result ${never}`);
      }
    }
  }

  return {
    /** The Agent's state database, after checking the Agent is usable. */
    stateDb,

    list(agentId: string): ConversationView[] {
      return store.listConversations(stateDb(agentId), CONVERSATIONS_PER_AGENT_MAX)
        .map(toConversationView);
    },

    create(agentId: string, title?: string): ConversationView {
      const db = stateDb(agentId);
      const id = crypto.randomUUID();
      const ok = store.insertConversation(
        db,
        { id, title: title ?? DEFAULT_CONVERSATION_TITLE, now: now() },
        CONVERSATIONS_PER_AGENT_MAX,
      );
      if (!ok) throw new AppError("conversation_limit");
      return toConversationView(requireConversation(db, id));
    },

    /** Detail plus one page of Turns; reads only that page (limit + 1 rows). */
    detail(
      agentId: string,
      conversationId: string,
      page: { before?: string; limit?: number } = {},
    ): ConversationDetail {
      const db = stateDb(agentId);
      const conv = requireConversation(db, conversationId);
      const limit = page.limit ?? TURN_PAGE_DEFAULT;
      const beforeSeq = page.before === undefined ? null : opts.cursors.decode(page.before, {
        agentId,
        conversationId,
        revision: conv.revision,
      });
      const rows = store.pageTurns(db, conversationId, beforeSeq, limit);
      const hasMore = rows.length > limit;
      const pageRows = rows.slice(0, limit).reverse();
      const next = hasMore
        ? opts.cursors.encode({
          agentId,
          conversationId,
          revision: conv.revision,
          boundarySeq: pageRows[0].seq,
        })
        : null;
      return {
        session: toConversationView(conv),
        turns: pageRows.map(toTurnView),
        page: { limit, has_more: hasMore, next_before_cursor: next },
      };
    },

    rename(agentId: string, conversationId: string, title: string): ConversationView {
      const db = stateDb(agentId);
      failOn(store.renameConversation(db, conversationId, title, now()));
      return toConversationView(requireConversation(db, conversationId));
    },

    delete(agentId: string, conversationId: string): void {
      failOn(store.deleteConversation(stateDb(agentId), conversationId));
    },

    continueFromHead(
      agentId: string,
      conversationId: string,
    ): { session: ConversationView; head_turn_id: string } {
      const db = stateDb(agentId);
      const r = store.continueFromHead(db, conversationId, now());
      failOn(r.result);
      return {
        session: toConversationView(requireConversation(db, conversationId)),
        head_turn_id: r.headTurnId!,
      };
    },

    /** A branch before `turnId` (edit, regenerate) [UI-8]; the original stays as it is. */
    branchBefore(
      agentId: string,
      conversationId: string,
      turnId: string,
    ): { session: ConversationView; copied_turns: number } {
      const db = stateDb(agentId);
      const source = requireConversation(db, conversationId);
      const id = crypto.randomUUID();
      const r = store.branchBefore(db, {
        sourceId: conversationId,
        beforeTurnId: turnId,
        newId: id,
        // Alternatives of alternatives keep one suffix, not "(branch) (branch)".
        title: source.title.endsWith(BRANCH_SUFFIX) ? source.title : branchTitle(source.title),
        now: now(),
      }, CONVERSATIONS_PER_AGENT_MAX);
      if (r.result === "turn_missing") throw new AppError("turn_not_found");
      failOn(r.result);
      return { session: toConversationView(requireConversation(db, id)), copied_turns: r.copied! };
    },

    /** The alternatives visible from a Conversation [UI-8]. */
    branches(agentId: string, conversationId: string): BranchGroupView[] {
      const db = stateDb(agentId);
      requireConversation(db, conversationId);
      return store.branchGroups(db, conversationId).map((g) => ({
        anchor_turn_id: g.anchor_turn_id,
        index: g.members.findIndex((m) => m.conversation_id === conversationId),
        members: g.members.map((m) => ({
          session_id: m.conversation_id,
          title: escapeName(m.title),
          turn_id: m.turn_id,
        })),
      })).filter((g) => g.index >= 0 && g.members.length >= 2);
    },

    branch(
      agentId: string,
      conversationId: string,
    ): { session: ConversationView; copied_turns: number } {
      const db = stateDb(agentId);
      const source = requireConversation(db, conversationId);
      const id = crypto.randomUUID();
      const r = store.branchConversation(
        db,
        { sourceId: conversationId, newId: id, title: branchTitle(source.title), now: now() },
        CONVERSATIONS_PER_AGENT_MAX,
      );
      failOn(r.result);
      return { session: toConversationView(requireConversation(db, id)), copied_turns: r.copied! };
    },
  };
}
