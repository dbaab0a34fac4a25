/**
 * The delegate card [LC-2, UI-11]: an `agent/delegate` call inline in the
 * parent's answer — the delegate Agent, the message in full, the child Run's
 * status as the parent's `subagent.status` events tell it (its tool steps,
 * a pending approval, the end), the answer (marked when cut at 8 KiB), and a
 * link that opens the child's Conversation (`#/a/<agent>/c/<conv>`).
 * Registered with ToolCard's extension point; everything is text.
 */
import { html } from "htm/preact";
import { registerToolCardSections, type ToolCardSection } from "./ToolCard.ts";
import type { SubagentView, ToolCardModel } from "./lib/answer_blocks.ts";
import { fmtDuration } from "./lib/format.ts";
import { formatPlace } from "./lib/route.ts";

const STATE_TEXT: Record<string, string> = {
  running: "working",
  tool: "working",
  awaiting_approval: "waiting for your approval",
  approval_decided: "working",
  completed: "answered",
  failed: "failed",
  cancelled: "cancelled",
  timeout: "timed out (45 s)",
};

/** "answered in 3.2 s", "waiting for your approval" — the child's status in words. */
export function delegateStatusText(
  v: SubagentView | null | undefined,
  card: ToolCardModel,
): string {
  if (!v) {
    if (card.status === "error") return `not started (${card.code ?? "error"})`;
    if (card.status === "denied") return "not started (denied)";
    return card.status === "awaiting" ? "waiting for your approval to delegate" : "starting";
  }
  const base = STATE_TEXT[v.state] ?? v.state;
  const end = ["completed", "failed", "cancelled", "timeout"].includes(v.state);
  return end && v.elapsedMs !== null ? `${base} after ${fmtDuration(v.elapsedMs)}` : base;
}

function sections(card: ToolCardModel): ToolCardSection[] {
  const v = card.subagent ?? null;
  const target = typeof card.args.agent_id === "string" ? card.args.agent_id : "";
  const message = typeof card.args.message === "string" ? card.args.message : "";
  const out: ToolCardSection[] = [{
    title: "Delegate",
    body: html`
      <div class="delegate" data-testid="delegate-card" data-state=${v?.state ?? "none"}>
        <p class="small">
          <span data-testid="delegate-status">${delegateStatusText(v, card)}</span>
          ${" "}· ${v?.agentName
            ? html`<strong data-testid="delegate-agent">${v.agentName}</strong>`
            : html`Agent <code>${target}</code>`}
          ${v && html`${" "}· <a href=${
            formatPlace({
              agentId: v.agentId,
              conversationId: v.conversationId,
            })
          } data-testid="delegate-open">Open the delegate's conversation</a>`}
        </p>
        <h5 class="small muted">Message</h5>
        <pre class="tool-args" data-testid="delegate-message">${message}</pre>
        ${v && v.tools.length > 0 && html`
          <p class="small muted" data-testid="delegate-tools">Its tools: ${v.tools.join(", ")}</p>
        `}
        ${v?.pending && html`
          <p class="small" data-testid="delegate-pending">
            It asks to run <code>${v.pending.toolId}</code>: decide in the approval above the
            composer.
          </p>
        `}
        ${v?.code && v.state !== "completed" && html`
          <p class="small" data-testid="delegate-code"><code class="pill">${v.code}</code></p>
        `}
      </div>
    `,
  }];
  if (v?.answer !== null && v?.answer !== undefined) {
    out.push({
      title: v.truncated ? "Answer (cut at 8 KiB)" : "Answer",
      body: html`<pre class="tool-result" data-testid="delegate-answer">${v.answer}</pre>`,
    });
  } else if (card.status === "error" && card.code) {
    out.push({
      title: `Error ${card.code}`,
      body:
        html`<p class="small" data-testid="delegate-error"><code class="pill">${card.code}</code></p>`,
    });
  }
  return out;
}

registerToolCardSections("agent/delegate", {
  replaceDefaults: true,
  sections,
  // Open while the delegate works or waits, so its steps and approval are in view.
  openWhile: (card) => card.status === "running" || card.status === "awaiting",
});
