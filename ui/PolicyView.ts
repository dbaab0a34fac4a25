/**
 * The Agent's policy [TL-9, TL-10] as a tab of the Agent panel: every tool of
 * the Agent's catalog (built-ins, its MCP tools, and the exec/command and
 * MCP-server forms its rules name) with the effective decision and why
 * (platform deny, Agent rule, default), the narrower rules that apply to it;
 * the Agent's rules with add / change / remove (each change is one PUT of the
 * whole list, refused whole with its code); the platform's own denies; and
 * the newest audited changes (an "Always allow" shows as such, revocable
 * here like any rule). Server text is rendered as text, never HTML.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import type { PolicyResponseJson } from "../runtime/protocol/api.ts";
import type { Api } from "./lib/endpoints.ts";
import { type PolicyRule, ruleScope } from "./lib/types.ts";

export interface PolicyViewProps {
  api: Api;
  agentId: string;
}

type Decision = PolicyRule["decision"];
const DECISIONS: Decision[] = ["allow", "ask", "deny"];

function code(err: unknown): string {
  const c = (err as { code?: unknown })?.code;
  return typeof c === "string" ? c : "unknown_error";
}

function DecisionPill({ d }: { d: Decision }) {
  return html`<span class=${`policy-pill policy-${d}`}>${d}</span>`;
}

function when(ms: number): string {
  return new Date(ms).toLocaleString();
}

export function PolicyView({ api, agentId }: PolicyViewProps) {
  const [view, setView] = useState<PolicyResponseJson | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [tool, setTool] = useState("");
  const [prefix, setPrefix] = useState("");
  const [decision, setDecision] = useState<Decision>("allow");

  const load = useCallback(async () => {
    try {
      setView(await api.getPolicy(agentId));
    } catch (err) {
      setError(code(err));
    }
  }, [api, agentId]);
  useEffect(() => void load(), [load]);

  const save = async (rules: PolicyRule[]): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      setView(await api.putPolicy(agentId, rules));
      return true;
    } catch (err) {
      setError(code(err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  if (!view) {
    return html`<div class="policy-view" data-testid="policy-view">
      ${
      error
        ? html`<p role="alert"><code class="pill">${error}</code></p>`
        : html`<p class="muted">Loading…</p>`
    }
    </div>`;
  }
  const rules = view.rules as PolicyRule[];
  const add = async (ev: Event) => {
    ev.preventDefault();
    const p = prefix.trim();
    const rule: PolicyRule = p === ""
      ? { tool: tool.trim(), decision }
      : { tool: tool.trim(), decision, path_prefix: p };
    if (await save([...rules, rule])) {
      setTool("");
      setPrefix("");
    }
  };
  const change = (i: number, d: Decision) =>
    save(rules.map((r, j) => j === i ? { ...r, decision: d } : r));
  const remove = (i: number) => save(rules.filter((_, j) => j !== i));
  const toolIds = view.tools.filter((t) => t.kind === "tool").map((t) => t.tool);

  return html`
    <div class="policy-view" data-testid="policy-view">
      <p class="muted small">
        What decides each call: a platform deny first, then the strictest matching rule of this
        Agent (deny over ask over allow), else the tool's default. A rule limited to a directory
        allows a call only when every path it touches is inside; a deny there refuses when any is.
      </p>

      <h3 class="policy-h">Rules of this Agent (${rules.length} / ${view.rules_max})</h3>
      ${rules.length === 0 && html`<p class="muted" data-testid="policy-rules-empty">
        No rules: every tool has its default.</p>`}
      ${rules.length > 0 && html`
        <table class="models-table" data-testid="policy-rules">
          <thead>
            <tr>
              <th>Applies to</th>
              <th>Decision</th>
              <th><span class="sr-only">Remove</span></th>
            </tr>
          </thead>
          <tbody>
            ${rules.map((r, i) =>
              html`
                <tr key=${`${r.tool} ${r.path_prefix ?? ""}`} data-testid="policy-rule"
                  data-rule=${ruleScope(r)}>
                  <td><code>${ruleScope(r)}</code></td>
                  <td>
                    <select class="select" aria-label=${`Decision for ${
                      ruleScope(r)
                    }`} disabled=${busy}
                      value=${r.decision} onChange=${(e: Event) =>
                        change(i, (e.target as HTMLSelectElement).value as Decision)}>
                      ${DECISIONS.map((d) => html`<option value=${d}>${d}</option>`)}
                    </select>
                  </td>
                  <td>
                    <button type="button" class="btn btn-sm btn-ghost" disabled=${busy}
                      data-testid="policy-rule-remove" aria-label=${`Remove rule ${ruleScope(r)}`}
                      onClick=${() => remove(i)}>Remove</button>
                  </td>
                </tr>
              `
            )}
          </tbody>
        </table>
      `}

      ${error && html`<p class="models-error" role="alert" data-testid="policy-error">
        Refused: <code class="pill">${error}</code> — nothing was changed.</p>`}
      <form class="policy-add" onSubmit=${add} data-testid="policy-add">
        <label class="small">Tool
          <input class="input" list="policy-tool-ids" required value=${tool} placeholder="file/write, exec/command:git, mcp/server/*"
            data-testid="policy-add-tool"
            onInput=${(e: Event) => setTool((e.target as HTMLInputElement).value)} />
        </label>
        <datalist id="policy-tool-ids">
          ${toolIds.map((id) => html`<option value=${id} />`)}
          <option value="exec/command:git" />
        </datalist>
        <label class="small">Directory (optional)
          <input class="input" value=${prefix} placeholder="src/lib" data-testid="policy-add-prefix"
            onInput=${(e: Event) => setPrefix((e.target as HTMLInputElement).value)} />
        </label>
        <label class="small">Decision
          <select class="select" value=${decision} data-testid="policy-add-decision"
            onChange=${(e: Event) =>
              setDecision((e.target as HTMLSelectElement).value as Decision)}>
            ${DECISIONS.map((d) => html`<option value=${d}>${d}</option>`)}
          </select>
        </label>
        <button type="submit" class="btn btn-primary btn-sm" disabled=${busy}
          data-testid="policy-add-submit">Add rule</button>
      </form>

      <h3 class="policy-h">Tools</h3>
      <table class="models-table policy-tools" data-testid="policy-tools">
        <thead>
          <tr><th>Tool</th><th>Decision</th><th>Why</th></tr>
        </thead>
        <tbody>
          ${view.tools.map((t) =>
            html`
              <tr key=${t.tool} data-testid="policy-tool" data-tool=${t.tool}
                data-decision=${t.decision}>
                <td><code>${t.tool}</code>
                  <div class="muted small">${t.description}</div></td>
                <td>
                  <${DecisionPill} d=${t.decision} />
                </td>
                <td>
                  <span class="policy-reason">${t.reason}</span>
                  <div class="muted small">${t.why}</div>
                  ${t.scoped.map((s) =>
                    html`<div class="small policy-scoped" data-testid="policy-scoped">
                      <${DecisionPill} d=${s.decision} /> ${s.scope}${" "}
                      <span class="muted">(${s.reason})</span></div>`
                  )}
                </td>
              </tr>
            `
          )}
        </tbody>
      </table>

      <h3 class="policy-h">Platform denies (cannot be relaxed)</h3>
      <ul class="policy-platform small" data-testid="policy-platform">
        ${view.platform.map((p) => html`<li><code>${p.scope}</code> — ${p.reason}</li>`)}
      </ul>

      <h3 class="policy-h">Recent changes</h3>
      ${view.audit.length === 0 && html`<p class="muted small">No change yet.</p>`}
      <ul class="policy-audit small" data-testid="policy-audit">
        ${view.audit.map((a) =>
          html`<li data-testid="policy-audit-entry" data-source=${a.source}>
            ${when(a.at)} · ${a.source === "always_allow" ? "Always allow" : "edited"}
            ${
            a.added.map((r) =>
              html`
                <span class="policy-added">+ ${r.decision} ${ruleScope(r)}</span>
              `
            )
          }
            ${
            a.removed.map((r) =>
              html`
                <span class="policy-removed">− ${r.decision} ${ruleScope(r)}</span>
              `
            )
          }
          </li>`
        )}
      </ul>
    </div>
  `;
}
