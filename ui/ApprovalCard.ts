/**
 * A pending tool approval inline above the composer [UI-4, TL-2]: the tool,
 * its bounded preview and diff as text, and Approve / Deny of this existing
 * pending id only. "Always allow" [TL-10] approves and adds the narrowed rule
 * the server fixed for this call (shown before the click: the tool, and the
 * directory or program it is limited to). When the ≤ 4 KiB preview was cut,
 * the full diff (≤ 256 KiB) is one click away [TL-12].
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ChangeSetView } from "./ChangeSetView.ts";
import { DiffText } from "./DiffText.ts";
import { parsePlace } from "./lib/route.ts";
import { type PendingPermission, ruleScope } from "./lib/types.ts";

/** "always" = approve and add the approval's narrowed allow rule [TL-10]. */
export type ApprovalDecision = "approve" | "deny" | "always";

export interface ApprovalCardProps {
  permission: PendingPermission;
  onDecide(id: string, decision: ApprovalDecision): Promise<void>;
}

/** The fixed marker the server appends to a cut preview (runtime/tools/mutation_plan.ts). */
const CUT_MARKER = "[preview truncated; the approval binds the full diff digest]";

function kib(n: number): string {
  return n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

async function fetchFullDiff(agentId: string, id: string): Promise<string> {
  const res = await fetch(
    `/api/agents/${encodeURIComponent(agentId)}/permissions/${encodeURIComponent(id)}/diff`,
    { credentials: "same-origin", headers: { accept: "application/json" }, cache: "no-store" },
  );
  const body = await res.json().catch(() => null);
  if (!res.ok || typeof body?.diff !== "string") {
    throw new Error(typeof body?.error?.code === "string" ? body.error.code : `HTTP ${res.status}`);
  }
  return body.diff;
}

export function ApprovalCard({ permission, onDecide }: ApprovalCardProps) {
  const [busy, setBusy] = useState(false);
  const [full, setFull] = useState<string | null>(null);
  const [fullError, setFullError] = useState<string | null>(null);
  const agentId = parsePlace(location.hash).agentId;
  const decide = async (d: ApprovalDecision) => {
    setBusy(true);
    try {
      await onDecide(permission.id, d);
    } finally {
      setBusy(false);
    }
  };
  const cut = permission.preview.trimEnd().endsWith(CUT_MARKER);
  const showFull = async () => {
    if (!agentId) return;
    setFullError(null);
    try {
      setFull(await fetchFullDiff(agentId, permission.id));
    } catch (err) {
      setFullError(err instanceof Error ? err.message : "unknown_error");
    }
  };
  const rule = permission.alwaysAllow;
  return html`
    <section class="approval" data-testid="approval" aria-label=${`Approval for ${permission.tool}`}>
      <header><strong>Approval needed</strong> <code class="pill">${permission.tool}</code></header>
      ${permission.tool === "exec/apply" && permission.runId && agentId &&
          // A background Task's change set is not the Run's: its preview says so [EX-6].
          !/^Apply \d+ path\(s\) of the change set of Task /.test(permission.preview)
        // The whole change set, every path and diff, not only the bounded preview [EX-5].
        ? html`<${ChangeSetView} agentId=${agentId} runId=${permission.runId} callId=${null} />`
        : full !== null
        ? html`
          <div class="approval-full" data-testid="approval-full-diff">
            <${DiffText} text=${full} />
          </div>
        `
        : permission.preview && html`<${DiffText} text=${permission.preview} />`}
      ${permission.diff && html`<${DiffText} text=${permission.diff} />`}
      ${cut && full === null && permission.tool !== "exec/apply" && (
        permission.fullDiffBytes !== null
          ? html`
            <button type="button" class="btn btn-sm btn-ghost" data-testid="approval-show-full"
              onClick=${showFull}>Show the full diff (${kib(permission.fullDiffBytes)})</button>
          `
          : html`<p class="muted small" data-testid="approval-full-too-large">
              The full diff is larger than 256 KiB and is not kept; the approval binds its digest.
            </p>`
      )}
      ${fullError &&
        html`<p class="muted small" role="alert">Full diff: <code>${fullError}</code></p>`}
      <div class="approval-actions">
        ${rule && html`<span class="approval-rule muted small" data-testid="approval-rule">
          Always allow adds: allow <code>${ruleScope(rule)}</code></span>`}
        <button type="button" class="btn btn-ghost" disabled=${busy} onClick=${() =>
          decide("deny")}>Deny</button>
        ${rule && html`
          <button type="button" class="btn" disabled=${busy}
            data-testid="approval-always" title=${`Approve, and from now on allow ${
              ruleScope(rule)
            }`}
            onClick=${() => decide("always")}>Always allow</button>
        `}
        <button type="button" class="btn btn-primary" disabled=${busy} onClick=${() =>
          decide("approve")}>Approve</button>
      </div>
    </section>
  `;
}
