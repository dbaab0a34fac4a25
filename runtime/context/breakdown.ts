/**
 * Context breakdown [CX-8]: the tokens of one admitted request, per part —
 * platform, instructions, environment, git, history, tools, current message —
 * plus the output reserve and what is free of the window.
 *
 * What this file enforces: the parts of the input add up to EXACTLY the
 * admission estimate (the meter's "used"): each named part is counted with
 * the plan's own counter, and "platform" is the remainder — the product's
 * contract plus everything the product adds around the parts (roles, joins,
 * the template reserve and, with an exact count, its margin). Scaling by a
 * calibration ratio keeps that sum exact. No text leaves this module.
 */
import type { Admission } from "./admission.ts";
import { instructionsText, omittedText, receiptText } from "./admission.ts";
import type { ContextPlan } from "./plan.ts";
import { ContextPartName } from "../protocol/api.ts";
import { sectionText } from "./plan.ts";

/** The parts, in display order: the protocol's list (one owner) [CX-8]. */
export const BREAKDOWN_PARTS = ContextPartName.options;
export type BreakdownPart = ContextPartName;

/** Input parts: their sum is the request's estimate. */
export type InputParts = Record<Exclude<BreakdownPart, "output_reserve" | "free">, number>;

export interface Breakdown {
  parts: { name: BreakdownPart; tokens: number }[];
  /** Sum of the input parts (= the meter's used tokens). */
  used: number;
  history_turns: { kept: number; collapsed: number; omitted: number; summarized: number };
}

type Admitted = Extract<Admission, { ok: true }>;

/** The input parts of an admitted request, summing to `adm.estimate`. */
export function inputParts(plan: ContextPlan, adm: Admitted): InputParts {
  const c = (t: string) => plan.counter.count(t);
  const instr = sectionText(plan, "instructions");
  const git = sectionText(plan, "git");
  let history = 0;
  for (const b of plan.history.slice(plan.history.length - adm.keptBundles)) {
    history += c("user") + c(b.user) + c("assistant") + c(b.assistant);
  }
  const summary = sectionText(plan, "history_summary");
  if (summary !== null) history += c(summary);
  const omitted = omittedText(plan);
  if (omitted !== null) history += c(omitted);
  if (adm.receipt) history += c(receiptText(adm.receipt));
  const parts = {
    platform: 0,
    instructions: instr === null ? 0 : c(instructionsText(instr)),
    environment: c(sectionText(plan, "environment")!),
    git: git === null ? 0 : c(git),
    history,
    tools: adm.tools.length > 0 ? c(JSON.stringify(adm.tools)) : 0,
    current_message: c("user") + c(sectionText(plan, "user_message")!),
  };
  const named = Object.values(parts).reduce((a, b) => a + b, 0);
  // The remainder is the product's framing; never negative (each part is inside the estimate).
  parts.platform = Math.max(0, adm.estimate - named);
  return parts;
}

/** Scales the parts to a calibrated total, keeping their sum exact (platform absorbs rounding). */
export function scaleParts(parts: InputParts, total: number): InputParts {
  const sum = Object.values(parts).reduce((a, b) => a + b, 0);
  if (sum === 0 || sum === total) return { ...parts };
  const ratio = total / sum;
  const out = { ...parts };
  let named = 0;
  for (const k of Object.keys(out) as (keyof InputParts)[]) {
    if (k === "platform") continue;
    out[k] = Math.floor(parts[k] * ratio);
    named += out[k];
  }
  out.platform = total - named;
  return out;
}

/** The full breakdown against the window: input parts, output reserve, free. */
export function breakdownOf(
  parts: InputParts,
  window: number,
  budget: number,
  turns: Breakdown["history_turns"],
): Breakdown {
  const used = Object.values(parts).reduce((a, b) => a + b, 0);
  return {
    parts: [
      ...(Object.keys(parts) as (keyof InputParts)[]).map((name) => ({
        name,
        tokens: parts[name],
      })),
      { name: "output_reserve", tokens: window - budget },
      { name: "free", tokens: Math.max(0, budget - used) },
    ],
    used,
    history_turns: turns,
  };
}
