/**
 * The left navigation [UI-1, UI-5]: the Agent switcher with create / rename /
 * rebuild / delete (the system Agent is protected), and the Conversation list
 * with a per-item menu (rename / branch / delete) shown in a top-layer popover
 * anchored to its button, so it is never clipped by the scrolling list.
 */
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ConversationSearch } from "./ConversationSearch.ts";
import { Icon } from "./Icon.ts";
import { fmtRelative } from "./lib/format.ts";
import type { Agent, Conversation } from "./lib/types.ts";
import type { SearchHitJson } from "../runtime/protocol/api.ts";

export interface SidebarProps {
  agents: Agent[];
  agentId: string | null;
  conversations: Conversation[];
  conversationId: string | null;
  busyConversations: ReadonlySet<string>;
  /** Conversations with a tool approval waiting for the operator. */
  awaitingConversations: ReadonlySet<string>;
  onSelectAgent(id: string): void;
  onCreateAgent(): void;
  onRenameAgent(): void;
  /** Opens the Agent's settings (instructions) or its files [#18]. */
  onAgentPanel(tab: "settings" | "files"): void;
  onRebuildAgent(): void;
  onDeleteAgent(): void;
  onSelectConversation(id: string): void;
  onCreateConversation(): void;
  onRenameConversation(id: string): void;
  onBranchConversation(id: string): void;
  onDeleteConversation(id: string): void;
  /** Searches the selected Agent's Conversations [UI-9]; absent: no search box. */
  onSearch?(q: string): Promise<SearchHitJson[]>;
  /** Downloads a Conversation as Markdown or JSON [UI-9]. */
  onExportConversation?(id: string, format: "md" | "json"): void;
  /** Imports an exported JSON file as a new Conversation [UI-9]. */
  onImportConversation?(file: File): void;
  onLogout(): void;
}

export function Sidebar(p: SidebarProps) {
  const [menuFor, setMenuFor] = useState<string | null>(null);
  const popRef = useRef<HTMLDivElement>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const agent = p.agents.find((a) => a.id === p.agentId) ?? null;
  const unavailable = agent?.state === "unavailable";

  useEffect(() => {
    const el = popRef.current;
    if (!el) return;
    if (menuFor && !el.matches(":popover-open")) {
      el.showPopover();
      el.querySelector<HTMLButtonElement>(".menu-item")?.focus();
    }
    if (!menuFor && el.matches(":popover-open")) el.hidePopover();
  }, [menuFor]);

  // The open Conversation is always visible in the list (a long list, a reload, a pasted place).
  const listRef = useRef<HTMLUListElement>(null);
  useEffect(() => {
    const list = listRef.current;
    const item = list?.querySelector(".conv-item.active");
    if (!list || !item) return;
    // Scroll the list only (scrollIntoView could also shift the off-canvas overlay's ancestors).
    const l = list.getBoundingClientRect();
    const r = item.getBoundingClientRect();
    if (r.top < l.top) list.scrollTop += r.top - l.top;
    else if (r.bottom > l.bottom) list.scrollTop += r.bottom - l.bottom;
  }, [p.conversationId, p.conversations]);

  const act = (fn: (id: string) => void) => () => {
    const id = menuFor;
    setMenuFor(null);
    if (id) fn(id);
  };

  return html`
    <nav class="sidebar" aria-label="Agents and conversations" data-testid="sidebar">
      <div class="brand">
        <span class="brand-mark" aria-hidden="true">AB</span>
        <span class="brand-name">Agent Builder</span>
      </div>
      <section class="agent-box" aria-label="Agent">
        <label class="field">
          <span class="field-label">Agent</span>
          <select class="select" data-testid="agent-switcher" value=${p.agentId ?? ""}
            onChange=${(e: Event) => p.onSelectAgent((e.target as HTMLSelectElement).value)}>
            ${p.agents.map((a) =>
              html`<option value=${a.id}>${a.name}${a.system ? " (system)" : ""}${
                a.state === "unavailable" ? " — unavailable" : ""
              }</option>`
            )}
          </select>
        </label>
        <div class="agent-actions">
          <button type="button" class="btn btn-sm agent-new" data-testid="new-agent" onClick=${p
            .onCreateAgent}>
            <${Icon} name="plus" /> New agent</button>
          <span class="agent-spacer"></span>
          <button type="button" class="btn btn-sm btn-ghost" disabled=${!agent || unavailable}
            data-testid="agent-settings" onClick=${() =>
              p.onAgentPanel("settings")}>Settings</button>
          <button type="button" class="btn btn-sm btn-ghost" disabled=${!agent || unavailable}
            data-testid="agent-files" onClick=${() => p.onAgentPanel("files")}>Files</button>
          <button type="button" class="btn btn-sm btn-ghost" disabled=${!agent || agent.system ||
            unavailable}
            onClick=${p.onRenameAgent} title=${agent?.system
              ? "The system Agent is protected"
              : ""}>Rename</button>
          <button type="button" class="btn btn-sm btn-ghost" disabled=${!agent || agent.system ||
            unavailable}
            onClick=${p.onRebuildAgent} title="Rebuild runtime (next generation)">Rebuild</button>
          <button type="button" class="btn btn-sm btn-ghost danger-text" disabled=${!agent ||
            agent.system}
            data-testid="delete-agent" onClick=${p.onDeleteAgent}>Delete</button>
        </div>
        ${unavailable &&
          html`
            <p class="small danger-text" role="alert" data-testid="agent-unavailable">
              Unavailable (${agent?.unavailableReason ?? "unknown"}): its files failed a start-up
              check. ${agent?.system
                ? "Repair its files and restart the server."
                : "Delete it, or repair its files and restart the server."}
            </p>
          `}
        ${agent && !unavailable &&
          html`<p class="muted small">${agent.state}${
            agent.generation !== null ? ` · generation ${agent.generation}` : ""
          }</p>`}
      </section>
      <div class="conv-head">
        <h2>Conversations</h2>
        ${p.onImportConversation && agent && !unavailable &&
          html`
            <button type="button" class="btn btn-sm btn-ghost" data-testid="import-conversation"
              onClick=${() => fileRef.current?.click()}>Import</button>
            <input type="file" hidden ref=${fileRef} accept=".json,application/json"
              aria-label="Import a conversation (JSON export)"
              data-testid="import-file" onChange=${(e: Event) => {
                const input = e.target as HTMLInputElement;
                const file = input.files?.[0];
                input.value = "";
                if (file) p.onImportConversation?.(file);
              }} />
          `}
        <button type="button" class="icon-btn" data-testid="new-conversation"
          aria-label="New conversation" onClick=${p
            .onCreateConversation}><${Icon} name="plus" /></button>
      </div>
      ${p.agentId && !unavailable && p.onSearch &&
        html`
          <${ConversationSearch} key=${p.agentId} search=${p.onSearch}
            onOpen=${p.onSelectConversation} />
        `}
      <ul class="conv-list" data-testid="conversation-list" ref=${listRef}>
        ${p.conversations.length === 0 &&
          html`<li class="empty small">No conversations yet: your first message starts one.</li>`}
        ${p.conversations.map((c) =>
          html`
            <li class=${`conv-item ${c.id === p.conversationId ? "active" : ""}`}>
              <button type="button" class="conv-link" data-testid="conversation-item"
                aria-current=${c.id === p.conversationId ? "page" : undefined}
                onClick=${() => p.onSelectConversation(c.id)}>
                <span class="conv-title">${c.title}</span>
                <span class="conv-meta">
                  ${p.busyConversations.has(c.id) &&
                    html`<span class="status-dot running" aria-label="running"></span>`}
                  ${p.awaitingConversations.has(c.id) &&
                    html`
                      <span class="badge approval-badge" data-testid="needs-approval"
                      >needs approval</span>
                    `}
                  ${fmtRelative(c.updatedAt)}
                </span>
              </button>
              <button type="button" class=${`icon-btn conv-more ${
                menuFor === c.id ? "menu-anchor" : ""
              }`}
                aria-label=${`Actions for ${c.title}`} aria-haspopup="menu" data-testid="conversation-menu"
                aria-expanded=${menuFor === c.id}
                onClick=${() =>
                  setMenuFor(menuFor === c.id ? null : c.id)}><${Icon} name="more" /></button>
            </li>
          `
        )}
      </ul>
      <div class="sidebar-foot">
        <p class="muted small">Single-operator install: this browser can manage every Agent.</p>
        <button type="button" class="btn btn-sm btn-ghost" data-testid="logout" onClick=${p
          .onLogout}>
          <${Icon} name="logout" /> Log out</button>
      </div>
      <div ref=${popRef} popover="auto" class="menu-popover" role="menu"
        data-testid="conversation-popover"
        onToggle=${(e: ToggleEvent) => e.newState === "closed" && setMenuFor(null)}>
        <button type="button" role="menuitem" class="menu-item" onClick=${act(
          p.onRenameConversation,
        )}>Rename</button>
        <button type="button" role="menuitem" class="menu-item"
          onClick=${act(p.onBranchConversation)}>Branch from here</button>
        ${p.onExportConversation &&
          html`
            <button type="button" role="menuitem" class="menu-item" data-testid="menu-export-md"
              onClick=${act((id) => p.onExportConversation?.(id, "md"))}>Export Markdown</button>
            <button type="button" role="menuitem" class="menu-item" data-testid="menu-export-json"
              onClick=${act((id) => p.onExportConversation?.(id, "json"))}>Export JSON</button>
          `}
        <button type="button" role="menuitem" class="menu-item danger-text" data-testid="menu-delete"
          onClick=${act(p.onDeleteConversation)}>Delete</button>
      </div>
    </nav>
  `;
}
