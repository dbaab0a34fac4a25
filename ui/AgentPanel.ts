/**
 * An Agent's own page, in a wide native <dialog> [#18]: "Settings" shows the
 * Agent's default model and reasoning setting and edits its instruction file
 * `agent-builder.md` — Preview shows the exact diff the server's write path
 * would commit, Save commits it only if the file is still the one edited
 * (else `file_changed`: reload); "Files" is a read-only browser of the
 * workspace: a directory tree, one file at a time with syntax highlighting,
 * its size and modified time, and a download link; "Skills" lists, inspects,
 * installs and removes the Agent's skills (SkillsView.ts) [LC-3]. All file
 * text is text nodes.
 */
import { PolicyView } from "./PolicyView.ts";
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { DiffText } from "./DiffText.ts";
import { type Api, errorCode } from "./lib/endpoints.ts";
import { fmtRelative } from "./lib/format.ts";
import { highlight, languageOf } from "./lib/highlight.ts";
import { describeError } from "./lib/messages.ts";
import type { Agent, ModelProfile, WorkspaceEntry, WorkspaceFile } from "./lib/types.ts";
import type { Requester } from "./lib/endpoints.ts";
import { SkillsView } from "./SkillsView.ts";
import { RunnerSetting } from "./RunnerSetting.ts";
import { DocumentsSetting } from "./DocumentsSetting.ts";

export type AgentPanelTab = "settings" | "files" | "skills" | "policy";

const TAB_LABEL: Record<AgentPanelTab, string> = {
  settings: "Settings",
  files: "Files",
  skills: "Skills",
  policy: "Policy",
};

export interface AgentPanelProps {
  api: Api;
  agent: Agent;
  models: ModelProfile[];
  tab: AgentPanelTab;
  onTab(tab: AgentPanelTab): void;
  onClose(): void;
  /** The raw API door, for the Skills tab's archive upload [LC-3]. */
  request?: Requester;
  /** The Agent changed here (runner binding) [LC-6]: the caller reloads it. */
  onAgentChanged?(): void;
}

export function fmtBytes(n: number | null): string {
  if (n === null) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function Settings(
  { api, agent, models, request, onAgentChanged }: Omit<
    AgentPanelProps,
    "tab" | "onTab" | "onClose"
  >,
) {
  const [base, setBase] = useState<{ text: string; digest: string | null } | null>(null);
  const [text, setText] = useState("");
  const [diff, setDiff] = useState<string | null>(null);
  const [status, setStatus] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const load = () =>
    api.getInstructions(agent.id).then((r) => {
      setBase({ text: r.text, digest: r.digest });
      setText(r.text);
      setDiff(null);
    }, (err) => setStatus({ kind: "error", text: describeError(errorCode(err)) }));
  useEffect(() => void load(), [agent.id]);
  const send = async (dryRun: boolean) => {
    if (!base) return;
    setBusy(true);
    setStatus(null);
    try {
      const r = await api.saveInstructions(agent.id, {
        text,
        base_digest: base.digest,
        dry_run: dryRun,
      });
      setDiff(r.diff);
      if (r.committed) {
        setBase({ text, digest: r.digest });
        setStatus({ kind: "ok", text: "Saved. The next Run reads the new instructions." });
      }
    } catch (err) {
      const code = errorCode(err);
      setStatus({
        kind: "error",
        text: code === "file_changed"
          ? "The file changed since you opened it. Reload to edit the current text."
          : `${describeError(code)} (${code})`,
      });
    } finally {
      setBusy(false);
    }
  };
  const fallback = models.find((m) => m.isDefault)?.id ?? "the catalog default";
  const dirty = base !== null && text !== base.text;
  return html`
    <dl class="agent-facts" data-testid="agent-facts">
      <div class="kv">
        <dt>Default model</dt>
        <dd data-testid="agent-default-model">${agent.defaultModelId ??
          `${fallback} (catalog default)`}</dd>
      </div>
      <div class="kv">
        <dt>Reasoning</dt>
        <dd data-testid="agent-reasoning">${agent.reasoning
          ? "on (thinking models think before answering)"
          : "off"}</dd>
      </div>
      ${request &&
        html`
          <${RunnerSetting} request=${request} agentId=${agent.id} runner=${agent.runner}
            onChanged=${onAgentChanged} />
        `}
      ${request &&
        html`
          <${DocumentsSetting} request=${request} agentId=${agent.id}
            documents=${agent.documents} onChanged=${onAgentChanged} />
        `}
      <div class="kv">
        <dt>Generation</dt>
        <dd>${agent.generation ?? "—"}</dd>
      </div>
    </dl>
    <label class="field">
      <span class="field-label">Instructions — <code>agent-builder.md</code>, read at the start of
        every Run</span>
      <textarea class="input instructions-input" data-testid="instructions-input" rows="14"
        spellcheck="false" disabled=${base === null} value=${text}
        onInput=${(e: Event) => {
          setText((e.target as HTMLTextAreaElement).value);
          setDiff(null);
        }}></textarea>
    </label>
    ${diff !== null && html`
      <section class="instructions-diff">
        <h4>Changes</h4>
        ${diff === "" ? html`<p class="muted">No changes.</p>` : html`
          <${DiffText} text=${diff}
            testId="instructions-diff" />
        `}
      </section>
    `}
    ${status &&
      html`
        <p class=${status.kind === "ok" ? "ok-text" : "error-text"} role="status"
          data-testid="instructions-status">${status.text}</p>
      `}
    <div class="dialog-actions">
      <button type="button" class="btn btn-ghost" onClick=${load}
        disabled=${busy}>Reload</button>
      <button type="button" class="btn" data-testid="instructions-preview"
        disabled=${busy || !dirty} onClick=${() => send(true)}>Preview changes</button>
      <button type="button" class="btn btn-primary" data-testid="instructions-save"
        disabled=${busy || !dirty} onClick=${() => send(false)}>Save</button>
    </div>
  `;
}

function Tree(
  { api, agentId, path, depth, selected, onOpen }: {
    api: Api;
    agentId: string;
    path: string;
    depth: number;
    selected: string | null;
    onOpen(path: string): void;
  },
) {
  const [entries, setEntries] = useState<WorkspaceEntry[] | null>(null);
  const [truncated, setTruncated] = useState(false);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api.listWorkspace(agentId, path).then(
      (r) => (setEntries(r.entries), setTruncated(r.truncated)),
      (err) => setError(errorCode(err)),
    );
  }, [agentId, path]);
  if (error) return html`<p class="error-text small">Cannot list: <code>${error}</code></p>`;
  if (!entries) return html`<p class="muted small">Loading…</p>`;
  const join = (n: string) => path === "." ? n : `${path}/${n}`;
  return html`
    <ul class=${depth === 0 ? "ws-tree" : "ws-subtree"} role=${depth === 0 ? "tree" : "group"}>
      ${entries.length === 0 && html`<li class="muted small">Empty</li>`}
      ${entries.map((e) => {
        const p = join(e.name);
        const isOpen = open.has(p);
        return html`<li key=${p} role="treeitem" aria-expanded=${
          e.kind === "directory" ? String(isOpen) : undefined
        }>
            <button type="button" class=${`ws-entry ws-${e.kind} ${selected === p ? "active" : ""}`}
              data-testid="ws-entry" data-path=${p} disabled=${e.kind === "other"}
              onClick=${() => {
          if (e.kind === "file") onOpen(p);
          else if (e.kind === "directory") {
            setOpen((cur) => {
              const n = new Set(cur);
              if (n.has(p)) n.delete(p);
              else n.add(p);
              return n;
            });
          }
        }}>
              <span class="ws-icon" aria-hidden="true">${
          e.kind === "directory" ? (isOpen ? "▾" : "▸") : e.kind === "file" ? "·" : "?"
        }</span>
              <span class="ws-name">${e.name}</span>
              ${e.kind === "file" && html`<span class="ws-size muted">${fmtBytes(e.size)}</span>`}
            </button>
            ${
          isOpen && html`
            <${Tree} api=${api} agentId=${agentId} path=${p} depth=${depth + 1}
              selected=${selected} onOpen=${onOpen} />
          `
        }
          </li>`;
      })}
      ${truncated && html`<li class="muted small">Only the first entries are shown.</li>`}
    </ul>
  `;
}

function Files({ api, agent }: { api: Api; agent: Agent }) {
  const [selected, setSelected] = useState<string | null>(null);
  const [file, setFile] = useState<WorkspaceFile | null>(null);
  const [error, setError] = useState<string | null>(null);
  const latest = useRef<string | null>(null);
  const openFile = (p: string) => {
    setSelected(p);
    setError(null);
    latest.current = p;
    api.readWorkspaceFile(agent.id, p).then(
      (f) => latest.current === p && setFile(f),
      (err) => latest.current === p && (setFile(null), setError(errorCode(err))),
    );
  };
  const href = (p: string) =>
    `/api/agents/${encodeURIComponent(agent.id)}/workspace/file?path=${
      encodeURIComponent(p)
    }&download=1`;
  return html`
    <div class="ws-browser" data-testid="workspace-browser">
      <nav class="ws-side" aria-label="Workspace files">
        <${Tree} api=${api} agentId=${agent.id} path="." depth=${0} selected=${selected}
          onOpen=${openFile} />
      </nav>
      <section class="ws-view" aria-live="polite">
        ${!selected && html`<p class="muted">Choose a file to see it. This view is read-only.</p>`}
        ${error && html`<p class="error-text">Cannot open it: ${describeError(error)}
          <code class="pill">${error}</code></p>`}
        ${file && selected === file.path && html`
          <header class="ws-file-head">
            <strong class="ws-file-name" data-testid="ws-file-name">${file.path}</strong>
            <span class="muted" data-testid="ws-file-meta">${[
              fmtBytes(file.size),
              file.modifiedMs !== null && " · modified ",
              file.modifiedMs !== null &&
              html`<time title=${new Date(file.modifiedMs).toLocaleString()}>${
                fmtRelative(file.modifiedMs)
              }</time>`,
            ]}</span>
            <a class="btn btn-sm" href=${href(
              file.path,
            )} download data-testid="ws-download">Download</a>
          </header>
          ${file.text === null
            ? html`<p class="muted">Binary file: download it to open it.</p>`
            : html`<pre class="ws-code" data-testid="ws-file-text">${
              highlight(file.text, languageOf(file.path)).map((t) =>
                t.kind === "plain" ? t.text : html`<span class=${`tok-${t.kind}`}>${t.text}</span>`
              )
            }</pre>`}
        `}
      </section>
    </div>
  `;
}

export function AgentPanel(p: AgentPanelProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return html`
    <dialog ref=${ref} class="dialog dialog-wide agent-panel" aria-labelledby="agent-panel-title"
      data-testid="agent-panel" onClose=${p.onClose} onCancel=${p.onClose}>
      <div class="dialog-body">
        <div class="models-head">
          <h2 id="agent-panel-title" class="dialog-title">${p.agent.name}</h2>
          <button type="button" class="icon-btn" aria-label="Close" onClick=${p.onClose}>✕</button>
        </div>
        <div class="tabs" role="tablist">
          ${(["settings", "files", ...(p.request ? ["skills" as const] : []), "policy"] as const)
            .map((t) =>
              html`
                <button type="button" role="tab" aria-selected=${String(p.tab === t)}
                  class=${`tab ${p.tab === t ? "active" : ""}`} data-testid=${`agent-tab-${t}`}
                  onClick=${() => p.onTab(t)}>${TAB_LABEL[t]}</button>
              `
            )}
        </div>
        ${p.tab === "settings"
          ? html`
            <${Settings} api=${p.api} agent=${p.agent} models=${p.models}
              request=${p.request} onAgentChanged=${p.onAgentChanged} />
          `
          : p.tab === "skills" && p.request
          ? html`<${SkillsView} request=${p.request} agent=${p.agent} />`
          : p.tab === "policy"
          ? html`<${PolicyView} api=${p.api} agentId=${p.agent.id} />`
          : html`<${Files} api=${p.api} agent=${p.agent} />`}
      </div>
    </dialog>
  `;
}
