/**
 * Unified-diff text with added/removed lines tinted, plain text otherwise —
 * always text nodes, never markup (approval previews, tool cards, the
 * instruction editor).
 */
import { html } from "htm/preact";

export function DiffText({ text, testId }: { text: string; testId?: string }) {
  const isDiff = /^(---|\+\+\+|@@)/m.test(text);
  if (!isDiff) return html`<pre class="approval-preview" data-testid=${testId}>${text}</pre>`;
  return html`<pre class="approval-diff" data-testid=${testId}>${
    text.split("\n").map((l) =>
      html`<span class=${
        l.startsWith("+++") || l.startsWith("---")
          ? "diff-file"
          : l.startsWith("@@")
          ? "diff-hunk"
          : l.startsWith("+")
          ? "diff-add"
          : l.startsWith("-")
          ? "diff-del"
          : ""
      }>${l}</span>`
    )
  }</pre>`;
}
