/**
 * Rewind [TL-11]: undo what a Turn and every later Turn of its Conversation
 * did to the workspace, and branch the Conversation before that Turn.
 *
 * What this file enforces:
 * - the Turn belongs to the Conversation (`turn_not_found`); a Conversation
 *   with a running Turn is `conversation_busy` (409) — plan and confirm alike;
 * - without `confirm` nothing is written: the answer is the plan (rewind_plan.ts);
 * - with `confirm` the plan is computed again and carried out in one
 *   synchronous pass (no await: nothing of this server interleaves — no Turn
 *   can begin, no tool can commit), path by path, each path atomic
 *   (restore.ts); a path that is refused (changed since, expired, too large,
 *   or changed between the check and the swap) is left alone and reported,
 *   the others are restored; then the branch before the Turn is created
 *   (the original Conversation stays as it is, as the other branch);
 * - the Conversation cap is checked before any file is touched, so a rewind
 *   that cannot branch restores nothing.
 */
import type { DatabaseSync } from "node:sqlite";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { AppError, type ErrorCode } from "../errors.ts";
import { CONVERSATIONS_PER_AGENT_MAX, REWIND_TIMEOUT_MS } from "../limits.ts";
import * as store from "../store/agent_state_store.ts";
import { checkpointBytes, checkpointsFrom } from "../store/checkpoint_store.ts";
import { historiesOf, type PathPlan, planPath, type RewindStatus } from "./rewind_plan.ts";
import { currentState, restorePath } from "./restore.ts";

export interface RewindFile {
  path: string;
  action: "restore" | "delete";
  status: RewindStatus;
  /** True once the path holds what it held before the Turn (confirm only). */
  reverted: boolean;
  /** Why a planned revert failed when confirmed (a fault, not a refusal); else null. */
  code: ErrorCode | null;
}

export interface RewindOutcome {
  turn_id: string;
  confirmed: boolean;
  files: RewindFile[];
  /** The new branch (confirm only). */
  branch: { id: string; copied_turns: number } | null;
}

export interface RewindRequest {
  db: DatabaseSync;
  workspaceDir: string;
  conversationId: string;
  turnId: string;
  confirm: boolean;
  /** The branch's title, given the source's. */
  branchTitle: (source: string) => string;
  now: number;
}

const view = (p: PathPlan, reverted: boolean): RewindFile => ({
  path: p.path,
  action: p.action,
  status: p.status,
  reverted,
  code: null,
});

export function rewind(r: RewindRequest): RewindOutcome {
  const conv = store.getConversation(r.db, r.conversationId);
  if (!conv) throw new AppError("conversation_not_found");
  const seq = store.turnSeqIn(r.db, r.conversationId, r.turnId);
  if (seq === null) throw new AppError("turn_not_found");
  if (store.hasRunningTurn(r.db, r.conversationId)) throw new AppError("conversation_busy");
  const histories = historiesOf(checkpointsFrom(r.db, r.conversationId, seq));
  const o = openWorkspaceRoot(r.workspaceDir);
  if (!o.ok) throw new AppError(o.code);
  const deadline = performance.now() + REWIND_TIMEOUT_MS;
  try {
    const plans = histories.map((h) => planPath(h, currentState(o.root, h.path, deadline)));
    if (!r.confirm) {
      return {
        turn_id: r.turnId,
        confirmed: false,
        files: plans.map((p) => view(p, false)),
        branch: null,
      };
    }
    if (store.countConversations(r.db) >= CONVERSATIONS_PER_AGENT_MAX) {
      throw new AppError("conversation_limit");
    }
    const files = plans.map((p) => {
      if (p.status !== "revert") return view(p, false);
      const bytes = p.action === "restore" ? checkpointBytes(r.db, p.first_seq) : null;
      const done = restorePath(o.root, p, bytes, deadline);
      if (done.ok) return view(p, true);
      // Changed between the plan and the swap: refused like any file changed since.
      if (done.code === "workspace_changed") {
        return { ...view(p, false), status: "changed_since" as const };
      }
      return { ...view(p, false), code: done.code };
    });
    const id = crypto.randomUUID();
    const b = store.branchBefore(r.db, {
      sourceId: r.conversationId,
      beforeTurnId: r.turnId,
      newId: id,
      title: r.branchTitle(conv.title),
      now: r.now,
    }, CONVERSATIONS_PER_AGENT_MAX);
    // Checked above in this same synchronous pass; anything else is a bug, loudly.
    if (b.result !== "ok") throw new Error(`rewind branch refused: ${b.result}`);
    return { turn_id: r.turnId, confirmed: true, files, branch: { id, copied_turns: b.copied! } };
  } finally {
    o.root.close();
  }
}
