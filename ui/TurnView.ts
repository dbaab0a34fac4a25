/**
 * One Turn of the chat [UI-2, UI-10, #18]: the user's text (as text), then the
 * answer as the operator saw it — every text block in order with a tool card
 * where each call happened (live from the Run's stream, after a reload from
 * its journal), streaming blocks as Markdown with a visible Stop. A completed
 * Turn's last block is its committed answer; a stopped or failed Turn keeps
 * the text it had shown, with a quiet "Stopped" for the operator's own Stop
 * or the safe terminal summary (code, stage, duration) for anything else.
 * "Retry" only refills the draft.
 */
import { html } from "htm/preact";
import { useMemo } from "preact/hooks";
import { Icon } from "./Icon.ts";
import { LiveMarkdown, MarkdownView } from "./MarkdownView.ts";
import { ToolCard } from "./ToolCard.ts";
import { type TurnHistoryProps, TurnMenu, UserMessage } from "./TurnHistory.ts";
import { type AnswerSegment, answerSegments } from "./lib/answer_blocks.ts";
import { ReasoningBlock } from "./ReasoningBlock.ts";
import { fmtDuration, turnDuration } from "./lib/format.ts";
import { describeError, hasDescription } from "./lib/messages.ts";
import { progressLabel, turnProgress } from "./lib/progress.ts";
import type { RunView } from "./lib/run_store.ts";
import type { MarkdownRenderer } from "./lib/sanitize.ts";
import type { EventEnvelope, Turn } from "./lib/types.ts";

export interface TurnViewProps {
  turn: Turn;
  run: RunView | undefined;
  /** The Run's replayed journal (ended Turns not watched live in this page). */
  record: readonly EventEnvelope[] | undefined;
  renderer: MarkdownRenderer;
  /** A tool approval of this Turn's Run is pending. */
  awaitingApproval: boolean;
  onStop(runId: string): void;
  /** Re-opens the live stream after the client gave up reconnecting. */
  onReconnect(runId: string): void;
  onRetry(message: string): void;
  onDetails(runId: string): void;
  /** Edit, regenerate, ‹ i/n › and rewind [UI-8, TL-11]; absent ⇒ none shown. */
  history?: TurnHistoryProps;
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

/** The segments to show for this Turn's state (see lib/answer_blocks.ts for the history mapping). */
function segmentsFor(turn: Turn, run: RunView | undefined, record?: readonly EventEnvelope[]) {
  const events = run && run.events.length > 0 ? run.events : record ?? [];
  const segs = answerSegments(events, run?.liveBlocks, run?.liveOutput);
  if (turn.state === "running") return segs;
  // An unfinished block of an ended Turn is shown from the Turn's kept partial text instead.
  const ended = segs.filter((s) => s.kind !== "text" || !s.live);
  if (turn.state !== "completed") return ended;
  // The committed answer is the last block; it is shown from the Turn itself.
  const last = ended.at(-1);
  if (last?.kind === "text") ended.pop();
  return ended;
}

export function TurnView(p: TurnViewProps) {
  const { turn, run, renderer } = p;
  const running = turn.state === "running";
  const live = run?.liveText ?? "";
  const progress = run ? progressLabel(turnProgress(run.events)) : null;
  const segments: AnswerSegment[] = useMemo(() => segmentsFor(turn, run, p.record), [
    turn,
    run,
    p.record,
  ]);
  const stopped = turn.state === "cancelled" && !turn.retryable;
  const retry = html`
    <button type="button" class=${stopped ? "link-btn" : "btn btn-sm"} data-testid="retry"
      onClick=${() => p.onRetry(turn.userMessage)}
      aria-label="Retry: put this message back in the composer">
      ${!stopped && html`<${Icon} name="retry" />`} Retry
    </button>
  `;
  // [MB-12] committed reasoning when the call ended, else the live deltas.
  // (the live Run's events, else its journal after a reload)
  const journal = run && run.events.length > 0 ? run.events : p.record ?? [];
  const committed = journal.filter((e) => e.kind === "assistant.reasoning.completed")
    .map((e) => String(e.payload.text ?? "")).join("\n\n");
  const reasoning = committed || (run?.liveReasoning ?? "");
  const answeredBy = journal.find((e) => e.kind === "run.started")?.payload.model_id;
  return html`
    <article class="turn" data-testid="turn" data-state=${turn.state} data-turn-id=${turn.id}>
      <${UserMessage} turn=${turn} history=${p.history} />
      <div class="msg msg-assistant">
        <div class="avatar" aria-hidden="true">
          <${Icon} name="bot" />
        </div>
        <div class="msg-main">
          ${segments.map((s) =>
            s.kind === "tool"
              ? html`<${ToolCard} key=${`t:${s.card.callId}`} card=${s.card} />`
              : s.live
              ? html`
                <div key=${`b:${s.block}`} class="live" data-testid="live-text" aria-live="polite">
                  <${LiveMarkdown} source=${s.text} renderer=${renderer} />
                </div>
              `
              : html`
                <${MarkdownView} key=${`b:${s.block}`} source=${s.text} renderer=${renderer}
                  testId="assistant-block" />
              `
          )}
          ${running && !segments.some((s) => s.kind === "text" && s.live) && html`
            <div class="live live-empty" data-testid="live-text" aria-live="polite"><span
              class="caret" aria-hidden="true"></span></div>
          `}
          ${running && html`
            <div class="turn-status">
              <span class="status-dot running" aria-hidden="true"></span>
              <span>${statusText(live, p.awaitingApproval, run?.connection === "lost")}</span>
              ${progress &&
                html`<span class="turn-progress muted" data-testid="turn-progress">${progress}</span>`}
              ${turn.runId && run?.connection === "lost" && html`
                <button type="button" class="btn btn-sm" data-testid="reconnect"
                  aria-label="Reconnect to this run" onClick=${() => p.onReconnect(turn.runId!)}>
                  Reconnect
                </button>
              `}
              ${turn.runId && html`
                <button type="button" class="btn btn-sm btn-danger-soft" data-testid="stop-run"
                  aria-label="Stop this run" onClick=${() => p.onStop(turn.runId!)}>
                  <${Icon} name="stop" /> Stop
                </button>
              `}
            </div>
          `}
          ${turn.state === "completed" && html`
            <${MarkdownView} source=${turn.assistantMessage ?? ""} renderer=${renderer} />
          `}
          <${ReasoningBlock} text=${reasoning} live=${running && !committed} />
          ${!running && turn.state !== "completed" && turn.partialText && html`
            <${MarkdownView} source=${turn.partialText} renderer=${renderer} testId="partial-text"
              class="partial" />
          `}
          ${stopped && html`
            <div class="turn-stopped" data-testid="turn-stopped" role="status">
              <${Icon} name="stop" /> <span>Stopped</span>
              ${turnDuration(turn) !== null &&
                html`<span class="muted">after ${fmtDuration(turnDuration(turn))}</span>`} ${retry}
            </div>
          `}
          ${!running && !stopped && turn.state !== "completed" && html`
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
              ${retry}
            </div>
          `}
          ${turn.runId && !running && html`
            <div class="turn-foot">
              <button type="button" class="link-btn" onClick=${() => p.onDetails(turn.runId!)}
                aria-label="Show run details">Run details</button>
              ${turnDuration(turn) !== null && turn.state === "completed" &&
                html`<span class="muted">${fmtDuration(turnDuration(turn))}</span>`}
              ${typeof answeredBy === "string" &&
                html`<span class="muted" data-testid="turn-model">${answeredBy}</span>`}
              ${p.history && html`<${TurnMenu} turn=${turn} history=${p.history} />`}
            </div>
          `}
          ${!turn.runId && !running && p.history && html`
            <div class="turn-foot">
              <${TurnMenu} turn=${turn} history=${p.history} />
            </div>
          `}
        </div>
      </div>
    </article>
  `;
}
