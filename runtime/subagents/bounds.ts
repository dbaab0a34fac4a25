/**
 * The pure rules of a delegation [LC-2]: which refusal a requested delegation
 * gets (fixed order, so one request always gets the same code), how the
 * child's answer is bounded, and the child Conversation's title.
 *
 * What this file enforces: a message over SUBAGENT_MESSAGE_MAX_BYTES, a
 * delegation from a child Run (depth 1), a second delegation of one parent
 * Run, a delegation to the parent's own Agent (the system Agent included), to
 * an Agent that is not active (deleted, unknown, unavailable), to a busy
 * Agent, and one past SUBAGENTS_ACTIVE_MAX are refused before anything is
 * created; the answer is cut to SUBAGENT_ANSWER_MAX_BYTES at a UTF-8 boundary
 * and says so. No I/O.
 */
import type { ErrorCode } from "../errors.ts";
import {
  CONVERSATION_TITLE_MAX_CHARS,
  SUBAGENT_ANSWER_MAX_BYTES,
  SUBAGENT_MESSAGE_MAX_BYTES,
  SUBAGENTS_ACTIVE_MAX,
  SUBAGENTS_PER_PARENT_RUN_MAX,
} from "../limits.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

/** What the coordinator knows when a delegation is asked for. */
export interface DelegationFacts {
  parentAgentId: string;
  targetAgentId: string;
  messageBytes: number;
  /** The asking Run is itself a child Run. */
  parentIsChild: boolean;
  /** Delegations the asking Run already made or holds. */
  parentDelegations: number;
  /** The target's state: "active", "upgrading", or anything else (gone/unavailable). */
  targetState: "active" | "upgrading" | "absent";
  /** The target has an active Run or a delegation on its way to it. */
  targetBusy: boolean;
  /** Delegations active in the server. */
  activeDelegations: number;
}

/** The refusal for a delegation, or null when it may go ahead. */
export function delegationRefusal(f: DelegationFacts): ErrorCode | null {
  if (f.messageBytes > SUBAGENT_MESSAGE_MAX_BYTES) return "subagent_message_too_large";
  if (f.parentIsChild) return "subagent_depth";
  if (f.parentDelegations >= SUBAGENTS_PER_PARENT_RUN_MAX) return "subagent_parent_limit";
  if (f.targetAgentId === f.parentAgentId) return "subagent_self";
  if (f.targetState === "absent") return "subagent_target_unavailable";
  if (f.targetState === "upgrading" || f.targetBusy) return "subagent_busy";
  if (f.activeDelegations >= SUBAGENTS_ACTIVE_MAX) return "subagent_limit";
  return null;
}

/** The child's answer as the parent gets it: ≤ SUBAGENT_ANSWER_MAX_BYTES, cut on a code point. */
export function boundAnswer(text: string): { body: string; bytes: number; truncated: boolean } {
  const bytes = utf8Bytes(text);
  if (bytes <= SUBAGENT_ANSWER_MAX_BYTES) return { body: text, bytes, truncated: false };
  let out = "";
  let used = 0;
  for (const ch of text) {
    const n = utf8Bytes(ch);
    if (used + n > SUBAGENT_ANSWER_MAX_BYTES) break;
    out += ch;
    used += n;
  }
  return { body: out, bytes, truncated: true };
}

/** "↳ Parent Agent · parent title": the child Conversation names where it came from. */
export function childConversationTitle(parentAgentName: string, parentTitle: string): string {
  // Controls, format and lone surrogates are never part of a title.
  const clean = (s: string) => s.replace(/[\p{Cc}\p{Cf}\p{Cs}]+/gu, " ").trim();
  const t = `↳ ${clean(parentAgentName) || "Agent"} · ${clean(parentTitle) || "Conversation"}`;
  return [...t].slice(0, CONVERSATION_TITLE_MAX_CHARS).join("").trim();
}
