/**
 * The workspace location in the URL fragment (`#/a/<agent>/c/<conv>`), so a
 * reload comes back to the same Conversation and re-attaches to its running
 * Run [UI-4]. Ids are validated on parse; anything else is ignored.
 */

export interface Place {
  agentId: string | null;
  conversationId: string | null;
}

const ID = /^[A-Za-z0-9_-]{1,128}$/;

export function parsePlace(hash: string): Place {
  const m = /^#\/a\/([^/]+)(?:\/c\/([^/]+))?$/.exec(hash);
  if (!m) return { agentId: null, conversationId: null };
  const a = ID.test(m[1]) ? m[1] : null;
  const c = m[2] !== undefined && ID.test(m[2]) && a !== null ? m[2] : null;
  return { agentId: a, conversationId: c };
}

export function formatPlace(p: Place): string {
  if (p.agentId === null) return "";
  return `#/a/${p.agentId}${p.conversationId ? `/c/${p.conversationId}` : ""}`;
}
