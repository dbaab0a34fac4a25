/** The pending approvals of the open Conversation, stacked above the composer [UI-4]. */
import { html } from "htm/preact";
import { ApprovalCard, type ApprovalDecision } from "./ApprovalCard.ts";
import type { PendingPermission } from "./lib/types.ts";

export interface ApprovalListProps {
  permissions: PendingPermission[];
  onDecide(id: string, decision: ApprovalDecision): Promise<void>;
}

export function ApprovalList({ permissions, onDecide }: ApprovalListProps) {
  if (permissions.length === 0) return null;
  return html`
    <div class="approvals" role="region" aria-label="Pending approvals">
      ${permissions.map((p) =>
        html`<${ApprovalCard} key=${p.id} permission=${p} onDecide=${onDecide} />`
      )}
    </div>
  `;
}
