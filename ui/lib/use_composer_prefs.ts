/**
 * The composer's draft, model choice and compaction flag as a hook [UI-4,
 * UI-5]: read from the draft store for the current key (the open
 * Conversation, or the Agent's empty state) in render, so a switch never
 * shows or edits the previous composer's draft; writes go to the store and
 * re-render.
 */
import { useState } from "preact/hooks";
import type { ConversationPrefs, DraftStore } from "./drafts.ts";

export interface ComposerPrefsState {
  prefs: ConversationPrefs;
  /** Updates the current key's prefs, in memory and in the store. */
  patch(patch: Partial<ConversationPrefs>): void;
  /** Updates another key's prefs (the empty state handing its draft to a new Conversation). */
  patchKey(key: string, patch: Partial<ConversationPrefs>): void;
  /** Drops a key's prefs. */
  forget(key: string): void;
}

export function useComposerPrefs(drafts: DraftStore, draftKey: string): ComposerPrefsState {
  const [box, setBox] = useState(() => ({ key: draftKey, prefs: drafts.get(draftKey) }));
  const prefs = box.key === draftKey ? box.prefs : drafts.get(draftKey);
  const refresh = () => setBox({ key: draftKey, prefs: drafts.get(draftKey) });
  return {
    prefs,
    patch(patch) {
      if (draftKey) drafts.set(draftKey, patch);
      refresh();
    },
    patchKey(key, patch) {
      drafts.set(key, patch);
      refresh();
    },
    forget(key) {
      drafts.forget(key);
      refresh();
    },
  };
}
