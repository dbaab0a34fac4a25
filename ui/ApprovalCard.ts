/**
 * A pending tool approval inline above the composer [UI-4, TL-2]: the tool,
 * its bounded preview and diff as text, and Approve / Deny of this existing
 * pending id only.
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ChangeSetView } from "./ChangeSetView.ts";
import { DiffText } from "./DiffText.ts";
import { parsePlace } from "./lib/route.ts";
import type { PendingPermission } from "./lib/types.ts";

export interface ApprovalCardProps {
  permission: PendingPermission;
  onDecide(id: string, decision: "approve" | "deny"): Promise<void>;
}

export function ApprovalCard({ permission, onDecide }: ApprovalCardProps) {
  const [busy, setBusy] = useState(false);
  const agentId = parsePlace(location.hash).agentId;
  const decide = async (d: "approve" | "deny") => {
    setBusy(true);
    try {
      await onDecide(permission.id, d);
    } finally {
      setBusy(false);
    }
  };
  return html`
    <section class="approval" data-testid="approval" aria-label=${`Approval for ${permission.tool}`}>
      <header><strong>Approval needed</strong> <code class="pill">${permission.tool}</code></header>
      ${permission.tool === "exec/apply" && permission.runId && agentId &&
          // A background Task's change set is not the Run's: its preview says so [EX-6].
          !/^Apply \d+ path\(s\) of the change set of Task /.test(permission.preview)
        // The whole change set, every path and diff, not only the bounded preview [EX-5].
        ? html`<${ChangeSetView} agentId=${agentId} runId=${permission.runId} callId=${null} />`
        : permission.preview && html`<${DiffText} text=${permission.preview} />`}
      ${permission.diff && html`<${DiffText} text=${permission.diff} />`}
      <div class="approval-actions">
        <button type="button" class="btn btn-ghost" disabled=${busy} onClick=${() =>
          decide("deny")}>Deny</button>
        <button type="button" class="btn btn-primary" disabled=${busy} onClick=${() =>
          decide("approve")}>Approve</button>
      </div>
    </section>
  `;
}
