/**
 * The centre column [UI-1]: the Turn list with upward history paging through
 * the server cursor, autoscroll that follows the latest message while the user
 * is at the bottom and pauses when they scroll up, and "Back to latest" (only
 * then). Following also holds through late layout — code-block bars, task
 * boxes, fonts — because the content's size changes re-pin the bottom
 * (ResizeObserver), and a new Turn (the operator just sent) follows again.
 */
import { html } from "htm/preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import { TurnView } from "./TurnView.ts";
import { BranchNav } from "./TurnHistory.ts";
import { RewindDialog } from "./RewindDialog.ts";
import { groupAt } from "./lib/branching.ts";
import type { HistoryActions } from "./lib/use_history_actions.ts";
import { isNearBottom } from "./lib/format.ts";
import { describeError } from "./lib/messages.ts";
import type { RunView } from "./lib/run_store.ts";
import type { MarkdownRenderer } from "./lib/sanitize.ts";
import type { EventEnvelope, Turn } from "./lib/types.ts";

export interface ChatViewProps {
  conversationId: string;
  turns: Turn[];
  /** False until the first page has arrived: no "Start the conversation" flash meanwhile. */
  loaded: boolean;
  /** Why the first page could not be read (shown instead of "Loading…"). */
  loadError: string | null;
  hasOlder: boolean;
  loadingOlder: boolean;
  /** Every Run view held, by run id (a new Map whenever a live Run changed: autoscroll). */
  runs: ReadonlyMap<string, RunView>;
  renderer: MarkdownRenderer;
  /** Replayed journals of ended Runs, by run id (tool cards and blocks after a reload). */
  records: ReadonlyMap<string, readonly EventEnvelope[]>;
  /** Runs with a pending tool approval. */
  awaitingRuns: ReadonlySet<string>;
  onLoadOlder(): void;
  onStop(runId: string): void;
  onReconnect(runId: string): void;
  onRetry(message: string): void;
  onDetails(runId: string): void;
  /** Edit, regenerate, branch navigation and rewind [UI-8, TL-11]. */
  history?: HistoryActions;
}

export function ChatView(p: ChatViewProps) {
  const ref = useRef<HTMLDivElement>(null);
  const inner = useRef<HTMLDivElement>(null);
  const [following, setFollowing] = useState(true);
  const followingNow = useRef(true);
  useLayoutEffect(() => {
    followingNow.current = following;
  }, [following]);
  const prevHeight = useRef(0);
  /** The scrollTop our last pin to the bottom set (null once the operator scrolled). */
  const pinnedAt = useRef<number | null>(null);
  const pin = (el: HTMLElement) => {
    el.scrollTop = el.scrollHeight;
    pinnedAt.current = el.scrollTop;
  };
  const prepending = useRef(false);

  const lastTurn = p.turns.at(-1)?.id ?? null;
  const h = p.history;
  const busy = p.turns.some((t) => t.state === "running");
  // A branch with no Turn of its own yet (just rewound or branched): its ‹ i/n › at the end.
  const pendingGroup = h?.groups.find((g) => g.anchor_turn_id === null) ?? null;
  const historyOf = (t: Turn) =>
    h && {
      group: groupAt(h.groups, t.id),
      busy,
      onEdit: h.onEdit,
      onRegenerate: h.onRegenerate,
      onRewind: h.onRewind,
      onNavigate: h.onNavigate,
    };
  // Opening a Conversation, or a new Turn at the end (the operator sent), follows the bottom.
  useEffect(() => setFollowing(true), [p.conversationId, lastTurn]);

  // Late layout (code-block bars, fonts, a card opening) grows the content without a render:
  // while following, every size change pins the bottom again.
  useLayoutEffect(() => {
    const el = ref.current;
    const content = inner.current;
    if (!el || !content || typeof ResizeObserver === "undefined") return;
    const ro = new ResizeObserver(() => {
      if (followingNow.current && !prepending.current) pin(el);
    });
    ro.observe(content);
    return () => ro.disconnect();
  }, []);

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (prepending.current) {
      // Keep the viewport on the same message after older turns are added above.
      el.scrollTop += el.scrollHeight - prevHeight.current;
      prepending.current = false;
    } else if (following) {
      pin(el);
    }
    prevHeight.current = el.scrollHeight;
  }, [p.turns, p.runs, following, p.conversationId]);

  const onScroll = () => {
    const el = ref.current;
    if (!el) return;
    // The scroll event of our own pin can arrive after the content grew again: it is not the
    // operator scrolling away (only a position we did not set is).
    if (pinnedAt.current !== null && Math.abs(el.scrollTop - pinnedAt.current) < 1) return;
    pinnedAt.current = null;
    const atBottom = isNearBottom(el.scrollTop, el.clientHeight, el.scrollHeight);
    if (atBottom !== following) setFollowing(atBottom);
  };

  const loadOlder = () => {
    prevHeight.current = ref.current?.scrollHeight ?? 0;
    prepending.current = true;
    p.onLoadOlder();
  };

  // [UI-8] ‹ / › opened this Conversation at an alternative: bring that Turn into view instead of
  // following the bottom. A passive effect declared after the "follow on open" one, so it wins.
  const focusId = h?.focus?.conv === p.conversationId ? h.focus.turnId : null;
  useEffect(() => {
    if (!focusId) return;
    const el = ref.current?.querySelector(`[data-turn-id="${CSS.escape(focusId)}"]`);
    if (!el) return;
    followingNow.current = false;
    pinnedAt.current = null;
    setFollowing(false);
    el.scrollIntoView({ block: "start" });
    h?.onFocused();
  }, [focusId, p.turns]);

  // An instant jump (following re-runs the layout effect, which pins the bottom anyway).
  const backToLatest = () => {
    const el = ref.current;
    if (el) pin(el);
    setFollowing(true);
  };

  return html`
    <div class="chat-wrap">
      <div class="chat" ref=${ref} onScroll=${onScroll} data-testid="chat-scroll"
        role="log" aria-label="Conversation" aria-live="off">
        <div class="chat-inner" ref=${inner}>
          ${p.hasOlder && html`
            <div class="older">
              <button type="button" class="btn btn-sm btn-ghost" data-testid="load-older"
                disabled=${p.loadingOlder} onClick=${loadOlder}>
                ${p.loadingOlder ? "Loading…" : "Load earlier messages"}
              </button>
            </div>
          `}
          ${!p.loaded && p.turns.length === 0 && !p.loadError && html`
            <div class="chat-loading" data-testid="chat-loading" role="status">Loading…</div>
          `}
          ${!p.loaded && p.loadError && html`
            <div class="chat-loading" data-testid="chat-load-error" role="alert">
              This conversation could not be loaded: ${describeError(p.loadError)}
              <code class="pill">${p.loadError}</code>
            </div>
          `}
          ${p.loaded && p.turns.length === 0 && html`
            <div class="empty-chat" data-testid="empty-chat">
              <h2>Start the conversation</h2>
              <p>Ask anything. Type <kbd>/</kbd> for commands.</p>
              <p class="small"><kbd>Enter</kbd> sends${" · "}<kbd>Shift</kbd>+<kbd>Enter</kbd> new
                line${" · "}<kbd>Esc</kbd> stops a running answer</p>
            </div>
          `}
          ${p.turns.map((t) =>
            html`
              <${TurnView} key=${t.id} turn=${t} run=${t.runId ? p.runs.get(t.runId) : undefined}
                record=${t.runId ? p.records.get(t.runId) : undefined}
                renderer=${p.renderer} awaitingApproval=${t.runId !== null &&
                  p.awaitingRuns.has(t.runId)}
                onStop=${p.onStop} onReconnect=${p.onReconnect} onRetry=${p.onRetry}
                onDetails=${p.onDetails} history=${historyOf(t)} />
            `
          )}
          ${pendingGroup && h && html`
            <div class="user-tools" data-testid="branch-pending">
              <span class="muted">A new branch: send a message to continue it.</span>
              <${BranchNav} group=${pendingGroup} onNavigate=${h.onNavigate} />
            </div>
          `}
        </div>
      </div>
      ${h?.rewinding && html`
        <${RewindDialog} state=${h.rewinding} onConfirm=${h.onConfirmRewind}
          onClose=${h.onCloseRewind} />
      `}
      ${!following && html`
        <button type="button" class="back-to-latest" data-testid="back-to-latest"
          onClick=${backToLatest} aria-label="Back to latest message">
          <${Icon} name="down" /> Back to latest
        </button>
      `}
    </div>
  `;
}
