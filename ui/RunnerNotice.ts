/**
 * The plain mark of an Agent bound to an external ACP runner [LC-6]: its Turns
 * run in the operator's own program, which Agent Builder does not sandbox.
 * Shown above the chat and in the Agent's settings; the name is a text node.
 */
import { html } from "htm/preact";

export interface RunnerNoticeProps {
  runner: string;
}

/** The one wording of the mark (the SPEC's, tests look for it). */
export function runnerNoticeText(runner: string): string {
  return `runs on ${runner} — operator-owned execution, not sandboxed by Agent Builder`;
}

export function RunnerNotice({ runner }: RunnerNoticeProps) {
  return html`
    <p class="runner-notice" role="note" data-testid="runner-notice">
      <span class="runner-notice-icon" aria-hidden="true">⚠</span>
      <span>${runnerNoticeText(runner)}</span>
    </p>
  `;
}
