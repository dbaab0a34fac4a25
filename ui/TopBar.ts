/**
 * The chat's top bar [UI-1]: the navigation toggle (narrow screens only), the
 * open Conversation's title with its Agent, the Models, Extensions and Tasks
 * views, and the Run details toggle. On narrow screens the buttons keep only
 * their icons (their names stay as accessible labels) so the title has room.
 */
import { html } from "htm/preact";
import { Icon } from "./Icon.ts";

export interface TopBarProps {
  title: string;
  subtitle: string | null;
  detailsOpen: boolean;
  onOpenNav(): void;
  onToggleDetails(): void;
  /** Opens the Models view [UI-7]. */
  onOpenModels?(): void;
  /** Opens the Extensions view [LC-5]. */
  onOpenExtensions?(): void;
  /** Opens the Agent's Tasks panel [UI-11]. */
  onOpenTasks?(): void;
}

export function TopBar(p: TopBarProps) {
  return html`
    <header class="topbar">
      <button type="button" class="icon-btn nav-toggle" aria-label="Open navigation"
        data-testid="open-nav" onClick=${p.onOpenNav}><${Icon} name="menu" /></button>
      <div class="topbar-title">
        <h1 data-testid="conversation-title">${p.title}</h1>
        ${p.subtitle && html`<span class="muted small">${p.subtitle}</span>`}
      </div>
      ${p.onOpenModels && html`
        <button type="button" class="btn btn-sm btn-ghost" aria-label="Models" title="Models"
          data-testid="open-models" onClick=${p.onOpenModels}>
          <${Icon} name="chip" /> <span class="hide-narrow">Models</span>
        </button>
      `}
      ${p.onOpenExtensions && html`
        <button type="button" class="btn btn-sm btn-ghost" aria-label="Extensions" title="Extensions"
          data-testid="open-extensions" onClick=${p.onOpenExtensions}>
          <${Icon} name="plug" /> <span class="hide-narrow">Extensions</span>
        </button>
      `}
      ${p.onOpenTasks && html`
        <button type="button" class="btn btn-sm btn-ghost" aria-label="Tasks" title="Tasks"
          data-testid="open-tasks" onClick=${p.onOpenTasks}>
          <${Icon} name="tasks" /> <span class="hide-narrow">Tasks</span>
        </button>
      `}
      <button type="button" class=${`btn btn-sm btn-ghost ${p.detailsOpen ? "active" : ""}`}
        data-testid="toggle-details" aria-pressed=${p.detailsOpen}
        aria-label=${p.detailsOpen ? "Hide run details" : "Show run details"}
        onClick=${p.onToggleDetails}>
        <${Icon} name="panel" /> <span class="hide-narrow">Run details</span>
      </button>
    </header>
  `;
}
