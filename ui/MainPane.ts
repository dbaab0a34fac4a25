/**
 * The centre column below the top bar [UI-1, UI-4]: with a Conversation open,
 * its Turns, the inline approvals of its Runs and the composer; with none open,
 * the empty state above the same composer, so the first message can be typed
 * at once (its Enter creates the Conversation).
 */
import { html } from "htm/preact";
import { ApprovalList } from "./ApprovalList.ts";
import { ChatView } from "./ChatView.ts";
import { Composer, type ComposerProps } from "./Composer.ts";
import { EmptyMain } from "./EmptyMain.ts";
import { RunnerNotice } from "./RunnerNotice.ts";
import type { ConversationState } from "./lib/use_conversation.ts";
import type { HistoryActions } from "./lib/use_history_actions.ts";
import type { RunView } from "./lib/run_store.ts";
import type { MarkdownRenderer } from "./lib/sanitize.ts";
import type { EventEnvelope, PendingPermission } from "./lib/types.ts";

export interface MainPaneProps {
  agentId: string | null;
  agentName: string | null;
  /** The Agent's external ACP runner, if bound [LC-6]. */
  agentRunner?: string | null;
  convId: string | null;
  conversation: ConversationState;
  approvals: PendingPermission[];
  /** Every Run view held, by run id (a new Map whenever a live Run changed). */
  runs: ReadonlyMap<string, RunView>;
  /** Replayed journals of ended Runs, by run id. */
  records: ReadonlyMap<string, readonly EventEnvelope[]>;
  renderer: MarkdownRenderer;
  composer: Omit<ComposerProps, "focusKey" | "projection">;
  onCreateConversation(): void;
  onDecide(id: string, decision: "approve" | "deny"): Promise<void>;
  onStop(runId: string): void;
  onReconnect(runId: string): void;
  onRetry(message: string): void;
  onDetails(runId: string): void;
  /** Edit, regenerate, branch navigation and rewind [UI-8, TL-11]. */
  history?: HistoryActions;
}

export function MainPane(p: MainPaneProps) {
  const composer = html`
    <${Composer} ...${p.composer} focusKey=${p.convId ?? `agent:${p.agentId ?? ""}`}
      projection=${p.convId ? p.conversation.projection : null} />
  `;
  const notice = p.agentRunner ? html`<${RunnerNotice} runner=${p.agentRunner} />` : null;
  if (!p.convId) {
    return html`
      ${notice}
      <${EmptyMain} agentName=${p.agentName} onCreateConversation=${p.onCreateConversation} />
      ${p.agentId && composer}
    `;
  }
  const awaiting = new Set(p.approvals.map((a) => a.runId).filter((r) => r !== null));
  return html`
    ${notice}
    <${ChatView} conversationId=${p.convId} turns=${p.conversation.turns}
      loaded=${p.conversation.loaded} loadError=${p.conversation.loadError}
      hasOlder=${p.conversation.hasOlder} loadingOlder=${p.conversation.loadingOlder}
      runs=${p.runs} records=${p.records} renderer=${p.renderer} awaitingRuns=${awaiting}
      onLoadOlder=${p.conversation.loadOlder} onStop=${p.onStop} onReconnect=${p.onReconnect}
      onRetry=${p.onRetry} onDetails=${p.onDetails} history=${p.history} />
    <${ApprovalList} permissions=${p.approvals} onDecide=${p.onDecide} />
    ${composer}
  `;
}
