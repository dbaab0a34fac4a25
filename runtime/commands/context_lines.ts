/**
 * `/context` as an operator reads it [CX-5, CX-7, CX-8]: the meter's numbers
 * (used of window, free, "exact" or "≈", calibrated or not and from how many
 * usages), why the count is an upper bound, and one line per breakdown part
 * with the history's kept / collapsed Turns. A projection that does not
 * match the shared schema falls back to the raw facts (never a guess).
 */
import {
  CONTEXT_PART_LABELS,
  type ContextPartName,
  ContextPreviewResponse,
  COUNTING_REASON_LABELS,
  RunContextResponse,
} from "../protocol/api.ts";
import type { CommandLine } from "./registry.ts";

const n = (x: number) => x.toLocaleString("en-US");

function partLines(
  parts: { name: ContextPartName; tokens: number }[],
  turns: { kept: number; collapsed: number; omitted: number; summarized: number },
): CommandLine[] {
  return parts.map((p) => ({
    label: CONTEXT_PART_LABELS[p.name],
    value: p.name === "history"
      ? `${n(p.tokens)} tokens (${turns.kept} turn${turns.kept === 1 ? "" : "s"} kept, ` +
        `${turns.collapsed} collapsed${
          turns.omitted ? `, ${turns.omitted} beyond the read bound` : ""
        })`
      : `${n(p.tokens)} tokens`,
  }));
}

/** Lines of the next Turn's projection, or null when it is not one. */
export function projectionLines(v: unknown): CommandLine[] | null {
  const r = ContextPreviewResponse.safeParse(v);
  if (!r.success) return null;
  const p = r.data;
  if (!p.available) return [{ label: "Unavailable", value: p.reason }];
  const m = p.meter;
  const exact = m.counting === "exact";
  const lines: CommandLine[] = [
    {
      label: "Used",
      value: `${exact ? "exact " : "≈"}${n(m.used_tokens)} of ${
        n(m.window)
      } tokens (${m.used_percent} %)${m.basis === "calibrated" ? ", calibrated" : ""}`,
    },
    { label: "Free", value: `${n(m.free_tokens)} tokens (${m.free_percent} %)` },
    {
      label: "Counting",
      value: exact
        ? `exact with the ${p.counting.tokenizer} tokenizer, vocabulary verified (+2 % margin)`
        : `upper bound, 1 token per UTF-8 byte (${
          COUNTING_REASON_LABELS[p.counting.reason ?? "no_tokenizer"]
        })`,
    },
    {
      label: "Calibration",
      value: p.calibration.ratio === null
        ? "none yet (no complete usage of this model, tools and renderer)"
        : `×${p.calibration.ratio} from the latest ${p.calibration.samples} prompt count${
          p.calibration.samples === 1 ? "" : "s"
        } (estimate ${n(p.context_tokens)} → ${n(p.calibration.calibrated_context_tokens!)})`,
    },
    ...partLines(p.breakdown.parts, p.breakdown.history_turns),
    { label: "Before auto-compaction", value: `${n(p.tokens_before_auto_compaction)} tokens` },
  ];
  return lines;
}

/** Lines of a Run's context metadata [CX-4], or null when it is not one. */
export function runContextLines(v: unknown): CommandLine[] | null {
  const r = RunContextResponse.safeParse(v);
  if (!r.success || r.data.source !== "memory") return null;
  const c = r.data;
  const lines: CommandLine[] = [
    { label: "Model", value: c.model_id },
    {
      label: "Counting",
      value: c.counting.mode === "exact"
        ? `exact (${c.estimator})`
        : `upper bound (${c.estimator})`,
    },
    { label: "Estimate", value: c.estimate === null ? "over budget" : `${n(c.estimate)} tokens` },
    { label: "Window", value: `${n(c.budget.window)} tokens` },
  ];
  if (c.breakdown) lines.push(...partLines(c.breakdown.parts, c.breakdown.history_turns));
  lines.push({ label: "Sections", value: c.sections.map((s) => s.name).join(", ") });
  return lines;
}
