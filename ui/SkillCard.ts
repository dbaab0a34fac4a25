/**
 * The skill tools' sections of a tool card [LC-3, UI-10]: after a call of
 * `skill/<name>` ended, its answer (the script's stdout as the model got it)
 * as monospace text, then the exit code or signal, the duration, whether the
 * answer was cut, what the script left in its output directory (listed, then
 * discarded by the server) and its stderr tail. Registered with ToolCard's
 * extension point in place of the defaults: arguments, the approval (its
 * decision, time and what it showed), then the answer — or the fixed error
 * code when the call failed. Everything is text.
 */
import { html } from "htm/preact";
import { registerToolCardSections, type ToolCardSection } from "./ToolCard.ts";
import type { ToolCardModel } from "./lib/answer_blocks.ts";
import { fmtClock } from "./lib/format.ts";

const DECISION: Record<string, string> = {
  approve: "Approved",
  deny: "Denied",
  expired: "Expired (no decision in time)",
  pending: "Waiting for your decision",
};

interface SkillResult {
  answer: string;
  answer_truncated: boolean;
  answer_bytes: number;
  exit_code: number | null;
  signal: string | null;
  duration_ms: number;
  stderr: string;
  output_files: { path: string; size: number }[];
  output_files_total: number;
}

/** The canonical skill result, or null when the card holds something else (an error). */
export function parseSkillResult(text: string | null): SkillResult | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<SkillResult>;
    if (typeof v.answer !== "string" || !Array.isArray(v.output_files)) return null;
    return {
      answer: v.answer,
      answer_truncated: v.answer_truncated === true,
      answer_bytes: Number(v.answer_bytes) || 0,
      exit_code: typeof v.exit_code === "number" ? v.exit_code : null,
      signal: typeof v.signal === "string" ? v.signal : null,
      duration_ms: Number(v.duration_ms) || 0,
      stderr: typeof v.stderr === "string" ? v.stderr : "",
      output_files: v.output_files.filter((f) =>
        typeof f?.path === "string" && typeof f?.size === "number"
      ),
      output_files_total: Number(v.output_files_total) || 0,
    };
  } catch {
    return null;
  }
}

function skillSections(card: ToolCardModel): ToolCardSection[] {
  const head: ToolCardSection[] = [{
    title: "Arguments (its stdin)",
    body: html`<pre class="tool-args" data-testid="tool-args">${
      JSON.stringify(card.args, null, 2)
    }</pre>`,
  }];
  const ap = card.approval;
  if (ap) {
    const at = ap.decidedAt ?? ap.askedAt;
    head.push({
      title: "Approval",
      body: html`<p class="tool-approval" data-testid="tool-approval">${[
        DECISION[ap.decision],
        at !== null && " ",
        at !== null && html`<time>${fmtClock(at)}</time>`,
      ]}</p>${ap.preview && html`<pre class="tool-args">${ap.preview}</pre>`}`,
    });
  } else if (card.deniedReason) {
    head.push({
      title: "Approval",
      body:
        html`<p class="tool-approval" data-testid="tool-approval">Refused by policy (${card.deniedReason})</p>`,
    });
  }
  const r = parseSkillResult(card.result);
  if (r === null) {
    if (card.result === null) return head;
    return [...head, {
      title: `Error ${card.code ?? ""}`,
      body: html`<pre class="tool-result" data-testid="tool-result">${card.result}</pre>`,
    }];
  }
  const ended = r.signal !== null ? `killed by ${r.signal}` : `exit code ${r.exit_code}`;
  const out: ToolCardSection[] = [...head, {
    title: "Answer",
    body: html`<pre class="command-output" data-testid="skill-answer">${
      r.answer ||
      "(no output)"
    }</pre>`,
  }, {
    title: "Script",
    body: html`<p class="small" data-testid="skill-ended">${ended} · ${r.duration_ms} ms${
      r.answer_truncated ? ` · answer cut (${r.answer_bytes} bytes printed)` : ""
    }</p>`,
  }];
  if (r.output_files_total > 0) {
    out.push({
      title: "Output directory (discarded after the call)",
      body: html`<ul class="small" data-testid="skill-output-files">${
        r.output_files.map((f) => html`<li><code>${f.path}</code> ${f.size} B</li>`)
      }${
        r.output_files_total > r.output_files.length &&
        html`<li class="muted">and ${r.output_files_total - r.output_files.length} more</li>`
      }</ul>`,
    });
  }
  if (r.stderr !== "") {
    out.push({
      title: "stderr (tail)",
      body: html`<pre class="command-output" data-testid="skill-stderr">${r.stderr}</pre>`,
    });
  }
  return out;
}

registerToolCardSections("skill/", { sections: skillSections, replaceDefaults: true });
