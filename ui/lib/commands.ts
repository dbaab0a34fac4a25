/**
 * What a slash-command result changes in the browser [SC-1]: effects only ever
 * adjust this Conversation's next-Turn preferences (model, compaction) or ask
 * for a fresh Conversation. Nothing here can start a Turn.
 */
import type { ConversationPrefs } from "./drafts.ts";
import type { CommandEffect, Turn } from "./types.ts";

export type EffectAction =
  | { kind: "prefs"; patch: Partial<ConversationPrefs> }
  | { kind: "new_conversation" }
  | { kind: "compact_summary" }
  | { kind: "none" };

export function effectAction(effect: CommandEffect | null): EffectAction {
  switch (effect?.type) {
    case "set_model":
      return { kind: "prefs", patch: { modelId: effect.model_id } };
    case "compact_next_turn":
      return { kind: "prefs", patch: { compactNext: true } };
    case "new_conversation":
      return { kind: "new_conversation" };
    case "compact_summary":
      return { kind: "compact_summary" };
    case undefined:
      return { kind: "none" };
    default: {
      const never: never = effect;
      throw new Error(`unhandled effect ${JSON.stringify(never)}`);
    }
  }
}

/** The body of `POST …/runs` from the message and this Conversation's preferences. */
export function runBody(message: string, prefs: ConversationPrefs) {
  return {
    message,
    ...(prefs.modelId ? { model_id: prefs.modelId } : {}),
    ...(prefs.compactNext ? { compact: true } : {}),
  };
}

/** The Turn shown right after admission, until the server's copy replaces it. */
export function admittedTurn(turnId: string, runId: string, message: string, seq: number): Turn {
  return {
    id: turnId,
    seq,
    state: "running",
    userMessage: message,
    assistantMessage: null,
    partialText: null,
    runId,
    code: null,
    stage: null,
    retryable: false,
    createdAt: Date.now(),
    finishedAt: null,
    durationMs: null,
  };
}
