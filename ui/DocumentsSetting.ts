/**
 * The Agent's documents setting in its settings [LC-4]: whether its Runs are
 * offered document/extract_text, changed with PATCH /api/agents/<agent>
 * {documents}. A Run already running keeps the ToolSet it was admitted with,
 * but its calls after the change are refused (docs/documents.md), which the
 * note says.
 */
import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { errorCode, type Requester } from "./lib/endpoints.ts";
import { describeError } from "./lib/messages.ts";

export interface DocumentsSettingProps {
  request: Requester;
  agentId: string;
  documents: boolean;
  onChanged?(): void;
}

export function DocumentsSetting(
  { request, agentId, documents, onChanged }: DocumentsSettingProps,
) {
  const [on, setOn] = useState(documents);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setOn(documents), [documents, agentId]);
  const change = async (next: boolean) => {
    setBusy(true);
    setError(null);
    try {
      await request("PATCH", `/api/agents/${encodeURIComponent(agentId)}`, { documents: next });
      setOn(next);
      onChanged?.();
    } catch (err) {
      setError(describeError(errorCode(err)));
    } finally {
      setBusy(false);
    }
  };
  return html`
    <div class="kv" data-testid="documents-setting">
      <dt><label for="documents-toggle">Documents</label></dt>
      <dd>
        <label class="small">
          <input id="documents-toggle" type="checkbox" data-testid="documents-toggle"
            checked=${on} disabled=${busy}
            onChange=${(e: Event) => change((e.target as HTMLInputElement).checked)} />
          ${on
            ? " on — the model may extract text from PDF, DOCX and HTML files in the sandbox"
            : " off — document/extract_text is not offered"}
        </label>
        ${error && html`<p class="error-text" role="status">${error}</p>`}
      </dd>
    </div>
  `;
}
