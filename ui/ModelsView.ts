/**
 * The Models view [UI-7, UI-12, MB-10, MB-13]: the catalog with state, window,
 * input budget, badges (tools, thinking, chat only), the default marker and
 * the reason of an unavailable entry; refresh; pull a model by name with a
 * progress bar (native <progress>, no inline style) and cancel; delete with a
 * confirmation step. Shown in a native modal <dialog>.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Requester } from "./lib/endpoints.ts";
import { AgentResponse, ModelsResponse, PullStartedResponse } from "../runtime/protocol/api.ts";
import { parse } from "./lib/types.ts";

interface Entry {
  id: string;
  state: string;
  default: boolean;
  window: number | null;
  budget: number | null;
  capabilities: string[];
  reason: string | null;
  family: string | null;
  parameter_size: string | null;
  quantization: string | null;
}

interface PullState {
  id: string;
  name: string;
  status: string;
  completed: number | null;
  total: number | null;
  end: "succeeded" | "failed" | "cancelled" | null;
  message: string | null;
}

/** The selected Agent's model settings [MB-12, MB-14] (PATCH /api/agents/<agent>). */
export interface ModelsViewAgent {
  id: string;
  name: string;
  defaultModelId: string | null;
  reasoning: boolean;
}

export interface ModelsViewProps {
  request: Requester;
  /** The selected Agent, whose default model and reasoning this view sets. */
  agent?: ModelsViewAgent | null;
  /** The Agent's settings changed: the Agent list is read again. */
  onAgentChanged?(): void;
  onClose(): void;
  /** The catalog changed (refresh, pull, delete): the picker reads it again. */
  onChanged(): void;
}

/** The catalog, parsed with the server's schema (runtime/protocol/api.ts). */
function toEntries(v: unknown): Entry[] {
  return parse(ModelsResponse, v, "models").models.map((m) => ({ ...m, reason: m.reason ?? null }));
}

function code(err: unknown): string {
  const c = (err as { code?: unknown })?.code;
  return typeof c === "string" ? c : "unknown_error";
}

const STATE_LABEL: Record<string, string> = {
  ready: "ready",
  chat_only: "chat only",
  unsupported: "unsupported",
  unavailable: "unavailable",
};

export function ModelsView(
  { request, onClose, onChanged, agent, onAgentChanged }: ModelsViewProps,
) {
  const ref = useRef<HTMLDialogElement>(null);
  const [models, setModels] = useState<Entry[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [name, setName] = useState("");
  const [pull, setPull] = useState<PullState | null>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const stream = useRef<EventSource | null>(null);
  const [own, setOwn] = useState<{ model: string | null; reasoning: boolean } | null>(
    agent ? { model: agent.defaultModelId, reasoning: agent.reasoning } : null,
  );
  // The Agent may arrive (or change) after the view opened: a view opened before the
  // Agent list loaded never showed the Agent's settings.
  useEffect(() => {
    setOwn(agent ? { model: agent.defaultModelId, reasoning: agent.reasoning } : null);
  }, [agent?.id, agent?.defaultModelId, agent?.reasoning]);

  const patchAgent = async (patch: { default_model_id?: string | null; reasoning?: boolean }) => {
    if (!agent) return;
    setError(null);
    try {
      const r = parse(
        AgentResponse,
        await request("PATCH", `/api/agents/${encodeURIComponent(agent.id)}`, patch),
        "agent",
      );
      setOwn({ model: r.agent.default_model_id, reasoning: r.agent.reasoning });
      onAgentChanged?.();
    } catch (err) {
      setError(code(err));
    }
  };

  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => {
      stream.current?.close();
      d?.close();
    };
  }, []);

  const load = useCallback(async (how: "list" | "refresh") => {
    setBusy(true);
    setError(null);
    try {
      const r = how === "list"
        ? await request("GET", "/api/models")
        : await request("POST", "/api/models/refresh");
      setModels(toEntries(r));
      if (how === "refresh") onChanged();
    } catch (err) {
      setError(code(err));
    } finally {
      setBusy(false);
    }
  }, [request, onChanged]);
  useEffect(() => void load("list"), [load]);

  const startPull = async (ev: Event) => {
    ev.preventDefault();
    const n = name.trim();
    if (!n) return;
    setError(null);
    let id: string;
    try {
      const r = parse(
        PullStartedResponse,
        await request("POST", "/api/models/pull", { name: n }),
        "pull",
      );
      id = r.pull_id;
    } catch (err) {
      setError(code(err));
      return;
    }
    const st: PullState = {
      id,
      name: n,
      status: "starting",
      completed: null,
      total: null,
      end: null,
      message: null,
    };
    setPull(st);
    const es = new EventSource(`/api/models/pulls/${encodeURIComponent(id)}/events`);
    stream.current = es;
    const on = (kind: string, fn: (d: Record<string, unknown>) => Partial<PullState>) =>
      es.addEventListener(kind, (e) => {
        let d: Record<string, unknown> = {};
        try {
          d = JSON.parse((e as MessageEvent).data);
        } catch { /* ignore a malformed frame */ }
        setPull((p) => p && p.id === id ? { ...p, ...fn(d) } : p);
        if (kind !== "pull.progress") {
          es.close();
          if (kind === "pull.succeeded") {
            setName("");
            void load("list");
            onChanged();
          }
        }
      });
    on("pull.progress", (d) => ({
      status: typeof d.status === "string" ? d.status : "pulling",
      completed: typeof d.completed === "number" ? d.completed : null,
      total: typeof d.total === "number" ? d.total : null,
    }));
    on("pull.succeeded", () => ({ end: "succeeded", status: "done" }));
    on("pull.failed", (d) => ({
      end: "failed",
      message: typeof d.message === "string" ? d.message : "The pull failed.",
    }));
    on("pull.cancelled", () => ({ end: "cancelled" }));
  };

  const cancelPull = async () => {
    if (!pull) return;
    try {
      await request("POST", `/api/models/pulls/${encodeURIComponent(pull.id)}/cancel`);
    } catch (err) {
      setError(code(err));
    }
  };

  const remove = async (id: string) => {
    setConfirm(null);
    setError(null);
    try {
      setModels(toEntries(await request("DELETE", `/api/models/${encodeURIComponent(id)}`)));
      onChanged();
    } catch (err) {
      setError(code(err));
    }
  };

  const percent = pull && pull.total ? Math.floor(100 * (pull.completed ?? 0) / pull.total) : null;
  return html`
    <dialog ref=${ref} class="dialog dialog-wide" aria-labelledby="models-title"
      data-testid="models-view" onClose=${onClose} onCancel=${onClose}>
      <div class="dialog-body">
        <div class="models-head">
          <h2 id="models-title" class="dialog-title">Models</h2>
          <button type="button" class="btn btn-sm" data-testid="models-refresh" disabled=${busy}
            onClick=${() => load("refresh")}>Refresh</button>
        </div>
        ${error && html`<p class="models-error" role="alert" data-testid="models-error">
          <code class="pill">${error}</code></p>`}
        <table class="models-table" data-testid="models-table">
          <thead><tr><th>Model</th><th>State</th><th>Window</th><th>Input budget</th>
            <th>Capabilities</th><th></th></tr></thead>
          <tbody>
            ${models.map((m) =>
              html`
                <tr data-testid="model-row" data-model=${m.id} data-state=${m.state}>
                  <td><span class="model-name">${m.id}</span>
                    ${m.default && html`
                      <span class="badge badge-default" data-testid="default-badge">default</span>
                    `}
                    <div class="muted small">${[m.family, m.parameter_size, m.quantization].filter(
                      Boolean,
                    )
                      .join(" · ")}</div></td>
                  <td><span class=${`state state-${m.state}`}>${STATE_LABEL[m.state] ??
                    m.state}</span>
                    ${m.reason && html`
                      <code class="pill">${m.reason}</code>
                    `}</td>
                  <td>${m.window ?? "—"}</td>
                  <td>${m.budget ?? "—"}</td>
                  <td>${m.capabilities.includes("tools") && html`
                    <span class="badge">tools</span>
                  `}
                    ${m.capabilities.includes("thinking") &&
                      html`<span class="badge">thinking</span>`}</td>
                  <td>${confirm === m.id
                    ? html`
                      <button type="button" class="btn btn-sm btn-danger" data-testid="model-delete-confirm"
                        onClick=${() => remove(m.id)}>Delete ${m.id}?</button>
                      <button type="button" class="btn btn-sm" onClick=${() =>
                        setConfirm(null)}>Keep</button>
                    `
                    : html`
                      <button type="button" class="btn btn-sm btn-ghost" data-testid="model-delete"
                        aria-label=${`Delete ${m.id}`} onClick=${() =>
                          setConfirm(m.id)}>Delete</button>
                    `}</td>
                </tr>
              `
            )}
          </tbody>
        </table>
        ${agent && own && html`
          <div class="models-agent" data-testid="models-agent">
            <span class="small"><strong>${agent.name}</strong>: default model${" "}</span>
            <select class="select" data-testid="agent-default-model-select"
              aria-label=${`Default model of ${agent.name}`} value=${own.model ?? ""}
              onChange=${(e: Event) =>
                patchAgent({ default_model_id: (e.target as HTMLSelectElement).value || null })}>
              <option value="">catalog default</option>
              ${models.filter((m) => m.state === "ready" || m.state === "chat_only").map((m) =>
                html`<option value=${m.id}>${m.id}</option>`
              )}
            </select>
            <label class="small models-reasoning">
              <input type="checkbox" data-testid="agent-reasoning-toggle" checked=${own.reasoning}
                onChange=${(e: Event) =>
                  patchAgent({ reasoning: (e.target as HTMLInputElement).checked })} />
              ${" "}Reasoning (thinking models)
            </label>
          </div>
        `}
        <form class="models-pull" onSubmit=${startPull}>
          <label class="sr-only" for="pull-name">Model to pull</label>
          <input id="pull-name" class="input" data-testid="pull-name" placeholder="e.g. llama3.2:3b"
            value=${name} onInput=${(e: Event) => setName((e.target as HTMLInputElement).value)}
            disabled=${pull !== null && pull.end === null} />
          <button type="submit" class="btn btn-primary btn-sm" data-testid="pull-start"
            disabled=${pull !== null && pull.end === null}>Pull</button>
        </form>
        ${pull && html`
          <div class="pull-progress" data-testid="pull-progress" data-end=${pull.end ?? "running"}>
            <div class="small"><strong>${pull.name}</strong> — ${pull.end === "failed"
              ? html`failed: <span data-testid="pull-message">${pull.message}</span>`
              : pull.end === "cancelled"
              ? "cancelled"
              : pull.end === "succeeded"
              ? "pulled"
              : `${pull.status}${percent !== null ? ` ${percent}%` : ""}`}</div>
            <progress data-testid="pull-bar" max=${pull.total ?? 1}
              value=${pull.end === "succeeded"
                ? (pull.total ?? 1)
                : pull.completed ?? 0}></progress>
            ${pull.end === null && html`
              <button type="button" class="btn btn-sm" data-testid="pull-cancel"
                onClick=${cancelPull}>Cancel</button>
            `}
          </div>
        `}
        <div class="dialog-actions">
          <button type="button" class="btn" data-testid="models-close" onClick=${onClose}>Close</button>
        </div>
      </div>
    </dialog>
  `;
}
