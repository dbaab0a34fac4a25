/** The centre column when no Conversation is open: a clear next step [UI-1]. */
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
      <h2>${agentName ? "No conversation open" : "Loading…"}</h2>
      ${agentName && html`
        <p>Start a conversation with <strong>${agentName}</strong>.</p>
        <button type="button" class="btn btn-primary" data-testid="empty-new-conversation"
          onClick=${onCreateConversation}><${Icon} name="plus" /> New conversation</button>
      `}
    </div>
  `;
}
