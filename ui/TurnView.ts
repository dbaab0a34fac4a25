/**
 * One Turn of the chat [UI-2]: the user's text (as text), then the assistant
 * side by state — live deltas as plain text with a visible Stop while running,
 * sanitized Markdown once completed, or a safe terminal summary (code, stage,
 * duration) with "Retry" that only refills the draft.
 */
import { html } from "htm/preact";
import { Icon } from "./Icon.ts";
import { MarkdownView } from "./MarkdownView.ts";
import { fmtDuration, turnDuration } from "./lib/format.ts";
import { describeError, hasDescription } from "./lib/messages.ts";
import { progressLabel, turnProgress } from "./lib/progress.ts";
import type { RunView } from "./lib/run_store.ts";
import type { MarkdownRenderer } from "./lib/sanitize.ts";
import type { Turn } from "./lib/types.ts";

export interface TurnViewProps {
  turn: Turn;
  run: RunView | undefined;
  renderer: MarkdownRenderer;
  /** A tool approval of this Turn's Run is pending. */
  awaitingApproval: boolean;
  onStop(runId: string): void;
  /** Re-opens the live stream after the client gave up reconnecting. */
  onReconnect(runId: string): void;
  onRetry(message: string): void;
  onDetails(runId: string): void;
}

const STATE_LABEL: Record<string, string> = {
  failed: "Failed",
  cancelled: "Cancelled",
  interrupted: "Interrupted",
};

function statusText(live: string, awaiting: boolean, lost: boolean): string {
  if (awaiting) return "Waiting for your approval below…";
  if (lost) return "Connection lost";
  return live ? "Streaming…" : "Thinking…";
}

export function TurnView(
  { turn, run, renderer, awaitingApproval, onStop, onReconnect, onRetry, onDetails }: TurnViewProps,
) {
  const running = turn.state === "running";
  const live = run?.liveText ?? "";
  const progress = run ? progressLabel(turnProgress(run.events)) : null;
  return html`
    <article class="turn" data-testid="turn" data-state=${turn.state} data-turn-id=${turn.id}>
      <div class="msg msg-user">
        <div class="msg-bubble" data-testid="user-message">${turn.userMessage}</div>
      </div>
      <div class="msg msg-assistant">
        <div class="avatar" aria-hidden="true">
          <${Icon} name="bot" />
        </div>
        <div class="msg-main">
          ${running && html`
            <div class=${`live ${
              live ? "" : "live-empty"
            }`} data-testid="live-text" aria-live="polite">${live}<span
              class="caret" aria-hidden="true"></span></div>
            <div class="turn-status">
              <span class="status-dot running" aria-hidden="true"></span>
              <span>${statusText(live, awaitingApproval, run?.connection === "lost")}</span>
              ${progress &&
                html`<span class="turn-progress muted" data-testid="turn-progress">${progress}</span>`}
              ${turn.runId && run?.connection === "lost" && html`
                <button type="button" class="btn btn-sm" data-testid="reconnect"
                  aria-label="Reconnect to this run" onClick=${() => onReconnect(turn.runId!)}>
                  Reconnect
                </button>
              `}
              ${turn.runId && html`
                <button type="button" class="btn btn-sm btn-danger-soft" data-testid="stop-run"
                  aria-label="Stop this run" onClick=${() => onStop(turn.runId!)}>
                  <${Icon} name="stop" /> Stop
                </button>
              `}
            </div>
          `}
          ${turn.state === "completed" && html`
            <${MarkdownView} source=${turn.assistantMessage ?? ""} renderer=${renderer} />
          `}
          ${!running && turn.state !== "completed" && html`
            <div class=${`terminal terminal-${turn.state}`} data-testid="turn-terminal" role="status">
              <div class="terminal-head">
                <${Icon} name="warn" />
                <strong>${STATE_LABEL[turn.state] ?? turn.state}</strong>
                ${turn.code && html`<code class="pill">${turn.code}</code>`}
              </div>
              ${turn.code && hasDescription(turn.code) &&
                html`<p class="terminal-text" data-testid="turn-terminal-text">${
                  describeError(turn.code)
                }</p>`}
              <div class="terminal-meta">
                ${turn.stage && html`<span>stage ${turn.stage}</span>`}
                ${turnDuration(turn) !== null &&
                  html`<span>${fmtDuration(turnDuration(turn))}</span>`}
                ${turn.retryable && html`<span>retryable</span>`}
              </div>
              <button type="button" class="btn btn-sm" data-testid="retry"
                onClick=${() =>
                  onRetry(
                    turn.userMessage,
                  )} aria-label="Retry: put this message back in the composer">
                <${Icon} name="retry" /> Retry
              </button>
            </div>
          `}
          ${turn.runId && !running && html`
            <div class="turn-foot">
              <button type="button" class="link-btn" onClick=${() => onDetails(turn.runId!)}
                aria-label="Show run details">Run details</button>
              ${turnDuration(turn) !== null && turn.state === "completed" &&
                html`<span class="muted">${fmtDuration(turnDuration(turn))}</span>`}
            </div>
          `}
        </div>
      </div>
    </article>
  `;
}
