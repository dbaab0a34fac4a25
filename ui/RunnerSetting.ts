/**
 * The Agent's runner binding in its settings [LC-6]: native (the Worker and
 * the model) or one of the operator's registered ACP runners (GET
 * /api/runners), changed with PATCH /api/agents/<agent> {runner}. Lists the
 * runner's argv and the names of its environment, never their values.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { errorCode, type Requester } from "./lib/endpoints.ts";
import { describeError } from "./lib/messages.ts";
import { RunnerNotice } from "./RunnerNotice.ts";

interface RunnerInfo {
  name: string;
  argv: string[];
  env: string[];
}

export interface RunnerSettingProps {
  request: Requester;
  agentId: string;
  runner: string | null;
  onChanged?(): void;
}

export function RunnerSetting({ request, agentId, runner, onChanged }: RunnerSettingProps) {
  const [runners, setRunners] = useState<RunnerInfo[] | null>(null);
  const [current, setCurrent] = useState<string | null>(runner);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    request("GET", "/api/runners").then(
      (r) => setRunners((r as { runners: RunnerInfo[] }).runners),
      (err) => setError(describeError(errorCode(err))),
    );
  }, [agentId]);
  useEffect(() => setCurrent(runner), [runner]);
  const choose = async (value: string) => {
    const next = value === "" ? null : value;
    setError(null);
    try {
      await request("PATCH", `/api/agents/${encodeURIComponent(agentId)}`, { runner: next });
      setCurrent(next);
      onChanged?.();
    } catch (err) {
      setError(describeError(errorCode(err)));
    }
  };
  const info = runners?.find((r) => r.name === current) ?? null;
  // Nothing to choose (no runner registered, or not known yet) and not bound: no row at all.
  if ((runners === null || runners.length === 0) && current === null) return null;
  return html`
    <div class="kv runner-setting" data-testid="runner-setting">
      <dt><label for="runner-select">Runs on</label></dt>
      <dd>
        <select id="runner-select" class="input" data-testid="runner-select"
          value=${current ?? ""} disabled=${runners === null}
          onChange=${(e: Event) => choose((e.target as HTMLSelectElement).value)}>
          <option value="">Agent Builder (sandboxed Worker, local model)</option>
          ${(runners ?? []).map((r) =>
            html`<option value=${r.name}>${r.name} (ACP runner)</option>`
          )}
        </select>
        ${current !== null && html`<${RunnerNotice} runner=${current} />`}
        ${info &&
          html`
            <p class="small muted" data-testid="runner-command">
              Command: <code>${info.argv.join(" ")}</code> · environment: ${info.env.join(", ")}
            </p>
          `}
        ${error && html`<p class="error-text" role="status">${error}</p>`}
      </dd>
    </div>
  `;
}
