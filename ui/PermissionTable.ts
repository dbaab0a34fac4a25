/**
 * The `/permissions` result as a table [TL-2, #18]: the Agent's pending
 * approvals — tool, where (Conversation title), what (the preview's first
 * line) — with Approve/Deny, folded live from the durable list and the Run
 * streams, so a decision made here or elsewhere removes its row at once.
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import type { ApprovalDecision } from "./ApprovalCard.ts";
import { type PendingPermission, ruleScope } from "./lib/types.ts";

export interface PermissionTableProps {
  permissions: PendingPermission[];
  conversationTitle(id: string | null): string;
  /** "always": approve and add the approval's narrowed allow rule [TL-10]. */
  onDecide(id: string, decision: ApprovalDecision): Promise<void>;
}

/** What the change is about: the diff's target path, else the preview's first line. */
function previewLine(preview: string): string {
  const lines = preview.split("\n");
  const target = lines.find((l) => l.startsWith("+++ "));
  if (target) return target.slice(4).replace(/^b\//, "").replace(/^"(.*)"$/, "$1");
  return lines.find((l) => l.trim() !== "") ?? "";
}

export function PermissionTable(p: PermissionTableProps) {
  const [busy, setBusy] = useState<string | null>(null);
  const decide = async (id: string, d: ApprovalDecision) => {
    setBusy(id);
    try {
      await p.onDecide(id, d);
    } finally {
      setBusy(null);
    }
  };
  if (p.permissions.length === 0) {
    return html`<p class="muted" data-testid="permissions-empty">No approval is pending.</p>`;
  }
  return html`
    <table class="perm-table" data-testid="permissions-table">
      <thead>
        <tr>
          <th>Tool</th>
          <th>Conversation</th>
          <th>Change</th>
          <th><span class="sr-only">Decision</span></th>
        </tr>
      </thead>
      <tbody>
        ${p.permissions.map((x) =>
          html`
            <tr key=${x.id} data-testid="permission-row">
              <td><code>${x.tool}</code></td>
              <td>${p.conversationTitle(x.conversationId)}</td>
              <td class="perm-preview">${previewLine(x.preview)}</td>
              <td class="perm-actions">
                <button type="button" class="btn btn-sm btn-ghost" disabled=${busy === x.id}
                  onClick=${() => decide(x.id, "deny")}>Deny</button>
                ${x.alwaysAllow && html`
                  <button type="button" class="btn btn-sm" disabled=${busy === x.id}
                    data-testid="permission-always"
                    title=${`Approve, and from now on allow ${ruleScope(x.alwaysAllow)}`}
                    onClick=${() => decide(x.id, "always")}>Always allow</button>
                `}
                <button type="button" class="btn btn-sm btn-primary" disabled=${busy === x.id}
                  onClick=${() => decide(x.id, "approve")}>Approve</button>
              </td>
            </tr>
          `
        )}
      </tbody>
    </table>
  `;
}
