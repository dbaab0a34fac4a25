/**
 * Per-Conversation composer state [UI-4, UI-5]: the draft text, the chosen
 * model and a pending "compact next turn" flag, kept when switching
 * Conversations and (through an optional Storage) across reloads. Bounded:
 * at most DRAFTS_MAX Conversations, oldest dropped first; drafts are clipped
 * to DRAFT_MAX_CHARS.
 */

export const DRAFTS_MAX = 100;
export const DRAFT_MAX_CHARS = 16 * 1024;
export const DRAFT_STORAGE_KEY = "agent-builder.drafts.v1";

export interface ConversationPrefs {
  draft: string;
  modelId: string | null;
  compactNext: boolean;
}

const EMPTY: ConversationPrefs = { draft: "", modelId: null, compactNext: false };

/** The subset of Web Storage the store needs (sessionStorage in the browser). */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface DraftStore {
  get(conversationId: string): ConversationPrefs;
  set(conversationId: string, patch: Partial<ConversationPrefs>): void;
  forget(conversationId: string): void;
  size(): number;
}

function load(storage: KeyValueStorage | undefined): Map<string, ConversationPrefs> {
  const map = new Map<string, ConversationPrefs>();
  if (!storage) return map;
  let raw: unknown;
  try {
    raw = JSON.parse(storage.getItem(DRAFT_STORAGE_KEY) ?? "[]");
  } catch {
    return map; // corrupt entry: start empty
  }
  if (!Array.isArray(raw)) return map;
  for (const item of raw.slice(-DRAFTS_MAX)) {
    if (!Array.isArray(item) || typeof item[0] !== "string") continue;
    const p = item[1] ?? {};
    map.set(item[0], {
      draft: typeof p.draft === "string" ? p.draft.slice(0, DRAFT_MAX_CHARS) : "",
      modelId: typeof p.modelId === "string" ? p.modelId : null,
      compactNext: p.compactNext === true,
    });
  }
  return map;
}

export function createDraftStore(storage?: KeyValueStorage): DraftStore {
  const map = load(storage);
  const save = () => {
    if (!storage) return;
    try {
      storage.setItem(DRAFT_STORAGE_KEY, JSON.stringify([...map.entries()]));
    } catch (err) {
      // Quota exceeded: keep the in-memory drafts; anything else is a bug.
      if (!(err instanceof DOMException)) throw err;
    }
  };
  return {
    get: (id) => ({ ...(map.get(id) ?? EMPTY) }),
    set(id, patch) {
      const next = { ...(map.get(id) ?? EMPTY), ...patch };
      next.draft = next.draft.slice(0, DRAFT_MAX_CHARS);
      map.delete(id); // re-insert: Map order is recency order
      const isEmpty = next.draft === "" && next.modelId === null && !next.compactNext;
      if (!isEmpty) map.set(id, next);
      while (map.size > DRAFTS_MAX) map.delete(map.keys().next().value as string);
      save();
    },
    forget(id) {
      map.delete(id);
      save();
    },
    size: () => map.size,
  };
}
