/**
 * The context meter beside the composer [UI-4, CX-5, CX-7, CX-8]: one line
 * ("≈12.3k / 32.8k, 61% left", "exact …" with a verified tokenizer,
 * "· calibrated" once the model's own prompt counts arrived) over ONE stacked
 * bar of the whole window — platform, instructions, environment, git,
 * history, tools, current message, output reserve, free. Hovering a segment
 * names it (SVG <title>); a tap or click opens the same parts as a list.
 *
 * Every number is the server's projection, parsed with the shared schema
 * (ui/lib/types.ts → runtime/protocol/api.ts): this component computes only
 * widths. The bar is SVG geometry (attributes, not inline styles: CSP).
 */
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { fmtTokens, meterView } from "./lib/format.ts";
import { CONTEXT_PART_LABELS, COUNTING_REASON_LABELS } from "../runtime/protocol/api.ts";
import type { ContextProjection, ProjectionDetail } from "./lib/types.ts";

export interface ContextMeterProps {
  projection: ContextProjection | null;
}

interface Segment {
  name: string;
  label: string;
  tokens: number;
  x: number;
  width: number;
}

/** Bar segments in viewBox units (0..1000) over the window (or the sum when over it). */
export function barSegments(d: ProjectionDetail): Segment[] {
  const total = Math.max(d.meter.window, d.breakdown.parts.reduce((a, p) => a + p.tokens, 0));
  let x = 0;
  return d.breakdown.parts.filter((p) => p.tokens > 0).map((p) => {
    const width = (p.tokens / total) * 1000;
    const seg = { name: p.name, label: CONTEXT_PART_LABELS[p.name], tokens: p.tokens, x, width };
    x += width;
    return seg;
  });
}

function partLine(d: ProjectionDetail, name: string, tokens: number): string {
  if (name !== "history") return `${fmtTokens(tokens)} tokens`;
  const t = d.breakdown.history_turns;
  const turns = `${t.kept} turn${t.kept === 1 ? "" : "s"} kept` +
    (t.collapsed > 0 ? `, ${t.collapsed} collapsed` : "") +
    (t.omitted > 0 ? `, ${t.omitted} beyond the read bound` : "") +
    (t.summarized > 0 ? `, ${t.summarized} summarized` : "");
  return `${fmtTokens(tokens)} tokens · ${turns}`;
}

export function ContextMeter(p: ContextMeterProps) {
  const [open, setOpen] = useState(false);
  const meter = meterView(p.projection);
  const d = p.projection?.detail ?? null;
  const segments = d ? barSegments(d) : [];
  return html`
    <span class=${`meter meter-${meter.level}`} data-testid="context-meter">
      <button type="button" class="meter-btn" title=${meter.title}
        aria-label=${`Context ${meter.text}. ${d ? "Show the breakdown" : ""}`}
        aria-expanded=${d ? open : undefined} disabled=${d === null}
        onClick=${() => setOpen(!open)}>
        <svg class="ctx-bar" data-testid="context-bar" viewBox="0 0 1000 10"
          preserveAspectRatio="none" aria-hidden="true" focusable="false">
          <rect class="ctx-track" x="0" y="0" width="1000" height="10" />
          ${segments.map((s) =>
            html`
              <rect class=${`ctx-seg seg-${s.name}`} data-part=${s.name}
                x=${s.x.toFixed(2)} y="0" width=${s.width.toFixed(2)} height="10">
                <title>${s.label}: ${fmtTokens(s.tokens)} tokens</title>
              </rect>
            `
          )}
        </svg>
        <span class="meter-text">${meter.text}</span>
      </button>
      ${open && d && html`
        <div class="ctx-breakdown" role="region" aria-label="Context breakdown"
          data-testid="context-breakdown">
          <header>
            <strong>${fmtTokens(d.meter.used_tokens)} of ${fmtTokens(
              d.meter.window,
            )} tokens</strong>
            <span class="muted">${d.meter.counting === "exact"
              ? `exact (${d.counting.tokenizer ?? "tokenizer"}, +2 %)`
              : `≈ upper bound${
                d.counting.reason ? ` — ${COUNTING_REASON_LABELS[d.counting.reason]}` : ""
              }`}${d.meter.basis === "calibrated"
              ? ` · calibrated from ${d.calibration.samples} usage${
                d.calibration.samples === 1 ? "" : "s"
              }`
              : ""}</span>
          </header>
          <ul>
            ${d.breakdown.parts.map((part) =>
              html`
                <li data-part=${part.name}>
                  <svg class="ctx-swatch" viewBox="0 0 10 10" aria-hidden="true" focusable="false">
                    <rect class=${`ctx-seg seg-${part.name}`} x="0" y="0" width="10" height="10" />
                  </svg>
                  <span class="ctx-part-name">${CONTEXT_PART_LABELS[part.name]}</span>
                  <span class="ctx-part-tokens">${partLine(d, part.name, part.tokens)}</span>
                </li>
              `
            )}
          </ul>
        </div>
      `}
    </span>
  `;
}
