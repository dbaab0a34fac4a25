/**
 * A Turn's reasoning [UI-12, MB-12]: collapsed under the answer, live while it
 * streams (ephemeral `assistant.reasoning.delta`), the committed text once the
 * call ended (`assistant.reasoning.completed`). Rendered as plain text, never
 * as Markdown, and never part of the answer.
 */
import { html } from "htm/preact";

export interface ReasoningBlockProps {
  text: string;
  live: boolean;
}

export function ReasoningBlock({ text, live }: ReasoningBlockProps) {
  if (!text) return null;
  return html`
    <details class="reasoning" data-testid="reasoning-block" data-live=${live ? "1" : "0"}>
      <summary>${live ? "Reasoning…" : "Reasoning"}</summary>
      <div class="reasoning-text" data-testid="reasoning-text">${text}</div>
    </details>
  `;
}
