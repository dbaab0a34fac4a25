/**
 * The Extensions view [LC-5]: the operator's MCP servers with their state,
 * the fixed code of a failure, the pinned address, the offered tools (policy
 * `ask`, escaped descriptions) and the refused ones with their reasons; add a
 * server by name and URL, refresh, remove (with a confirmation step); and the
 * selected Agent's enablement (default none). Every text from a server is
 * rendered as text (never HTML). Shown in a native modal <dialog>.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Requester } from "./lib/endpoints.ts";
import {
  EnabledExtensionsResponse,
  ExtensionResponse,
  ExtensionsResponse,
  type ExtensionView,
} from "../runtime/protocol/api.ts";
import { parse } from "./lib/types.ts";

export interface ExtensionsViewProps {
  request: Requester;
  /** The selected Agent, whose enabled servers this view sets. */
  agent?: { id: string; name: string } | null;
  onClose(): void;
}

function code(err: unknown): string {
  const c = (err as { code?: unknown })?.code;
  return typeof c === "string" ? c : "unknown_error";
}

export function ExtensionsView({ request, agent, onClose }: ExtensionsViewProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [servers, setServers] = useState<ExtensionView[]>([]);
  const [enabled, setEnabled] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [confirm, setConfirm] = useState<string | null>(null);
  const agentPath = agent ? `/api/agents/${encodeURIComponent(agent.id)}/extensions` : null;

  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);

  const load = useCallback(async () => {
    setError(null);
    try {
      setServers(
        parse(ExtensionsResponse, await request("GET", "/api/extensions"), "extensions")
          .extensions,
      );
      if (agentPath) {
        setEnabled(
          parse(EnabledExtensionsResponse, await request("GET", agentPath), "enabled").enabled,
        );
      }
    } catch (err) {
      setError(code(err));
    }
  }, [request, agentPath]);
  useEffect(() => void load(), [load]);
  // While a server is discovering, look again (states only move forward).
  useEffect(() => {
    if (!servers.some((s) => s.state === "discovering")) return;
    const t = setTimeout(() => void load(), 500);
    return () => clearTimeout(t);
  }, [servers, load]);

  const add = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      parse(
        ExtensionResponse,
        await request("POST", "/api/extensions", { name: name.trim(), url: url.trim() }),
        "extension",
      );
      setName("");
      setUrl("");
      await load();
    } catch (err) {
      setError(code(err));
    } finally {
      setBusy(false);
    }
  };

  const act = async (method: "POST" | "DELETE", path: string) => {
    setBusy(true);
    setError(null);
    setConfirm(null);
    try {
      await request(method, path);
      await load();
    } catch (err) {
      setError(code(err));
    } finally {
      setBusy(false);
    }
  };

  const toggle = async (server: string, on: boolean) => {
    if (!agentPath) return;
    const next = on ? [...enabled, server] : enabled.filter((n) => n !== server);
    setError(null);
    try {
      setEnabled(
        parse(
          EnabledExtensionsResponse,
          await request("PUT", agentPath, { enabled: next }),
          "enabled",
        )
          .enabled,
      );
    } catch (err) {
      setError(code(err));
    }
  };

  return html`
    <dialog ref=${ref} class="dialog dialog-wide" aria-labelledby="extensions-title"
      data-testid="extensions-view" onClose=${onClose} onCancel=${onClose}>
      <div class="dialog-body">
        <div class="models-head">
          <h2 id="extensions-title" class="dialog-title">Extensions (MCP servers)</h2>
        </div>
        <p class="muted small">Tools of an enabled server are offered to the Agent as${" "}
          <code>mcp/server/tool</code>; every call asks for your approval. Their descriptions and
          results are untrusted text.</p>
        ${error && html`<p class="models-error" role="alert" data-testid="extensions-error">
          <code class="pill">${error}</code></p>`}
        ${servers.length === 0 && html`<p class="muted" data-testid="extensions-empty">
          No MCP server is configured.</p>`}
        ${servers.map((s) =>
          html`
            <section class="extension" data-testid="extension" data-name=${s.name} data-state=${s
              .state}>
              <div class="models-head">
                <div>
                  <strong>${s.name}</strong>${" "}
                  <span class=${`state state-${
                    s.state === "ready"
                      ? "ready"
                      : s.state === "error"
                      ? "unavailable"
                      : "chat_only"
                  }`}>
                    ${s.state}</span>
                  ${s.code && html`
                    <code class="pill" data-testid="extension-code">${s.code}</code>
                  `}
                  <div class="muted small">${s.url}${s.address
                    ? ` → ${s.address}`
                    : ""} · ${s.source === "cli" ? "from serve --mcp" : "added here"}</div>
                </div>
                <div>
                  ${agent && html`
                    <label class="small">
                      <input type="checkbox" data-testid="extension-enable"
                        checked=${enabled.includes(s.name)}
                        onChange=${(e: Event) =>
                          toggle(s.name, (e.target as HTMLInputElement).checked)} />
                      ${" "}Enabled for ${agent.name}
                    </label>
                  `}
                  <button type="button" class="btn btn-sm" data-testid="extension-refresh"
                    disabled=${busy} onClick=${() => act(
                      "POST",
                      `/api/extensions/${encodeURIComponent(s.name)}/refresh`,
                    )}>Refresh</button>
                  ${confirm === s.name
                    ? html`
                      <button type="button" class="btn btn-sm btn-danger" data-testid="extension-remove-confirm"
                        onClick=${() =>
                          act("DELETE", `/api/extensions/${encodeURIComponent(s.name)}`)}>
                        Remove ${s.name}?</button>
                      <button type="button" class="btn btn-sm" onClick=${() =>
                        setConfirm(null)}>Keep</button>
                    `
                    : html`
                      <button type="button" class="btn btn-sm btn-ghost" data-testid="extension-remove"
                        aria-label=${`Remove ${s.name}`} onClick=${() =>
                          setConfirm(s.name)}>Remove</button>
                    `}
                </div>
              </div>
              ${s.tools.length > 0 && html`
                <table class="models-table" data-testid="extension-tools">
                  <thead>
                    <tr>
                      <th>Tool</th>
                      <th>Arguments</th>
                      <th>Policy</th>
                      <th>Description (untrusted)</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${s.tools.map((t) =>
                      html`
                        <tr data-testid="extension-tool" data-tool=${t.id}>
                          <td><code>${t.id}</code></td>
                          <td class="small">${t.args.join(", ") || "—"}</td>
                          <td><span class="badge">${t.policy}</span></td>
                          <td class="small">${t.description}</td>
                        </tr>
                      `
                    )}
                  </tbody>
                </table>
              `}
              ${s.refused.length > 0 && html`
                <div class="small" data-testid="extension-refused">Refused:
                  ${s.refused.map((r) =>
                    html`
                      <span class="pill" data-testid="extension-refused-tool">${r.name}: ${r
                        .reason}</span>
                    `
                  )}
                </div>
              `}
            </section>
          `
        )}
        <form class="models-pull" onSubmit=${add}>
          <label class="sr-only" for="extension-name">Server name</label>
          <input id="extension-name" class="input" data-testid="extension-name" placeholder="name"
            value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)} />
          <label class="sr-only" for="extension-url">Server URL</label>
          <input id="extension-url" class="input" data-testid="extension-url"
            placeholder="https://host/mcp" value=${url}
            onInput=${(e: Event) => setUrl((e.target as HTMLInputElement).value)} />
          <button type="submit" class="btn btn-primary btn-sm" data-testid="extension-add"
            disabled=${busy || !name.trim() || !url.trim()}>Add</button>
        </form>
        <div class="dialog-actions">
          <button type="button" class="btn" data-testid="extensions-close" onClick=${onClose}>Close</button>
        </div>
      </div>
    </dialog>
  `;
}
