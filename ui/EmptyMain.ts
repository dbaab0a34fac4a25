/**
 * The centre column when no Conversation is open [UI-1]: says what happens
 * next. The composer below it is already live (its first Enter creates the
 * Conversation); "New conversation" opens an empty one instead.
 */
import { html } from "htm/preact";
import { Icon } from "./Icon.ts";

export interface EmptyMainProps {
  agentName: string | null;
  onCreateConversation(): void;
}

export function EmptyMain({ agentName, onCreateConversation }: EmptyMainProps) {
  return html`
    <div class="empty-main" data-testid="empty-main">
      <div class="empty-icon" aria-hidden="true"><${Icon} name="bot" /></div>
      <h2>${agentName ? `Start a conversation with ${agentName}` : "Loading…"}</h2>
      ${agentName && html`
        <p>Type your first message below: pressing Enter starts the conversation.</p>
        <button type="button" class="btn btn-ghost" data-testid="empty-new-conversation"
          onClick=${onCreateConversation}><${Icon} name="plus" /> Empty conversation</button>
      `}
    </div>
  `;
}
