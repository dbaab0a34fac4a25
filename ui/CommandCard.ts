/**
 * The exec tools' sections of a tool card [UI-10, EX-2, EX-4, EX-5]:
 * exec/command shows its argv in full, cwd and timeout, the approval, the
 * live output (monospace, bounded, following the end while it runs), then
 * exit code or signal and duration, and the change set as a file list with
 * diffs; exec/apply shows the change set it applied with each path's
 * outcome. Registered with ToolCard's extension point; everything is text.
 */
import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import { changeSetApplied, ChangeSetView } from "./ChangeSetView.ts";
import { registerToolCardSections, type ToolCardSection } from "./ToolCard.ts";
import type { ToolCardModel } from "./lib/answer_blocks.ts";
import { argvLine, exitLine, parseCommandResult } from "./lib/exec_view.ts";
import { fmtClock } from "./lib/format.ts";

/** Output shown in the card (the server streams ≤ 256 KiB; the tail is what matters). */
const OUTPUT_SHOWN_MAX_CHARS = 64 * 1024;

function LiveOutput({ text, live }: { text: string; live: boolean }) {
  const ref = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = ref.current;
    // Follows the end while the command runs, like a terminal.
    if (el && live) el.scrollTop = el.scrollHeight;
  }, [text, live]);
  const shown = text.length > OUTPUT_SHOWN_MAX_CHARS
    ? `[… ${text.length - OUTPUT_SHOWN_MAX_CHARS} earlier characters …]\n` +
      text.slice(-OUTPUT_SHOWN_MAX_CHARS)
    : text;
  return html`
    <pre ref=${ref} class="command-output" data-testid="command-output"
      aria-live=${live ? "polite" : "off"}>${shown || (live ? "…" : "(no output)")}</pre>
  `;
}

function approvalSection(card: ToolCardModel): ToolCardSection | null {
  const ap = card.approval;
  if (!ap) return null;
  const label = ap.decision === "approve"
    ? "Approved"
    : ap.decision === "deny"
    ? "Denied"
    : ap.decision === "expired"
    ? "Expired (no decision in time)"
    : "Waiting for your decision";
  const at = ap.decidedAt ?? ap.askedAt;
  return {
    title: "Approval",
    body: html`<p class="tool-approval" data-testid="tool-approval">${label}${" "}${
      at !== null && html`
        <time>${fmtClock(at)}</time>
      `
    }</p>`,
  };
}

function commandSections(card: ToolCardModel): ToolCardSection[] {
  const a = card.args;
  const out: ToolCardSection[] = [{
    title: "Command",
    body: html`
      <div class="command-head">
        <pre class="command-argv" data-testid="command-argv">$ ${argvLine(a.argv)}</pre>
        <p class="command-meta"
          data-testid="command-meta">cwd ${typeof a.cwd === "string" && a.cwd
            ? a.cwd
            : "."} · timeout ${typeof a.timeout_s === "number"
            ? a.timeout_s
            : 60} s · on a scratch copy</p>
      </div>
    `,
  }];
  const ap = approvalSection(card);
  if (ap) out.push(ap);
  const done = parseCommandResult(card.status === "ok" ? card.result : null);
  const running = card.status === "running";
  if (running || card.liveOutput !== null || done) {
    const text = done && card.liveOutput === null
      ? [done.stdout, done.stderr].filter((t) => t).join("\n")
      : card.liveOutput ?? "";
    out.push({ title: "Output", body: html`<${LiveOutput} text=${text} live=${running} />` });
  }
  if (done) {
    out.push({
      title: "Exit",
      body: html`<p class=${`command-exit ${
        done.outcome === "exited" && done.exitCode === 0 ? "ok" : "failed"
      }`} data-testid="command-exit">${exitLine(done)}</p>`,
    });
    out.push({
      title: "Changes",
      body: html`
        <${ChangeSetView} agentId=${card.agentId} runId=${card.runId}
          callId=${card.callId} version=${card.result ?? ""} />
      `,
    });
  } else if (card.status === "error" || card.status === "denied") {
    out.push({
      title: "Error",
      body: html`<p class="tool-approval" data-testid="tool-result">${card.code ?? "refused"}</p>`,
    });
  }
  return out;
}

/** Tells the Run's change-set views (the command card's too) that an apply finished. */
function AppliedSignal({ runId, result }: { runId: string; result: string }) {
  useEffect(() => changeSetApplied(runId), [runId, result]);
  return null;
}

function applySections(card: ToolCardModel): ToolCardSection[] {
  const out: ToolCardSection[] = [];
  const ap = approvalSection(card);
  if (ap) out.push(ap);
  if (card.status === "ok") {
    let summary = "";
    try {
      const r = JSON.parse(card.result ?? "{}") as { applied?: number; refused?: number };
      summary = `${r.applied ?? 0} applied, ${r.refused ?? 0} refused`;
    } catch {
      summary = "";
    }
    out.push({
      title: "Applied",
      body: html`
        <p class="command-meta" data-testid="apply-summary">${summary}</p>
        <${AppliedSignal} runId=${card.runId} result=${card.result ?? ""} />
        <${ChangeSetView} agentId=${card.agentId} runId=${card.runId} callId=${null}
          version=${card.result ?? ""} />
      `,
    });
  } else if (card.status === "awaiting") {
    out.push({
      title: "Change set",
      body: html`<${ChangeSetView} agentId=${card.agentId} runId=${card.runId} callId=${null} />`,
    });
  } else if (card.status === "error" || card.status === "denied") {
    out.push({
      title: "Error",
      body: html`<p class="tool-approval" data-testid="tool-result">${card.code ?? "refused"}</p>`,
    });
  }
  return out;
}

registerToolCardSections("exec/command", {
  replaceDefaults: true,
  sections: commandSections,
  // Open while the command runs, so its live output is in view; collapsed when done [UI-10].
  openWhile: (card) => card.status === "running" && card.approval?.decision === "approve",
});
registerToolCardSections("exec/apply", { replaceDefaults: true, sections: applySections });
