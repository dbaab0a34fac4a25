/**
 * Sending from the empty state [UI-1, UI-4]: with no Conversation open the
 * composer still takes a message; its first Enter creates a Conversation
 * titled from that message and admits the Turn in one go. Until then the
 * draft, model choice and compaction flag are kept per Agent under a key
 * that can never be a Conversation id.
 */
import { runBody } from "./commands.ts";
import type { ConversationPrefs } from "./drafts.ts";
import type { Api } from "./endpoints.ts";
import { autoTitle } from "./format.ts";
import type { Conversation } from "./types.ts";

/** Draft-store key of an Agent's empty-state composer (Conversation ids never contain ":"). */
export function agentDraftKey(agentId: string): string {
  return `agent:${agentId}`;
}

export type FirstTurnResult =
  | { ok: true; conversation: Conversation; turnId: string; runId: string }
  /** The Conversation exists but the Turn was refused: keep the draft there. */
  | { ok: false; conversation: Conversation; error: unknown };

/**
 * Creates the Conversation (titled from `message`, or the server default when
 * nothing printable is left) and starts its first Run. A failure to create
 * rejects; a refused Run resolves `ok: false` with the new Conversation.
 */
export async function startFirstTurn(
  api: Api,
  agentId: string,
  message: string,
  prefs: ConversationPrefs,
): Promise<FirstTurnResult> {
  const conversation = await api.createConversation(agentId, autoTitle(message) ?? undefined);
  try {
    const { turnId, runId } = await api.startRun(agentId, conversation.id, runBody(message, prefs));
    return { ok: true, conversation, turnId, runId };
  } catch (error) {
    return { ok: false, conversation, error };
  }
}
