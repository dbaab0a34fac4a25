/**
 * An external runner's accesses to what the product owns, for one Run [LC-6]:
 * the audit-lite rows of its capability audit (method, resource, decision,
 * code), loaded on click in the Run details. Every value is a text node.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { type Api, errorCode, type RunnerAccessRow } from "./lib/endpoints.ts";

export interface RunnerAccessListProps {
  api: Api;
  agentId: string;
  runId: string;
}

export function RunnerAccessList({ api, agentId, runId }: RunnerAccessListProps) {
  const [rows, setRows] = useState<RunnerAccessRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setRows(null);
    setError(null);
  }, [runId]);
  const load = () =>
    api.runnerAccess(agentId, runId).then(setRows, (err) => setError(errorCode(err)));
  return html`
    <section class="runner-access" data-testid="runner-access">
      ${rows === null
        ? html`
          <button type="button" class="btn btn-sm" data-testid="load-runner-access"
            onClick=${load}>Load runner access audit</button>
        `
        : html`
          <details open>
            <summary>Runner access (${rows.length})</summary>
            ${rows.length === 0
              ? html`<p class="muted small">The runner asked the product for nothing.</p>`
              : html`
                <table class="runner-access-table">
                  <thead>
                    <tr>
                      <th>Method</th>
                      <th>Resource</th>
                      <th>Decision</th>
                      <th>Code</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${rows.map((r) =>
                      html`
                        <tr data-testid="runner-access-row" data-decision=${r.decision}>
                          <td><code>${r.method}</code></td>
                          <td class="runner-access-resource">${r.resource}</td>
                          <td>${r.decision}</td>
                          <td>${r.code ?? ""}</td>
                        </tr>
                      `
                    )}
                  </tbody>
                </table>
              `}
          </details>
        `}
      ${error && html`<p class="error-text" role="alert">Runner access unavailable (${error}).</p>`}
    </section>
  `;
}
