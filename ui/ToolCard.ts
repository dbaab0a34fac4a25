/**
 * One tool call inline in the answer [UI-10, #18], where the call happened:
 * collapsed to "tool subject status" ("file/read_text notes.md ✓ 3 ms"),
 * expanding to the arguments in full, the approval decision with its time,
 * the change (diff) of a mutation and the result projection. Everything is
 * text. A decided approval stays here as a record.
 *
 * Generic by design: other tool families (exec commands, MCP, delegates) add
 * their own sections with `registerToolCardSections(prefix, fn)`; the default
 * sections still render unless the extension says `replaceDefaults`.
 */
import { html } from "htm/preact";
import type { VNode } from "preact";
import { DiffText } from "./DiffText.ts";
import { cardStatusText, cardSubject, type ToolCardModel } from "./lib/answer_blocks.ts";
import { fmtClock } from "./lib/format.ts";
import { prettyPayload } from "./lib/pretty.ts";

export interface ToolCardSection {
  title: string;
  body: VNode;
}

export interface ToolCardExtension {
  sections(card: ToolCardModel): ToolCardSection[];
  /** Show only these sections (not arguments/result). @default false */
  replaceDefaults?: boolean;
  /** Whether the card is open (e.g. a running command's live output); closed again when false. */
  openWhile?(card: ToolCardModel): boolean;
}

const EXTENSIONS: { prefix: string; ext: ToolCardExtension }[] = [];

/** Adds sections to the cards of tools whose id starts with `prefix` (e.g. "exec/"). */
export function registerToolCardSections(prefix: string, ext: ToolCardExtension): void {
  EXTENSIONS.push({ prefix, ext });
}

/** The change a mutation makes: the approval's diff preview, else one built from its arguments. */
function mutationDiff(card: ToolCardModel): string | null {
  if (card.approval?.preview) return card.approval.preview;
  const a = card.args;
  const path = typeof a.path === "string" ? a.path : "";
  if (card.toolId === "file/edit" && typeof a.old_text === "string") {
    const lines = (t: unknown, sign: string) =>
      String(t ?? "").split("\n").map((l) => `${sign}${l}`).join("\n");
    return `--- a/${path}\n+++ b/${path}\n@@\n${lines(a.old_text, "-")}\n${lines(a.new_text, "+")}`;
  }
  if (card.toolId === "file/write" && typeof a.content === "string") {
    return `+++ b/${path}\n@@\n${a.content.split("\n").map((l) => `+${l}`).join("\n")}`;
  }
  return null;
}

const DECISION: Record<string, string> = {
  approve: "Approved",
  deny: "Denied",
  expired: "Expired (no decision in time)",
  pending: "Waiting for your decision",
};

function defaultSections(card: ToolCardModel): ToolCardSection[] {
  const out: ToolCardSection[] = [{
    title: "Arguments",
    body: html`<pre class="tool-args" data-testid="tool-args">${
      JSON.stringify(card.args, null, 2)
    }</pre>`,
  }];
  if (card.approval) {
    const ap = card.approval;
    const at = ap.decidedAt ?? ap.askedAt;
    out.push({
      title: "Approval",
      body: html`<p class="tool-approval" data-testid="tool-approval">${[
        DECISION[ap.decision],
        at !== null && " ",
        at !== null && html`<time>${fmtClock(at)}</time>`,
      ]}</p>`,
    });
  } else if (card.deniedReason) {
    out.push({
      title: "Approval",
      body:
        html`<p class="tool-approval" data-testid="tool-approval">Refused by policy (${card.deniedReason})</p>`,
    });
  }
  const diff = mutationDiff(card);
  if (diff) {
    out.push({ title: "Change", body: html`<${DiffText} text=${diff} testId="tool-diff" />` });
  }
  if (card.result !== null) {
    out.push({
      title: card.status === "error" ? `Error ${card.code ?? ""}` : "Result",
      body: html`<pre class="tool-result" data-testid="tool-result">${
        card.result ? prettyPayload(card.result) : "(empty)"
      }</pre>`,
    });
  }
  return out;
}

export function ToolCard({ card }: { card: ToolCardModel }) {
  const ext = EXTENSIONS.find((e) => card.toolId.startsWith(e.prefix))?.ext;
  const sections = [
    ...(ext?.replaceDefaults ? [] : defaultSections(card)),
    ...(ext ? ext.sections(card) : []),
  ];
  const subject = cardSubject(card.args);
  return html`
    <details class=${`tool-card tool-${card.status}`} data-testid="tool-card"
      open=${ext?.openWhile?.(card) || undefined}
      data-tool=${card.toolId} data-status=${card.status}>
      <summary>
        <span class="tool-name">${card.toolId}</span>${" "}
        ${subject && html`<span class="tool-subject">${subject}</span>`}${" "}
        <span class="tool-status" data-testid="tool-status">${cardStatusText(card)}</span>
      </summary>
      <div class="tool-body">
        ${sections.map((s) => html`<section><h4>${s.title}</h4>${s.body}</section>`)}
      </div>
    </details>
  `;
}
