/**
 * The fixed composer [UI-1, UI-4]: textarea (Enter sends, Shift+Enter new
 * line), Send/Stop, the context meter, the per-Conversation model picker, a
 * "compact next turn" chip, the slash-command help panel and the last command
 * result. Slash input goes to the command endpoint, never to a Turn [SC-1].
 */
import { modelLabel, pickable } from "./lib/model_picker.ts";
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import { PermissionTable } from "./PermissionTable.ts";
import {
  AttachmentButton,
  AttachmentList,
  type AttachTarget,
  useAttachments,
  withAttachment,
} from "./AttachmentButton.ts";
import { commandMatches } from "./lib/command_input.ts";
import { sizeView } from "./lib/format.ts";
import { ContextMeter } from "./ContextMeter.ts";
import { secondsLeft } from "./lib/model_pause.ts";
import type {
  CommandDescriptor,
  CommandResult,
  ContextProjection,
  ModelProfile,
  PendingPermission,
} from "./lib/types.ts";

export interface ComposerProps {
  /** Changes when another Conversation (or Agent's empty state) gets the composer. */
  focusKey: string;
  /** Bumped when the draft was refilled from elsewhere (Retry): focus the composer again. */
  focusTick: number;
  /** False in the empty state: the first Enter creates the Conversation. */
  conversationOpen: boolean;
  draft: string;
  modelId: string | null;
  compactNext: boolean;
  models: ModelProfile[];
  /** The Agent's own default model, which a Turn without a choice uses [MB-14]. */
  agentDefaultModel?: string | null;
  projection: ContextProjection | null;
  commands: CommandDescriptor[];
  commandResult: CommandResult | null;
  /** The Agent's pending approvals, live (the /permissions result shows them as a table). */
  permissions: PendingPermission[];
  conversationTitle(id: string | null): string;
  onDecide(id: string, decision: "approve" | "deny"): Promise<void>;
  activeRunId: string | null;
  /** The model is paused by the circuit until this time (ms): Send waits, a countdown shows. */
  pausedUntil: number | null;
  sending: boolean;
  onDraft(text: string): void;
  onModel(id: string | null): void;
  onClearCompact(): void;
  onSubmit(text: string): void;
  onStop(runId: string): void;
  onDismissResult(): void;
  /** Where attachments go (paperclip, drag-and-drop) [LC-4, UI-12]; null: none offered. */
  attach?: AttachTarget | null;
}

/** The model a Turn without a choice uses: the Agent's default, else the catalog's [MB-14]. */
function effectiveDefault(models: ModelProfile[], agentDefault: string | null) {
  const id = agentDefault ?? (models.find((m) => m.isDefault) ?? models[0])?.id ?? null;
  return { id, label: agentDefault ? "Agent default" : "default" };
}

/**
 * The picker lists each model once [#18]: the default is its own entry,
 * marked, and choosing it means "no choice" (the Turn follows the default).
 * Only a default missing from the list keeps a separate first entry.
 */
function pickerOptions(models: ModelProfile[], agentDefault: string | null) {
  const d = effectiveDefault(models, agentDefault);
  const entries = pickable(models);
  const listed = entries.some((m) => m.id === d.id);
  const options = entries.map((m) => ({
    value: m.id,
    label: m.id === d.id ? `${modelLabel(m)} (${d.label})` : modelLabel(m),
    disabled: !m.available,
  }));
  if (!listed) {
    options.unshift({
      value: "",
      label: d.id ? `${d.id} (${d.label})` : "Default model",
      disabled: false,
    });
  }
  return { options, selectedDefault: listed ? d.id! : "" };
}

export function Composer(p: ComposerProps) {
  const ref = useRef<HTMLTextAreaElement>(null);
  const [helpOpen, setHelpOpen] = useState(false);
  const size = sizeView(p.draft);
  const picker = pickerOptions(p.models, p.agentDefaultModel ?? null);
  const slash = p.draft.startsWith("/");
  const typed = slash ? p.draft.slice(1).split(" ")[0] : "";
  const matches = slash ? commandMatches(p.commands, typed) : [];
  // A stored attachment adds its path to the draft as it is then (not as it was at the drop).
  const draftNow = useRef(p.draft);
  draftNow.current = p.draft;
  const att = useAttachments(
    p.attach ?? null,
    (path) => p.onDraft(withAttachment(draftNow.current, path)),
  );
  // The message naming the stored files was sent (the draft emptied): their entries go.
  const emptyDraft = p.draft === "";
  useEffect(() => {
    if (emptyDraft) att.clearFinished();
  }, [emptyDraft]);

  // Focus the composer when a Conversation (or an empty state) opens (keyboard-first), and
  // after Retry refilled the draft, with the caret at its end.
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.focus({ preventScroll: true });
    el.setSelectionRange(el.value.length, el.value.length);
  }, [p.focusKey, p.focusTick]);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = `${Math.min(el.scrollHeight, 240)}px`;
  }, [p.draft]);

  // While the circuit pauses the model, tick once a second so the countdown moves.
  const [now, setNow] = useState(() => Date.now());
  const pauseLeft = secondsLeft(p.pausedUntil, now);
  useEffect(() => {
    if (p.pausedUntil === null || p.pausedUntil <= Date.now()) return;
    setNow(Date.now());
    const t = setInterval(() => {
      setNow(Date.now());
      if (p.pausedUntil! <= Date.now()) clearInterval(t);
    }, 1000);
    return () => clearInterval(t);
  }, [p.pausedUntil]);
  const paused = pauseLeft > 0;

  const submit = () => {
    const text = p.draft.trim();
    if (text === "" || p.sending || size.over) return;
    // A message waits while the model is paused (commands still run: they never call it).
    if (paused && !text.startsWith("/")) return;
    if (p.activeRunId !== null && !text.startsWith("/")) return;
    p.onSubmit(text);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    // Tab completes a partly typed command name to the first match.
    if (e.key === "Tab" && !e.shiftKey && slash && !p.draft.includes(" ") && matches.length > 0) {
      e.preventDefault();
      p.onDraft(`/${matches[0].name}${matches[0].args.length ? " " : ""}`);
      return;
    }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  };

  const showHelp = helpOpen || (slash && p.draft.indexOf(" ") < 0);
  return html`
    <div class="composer-wrap">
      ${p.commandResult && html`
        <section class="command-result" data-testid="command-result" aria-label="Command result">
          <header>
            <strong>${p.commandResult.title}</strong>
            <span class="muted">/${p.commandResult.command} · not sent to the model</span>
            <button type="button" class="icon-btn" aria-label="Dismiss command result"
              onClick=${p.onDismissResult}><${Icon} name="close" /></button>
          </header>
          ${p.commandResult.command === "permissions"
            ? html`
              <${PermissionTable} permissions=${p.permissions}
                conversationTitle=${p.conversationTitle} onDecide=${p.onDecide} />
            `
            : html`<dl>
            ${
              p.commandResult.lines.map((l) =>
                html`
                  <div class="kv">
                    <dt>${l.label}</dt>
                    <dd>${l.value}</dd>
                  </div>
                `
              )
            }
          </dl>`}
        </section>
      `}
      ${showHelp && html`
        <section class="command-help" data-testid="command-help" aria-label="Slash commands">
          <header><strong>Commands</strong><span class="muted">run locally, never sent to the model · Tab completes</span></header>
          <ul>
            ${(slash ? matches : p.commands).map((c) =>
              html`
                <li>
                  <button type="button" class="command-item" onClick=${() => {
                    p.onDraft(`/${c.name}${c.args.length ? " " : ""}`);
                    setHelpOpen(false);
                    ref.current?.focus();
                  }}>
                    <code>${c.usage}</code>
                    <span>${c.summary}</span>
                    ${c.aliases.length > 0 && html`<span class="muted">alias ${
                      c.aliases.map((a) => `/${a}`).join(", ")
                    }</span>`}
                    ${c.args.map((a) =>
                      html`<span class="muted">${a.name}${
                        a.required ? "" : " (optional)"
                      }: ${a.description}</span>`
                    )}
                  </button>
                </li>
              `
            )}
            ${slash && matches.length === 0 &&
              html`<li class="muted">No command matches /${typed}</li>`}
          </ul>
        </section>
      `}
      <div class=${`composer${att.dragging ? " composer-drop" : ""}`} data-testid="composer"
        ...${att.dropProps}>
        <${AttachmentList} att=${att} />
        <textarea ref=${ref} class="composer-input" rows="1" value=${p.draft}
          placeholder=${p.activeRunId
            ? "Wait for the answer, or press Esc to stop…"
            : p.conversationOpen
            ? "Message the agent… ( / for commands)"
            : "Message the agent to start a new conversation…"}
          aria-label="Message" data-testid="composer-input" maxLength=${16384}
          onInput=${(e: Event) => p.onDraft((e.target as HTMLTextAreaElement).value)}
          onKeyDown=${onKeyDown}></textarea>
        <div class="composer-bar">
          <div class="composer-tools">
            <label class="model-picker">
              <span class="sr-only">Model for this conversation</span>
              <select class="select" data-testid="model-picker" value=${p.modelId ??
                picker.selectedDefault}
                onChange=${(e: Event) => {
                  const v = (e.target as HTMLSelectElement).value;
                  p.onModel(v === "" || v === picker.selectedDefault ? null : v);
                }}>
                ${picker.options.map((o) =>
                  html`<option value=${o.value} disabled=${o.disabled}>${o.label}</option>`
                )}
              </select>
            </label>
            ${p.conversationOpen && html`<${ContextMeter} projection=${p.projection} />`}
            ${paused && html`
              <span class="paused-note" data-testid="circuit-countdown" role="status">
                Model paused after repeated failures — Send in ${pauseLeft} s
              </span>
            `}
            ${size.text !== null && html`
              <span class=${`byte-count${size.over ? " over" : ""}`} data-testid="byte-count"
                role=${size.over ? "alert" : undefined}>${size.text}</span>
            `}
            ${p.compactNext && html`
              <button type="button" class="chip" onClick=${p.onClearCompact}
                aria-label="Cancel compaction for the next turn">compact next turn ×</button>
            `}
          </div>
          <div class="composer-actions">
            <${AttachmentButton} att=${att} />
            <button type="button" class="icon-btn" aria-label="Show slash commands"
              aria-expanded=${showHelp} onClick=${() =>
                setHelpOpen(!helpOpen)}><${Icon} name="help" /></button>
            ${p.activeRunId
              ? html`
                <button type="button" class="btn btn-danger" data-testid="composer-stop"
                  aria-label="Stop the active run (Esc)" onClick=${() => p.onStop(p.activeRunId!)}>
                                  <${Icon} name="stop" /> Stop</button>
              `
              : html`
                <button type="button" class="btn btn-primary" data-testid="send"
                  aria-label="Send message" disabled=${p.sending || p.draft.trim() === "" ||
                    size.over || (paused && !p.draft.trim().startsWith("/"))}
                  onClick=${submit}><${Icon} name="send" /> Send</button>
              `}
          </div>
        </div>
      </div>
    </div>
  `;
}
