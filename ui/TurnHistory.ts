/**
 * A Turn's history controls [UI-8, TL-11]: the user's message with "Edit"
 * (an inline editor whose Send makes a new branch — the original stays), the
 * ‹ i/n › navigation where alternatives diverge, and the Turn's menu
 * (Regenerate, Rewind to here). The actions themselves are the Workspace's
 * (lib/use_history_actions.ts); while a Turn runs they are disabled.
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import { type BranchGroupJson, neighbour } from "./lib/branching.ts";
import type { Turn } from "./lib/types.ts";

export interface TurnHistoryProps {
  /** The alternatives diverging at this Turn, if any. */
  group: BranchGroupJson | null;
  /** A Turn of the Conversation is running: no edit, regenerate or rewind now. */
  busy: boolean;
  onEdit(turn: Turn, text: string): Promise<void>;
  onRegenerate(turn: Turn): Promise<void>;
  onRewind(turn: Turn): void;
  /** Opens the alternative `conv`, at its Turn `turnId` when it has one. */
  onNavigate(conv: string, turnId: string | null): void;
}

export function BranchNav(
  p: { group: BranchGroupJson; onNavigate(conv: string, turnId: string | null): void },
) {
  const prev = neighbour(p.group, -1);
  const next = neighbour(p.group, 1);
  return html`
    <span class="branch-nav" data-testid="branch-nav">
      <button type="button" class="icon-btn icon-btn-sm" data-testid="branch-prev"
        aria-label="Previous version" disabled=${prev === null}
        onClick=${() =>
          prev && p.onNavigate(prev.session_id, prev.turn_id)}><${Icon} name="prev" /></button>
      <span class="branch-pos" data-testid="branch-pos">${p.group.index + 1}/${p.group.members
        .length}</span>
      <button type="button" class="icon-btn icon-btn-sm" data-testid="branch-next"
        aria-label="Next version" disabled=${next === null}
        onClick=${() =>
          next && p.onNavigate(next.session_id, next.turn_id)}><${Icon} name="next" /></button>
    </span>
  `;
}

export function UserMessage(p: { turn: Turn; history?: TurnHistoryProps }) {
  const [draft, setDraft] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const h = p.history;
  if (draft !== null && h) {
    const send = async (ev: Event) => {
      ev.preventDefault();
      if (draft.trim() === "" || sending) return;
      setSending(true);
      try {
        await h.onEdit(p.turn, draft);
      } finally {
        setSending(false);
        setDraft(null);
      }
    };
    return html`
      <form class="msg msg-user msg-edit" data-testid="edit-form" onSubmit=${send}>
        <textarea class="msg-edit-text" data-testid="edit-text" aria-label="Edit your message"
          value=${draft} rows=${Math.min(10, draft.split("\n").length + 1)}
          onInput=${(e: Event) => setDraft((e.target as HTMLTextAreaElement).value)} />
        <div class="msg-edit-actions">
          <span class="muted small">Sending makes a new branch; this one stays.</span>
          <button type="button" class="btn btn-sm btn-ghost" onClick=${() => setDraft(null)}>
            Cancel</button>
          <button type="submit" class="btn btn-sm btn-primary" data-testid="edit-send"
            disabled=${sending || draft.trim() === ""}>Send</button>
        </div>
      </form>
    `;
  }
  return html`
    <div class="msg msg-user">
      <div class="msg-bubble" data-testid="user-message">${p.turn.userMessage}</div>
    </div>
    ${h && html`
      <div class="user-tools">
        ${h.group && html`<${BranchNav} group=${h.group} onNavigate=${h.onNavigate} />`}
        <button type="button" class="link-btn" data-testid="edit-message" disabled=${h.busy}
          aria-label="Edit this message" onClick=${() => setDraft(p.turn.userMessage)}>Edit</button>
      </div>
    `}
  `;
}

export function TurnMenu(p: { turn: Turn; history: TurnHistoryProps }) {
  const [open, setOpen] = useState(false);
  const act = (f: () => void) => () => {
    setOpen(false);
    f();
  };
  // Light dismiss: focus leaving the menu, or Escape, closes it.
  const onFocusOut = (e: FocusEvent) => {
    const to = e.relatedTarget as Node | null;
    if (!to || !(e.currentTarget as HTMLElement).contains(to)) setOpen(false);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "Escape" && open) {
      e.stopPropagation();
      setOpen(false);
    }
  };
  return html`
    <span class="turn-menu" onFocusOut=${onFocusOut} onKeyDown=${onKeyDown}>
      <button type="button" class="icon-btn icon-btn-sm" data-testid="turn-menu"
        aria-label="Turn actions" aria-haspopup="menu" aria-expanded=${open}
        onClick=${() => setOpen(!open)}><${Icon} name="more" /></button>
      ${open && html`
        <div class="turn-menu-list" role="menu">
          <button type="button" role="menuitem" class="menu-item" data-testid="menu-regenerate"
            disabled=${p.history.busy} onClick=${act(() => p.history.onRegenerate(p.turn))}>
            Regenerate (new branch)</button>
          <button type="button" role="menuitem" class="menu-item" data-testid="menu-rewind"
            disabled=${p.history.busy} onClick=${act(() => p.history.onRewind(p.turn))}>
            Rewind to here…</button>
        </div>
      `}
    </span>
  `;
}
