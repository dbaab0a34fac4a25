/**
 * Conversation search in the Conversation list [UI-9]: a search box over the
 * Agent's titles and messages (GET …/search). Results show the title and a
 * plain-text snippet (rendered as text, never HTML) and open the Conversation.
 * Only the answer to the latest query is shown (older answers are dropped);
 * a refused query shows the server's fixed message. Escape clears the box.
 */
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { SearchHitJson } from "../runtime/protocol/api.ts";

export interface ConversationSearchProps {
  search(q: string): Promise<SearchHitJson[]>;
  onOpen(conversationId: string): void;
}

const DEBOUNCE_MS = 200;

export function ConversationSearch(p: ConversationSearchProps) {
  const [q, setQ] = useState("");
  const [hits, setHits] = useState<SearchHitJson[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const ticket = useRef(0);

  useEffect(() => {
    const mine = ++ticket.current;
    if (q.trim() === "") {
      setHits(null);
      setError(null);
      return;
    }
    const timer = setTimeout(() => {
      p.search(q).then(
        (r) => {
          if (mine !== ticket.current) return;
          setHits(r);
          setError(null);
        },
        () => {
          if (mine !== ticket.current) return;
          setHits(null);
          setError("This search cannot be run (too long or invalid characters).");
        },
      );
    }, DEBOUNCE_MS);
    return () => clearTimeout(timer);
  }, [q]);

  return html`
    <div class="conv-search" role="search">
      <input type="search" class="input input-sm" data-testid="conversation-search"
        placeholder="Search conversations" aria-label="Search conversations" maxlength="256"
        value=${q} onInput=${(e: Event) => setQ((e.target as HTMLInputElement).value)}
        onKeyDown=${(e: KeyboardEvent) => e.key === "Escape" && setQ("")} />
      ${error && html`<p class="small danger-text" data-testid="search-error">${error}</p>`}
      ${hits &&
        html`
          <ul class="search-results" data-testid="search-results" aria-label="Search results">
            ${hits.length === 0 &&
              html`<li class="empty small" data-testid="search-empty">No matches.</li>`}
            ${hits.map((h) =>
              html`
                <li>
                  <button type="button" class="search-hit" data-testid="search-hit"
                    data-conversation=${h.conversation_id}
                    onClick=${() => (setQ(""), p.onOpen(h.conversation_id))}>
                    <span class="search-title">${h.title}</span>
                    <span class="search-snippet small muted">${h.snippet}</span>
                  </button>
                </li>
              `
            )}
          </ul>
        `}
    </div>
  `;
}
