/**
 * Context inspection [CX-4] and NextTurnProjection [CX-5].
 *
 * What this file enforces: inspection returns section order, role, trust,
 * provenance, budgets, byte/token estimates, truncation reasons and an
 * in-process KEYED digest of the plan — never a body, never the plan's own
 * digest of a section body that a reader could confirm a guess against.
 * History left out by the read bound shows as its content-free receipt
 * (count, boundary Turn ids, keyed digest) and the history section's
 * truncation reason `history_read_bound`.
 * The projection reports the conservative numbers of the next Turn and, when
 * complete provider usages of the same scope exist, a calibration from the
 * latest 16; without a qualified model it is "unavailable" with a reason.
 */
import { createHmac } from "node:crypto";
import { CONTEXT_CALIBRATION_USAGES } from "../limits.ts";
import { admit, collapseThreshold, countedTexts } from "./admission.ts";
import { primeCounter } from "./tokenizer.ts";
import { type Breakdown, breakdownOf, inputParts, scaleParts } from "./breakdown.ts";
import { type CountingState, upperBoundState } from "./counter.ts";
import { compileContextPlan, type ContextInputs, type ContextPlan, RENDERER_ID } from "./plan.ts";

export interface InspectionKey {
  /** HMAC of a digest under the in-memory inspection key (lost at restart by design). */
  keyed(data: string): string;
}

export function createInspectionKey(): InspectionKey {
  const key = crypto.getRandomValues(new Uint8Array(32));
  return { keyed: (d) => `hmac-sha256:${createHmac("sha256", key).update(d).digest("hex")}` };
}

export interface ContextInspection {
  source: "memory";
  plan_id: string;
  renderer: string;
  estimator: string;
  model_id: string;
  sections: {
    name: string;
    role: string;
    trust: string;
    provenance: string;
    bytes: number;
    tokens_estimate: number;
    truncation: "history_read_bound" | null;
  }[];
  history: {
    bundles: number;
    kept: number;
    collapsed: number;
    receipt: string | null;
    omitted: {
      count: number;
      first_turn_id: string;
      last_turn_id: string;
      policy: string;
      receipt: string;
    } | null;
  };
  budget: { window: number; input_budget: number; output_reserve: number; collapse_at: number };
  estimate: number | null;
  /** Tokens per part of the Run's first request [CX-8] (null: over budget). */
  breakdown: Breakdown | null;
  counting: { mode: "exact" | "upper_bound"; estimator: string };
  keyed_digest: string;
}

/** Metadata of a plan still in memory. No section text is included. */
export function inspectPlan(plan: ContextPlan, key: InspectionKey): ContextInspection {
  const a = admit(plan, { exchanges: [], narrowed: false });
  const c = (t: string) => plan.counter.count(t);
  return {
    source: "memory",
    plan_id: plan.id,
    renderer: RENDERER_ID,
    estimator: plan.counter.id,
    model_id: plan.modelId,
    sections: plan.sections.map((s) => ({
      name: s.name,
      role: s.role,
      trust: s.trust,
      provenance: s.provenance,
      bytes: s.bytes,
      tokens_estimate: c(s.text),
      truncation: s.name === "history" && plan.omitted ? "history_read_bound" : null,
    })),
    history: {
      bundles: plan.history.length,
      kept: a.ok ? a.keptBundles : plan.history.length,
      collapsed: a.ok ? plan.history.length - a.keptBundles : 0,
      receipt: a.ok && a.receipt ? key.keyed(a.receipt.digest) : null,
      omitted: plan.omitted
        ? {
          count: plan.omitted.count,
          first_turn_id: plan.omitted.first_turn_id,
          last_turn_id: plan.omitted.last_turn_id,
          policy: plan.omitted.policy,
          receipt: key.keyed(plan.omitted.digest),
        }
        : null,
    },
    budget: {
      window: plan.window,
      input_budget: plan.budget,
      output_reserve: plan.window - plan.budget,
      collapse_at: collapseThreshold(plan.budget),
    },
    estimate: a.estimate,
    breakdown: a.ok
      ? breakdownOf(inputParts(plan, a), plan.window, plan.budget, {
        kept: a.keptBundles,
        collapsed: plan.history.length - a.keptBundles,
        omitted: plan.omitted?.count ?? 0,
        summarized: plan.summary?.turns ?? 0,
      })
      : null,
    counting: { mode: plan.counter.exact ? "exact" : "upper_bound", estimator: plan.counter.id },
    keyed_digest: key.keyed(plan.digest),
  };
}

/** One complete provider usage of the same scope: our estimate and the real input count. */
export interface UsageSample {
  estimate: number;
  inputTokens: number;
}

export type NextTurnProjection =
  | {
    available: true;
    estimator: string;
    window: number;
    budget: number;
    fixed_context_tokens: number;
    history_tokens: number;
    context_tokens: number;
    remaining_percent: number;
    safe_user_tokens: number;
    tokens_before_auto_compaction: number;
    calibration: {
      samples: number;
      ratio: number | null;
      calibrated_context_tokens: number | null;
    };
    /** The meter's numbers, all from here: used (fixed + history), window, free [CX-5]. */
    meter: {
      used_tokens: number;
      window: number;
      output_reserve: number;
      free_tokens: number;
      used_percent: number;
      free_percent: number;
      basis: "estimate" | "calibrated";
      counting: "exact" | "upper_bound";
    };
    counting: CountingState;
    /** Parts of the meter's used tokens plus output reserve and free [CX-8]. */
    breakdown: Breakdown;
  }
  | { available: false; reason: string };

/**
 * The calibration ratio from the latest complete usages of the same scope:
 * the largest real/estimated ratio among them (conservative), null without any.
 */
export function calibrationRatio(samples: readonly UsageSample[]): {
  samples: number;
  ratio: number | null;
} {
  const recent = samples.slice(0, CONTEXT_CALIBRATION_USAGES).filter((s) =>
    s.estimate > 0 && s.inputTokens > 0
  );
  if (recent.length === 0) return { samples: 0, ratio: null };
  const r = Math.max(...recent.map((s) => s.inputTokens / s.estimate));
  return { samples: recent.length, ratio: Math.round(r * 1000) / 1000 };
}

/** `nextTurnProjection` after priming an exact counter with every text it will count. */
export async function projectNextTurn(
  inputs: Omit<ContextInputs, "userMessage" | "planId">,
  samples: readonly UsageSample[],
  counting?: CountingState,
): Promise<NextTurnProjection> {
  if (inputs.counter) {
    const plan = compileContextPlan({ ...inputs, userMessage: "", planId: "prime" });
    await primeCounter(inputs.counter, countedTexts(plan, { exchanges: [], narrowed: false }));
  }
  return nextTurnProjection(inputs, samples, counting);
}

/** Projects the next Turn from the inputs a Run would compile with an empty message. */
export function nextTurnProjection(
  inputs: Omit<ContextInputs, "userMessage" | "planId">,
  samples: readonly UsageSample[],
  counting: CountingState = upperBoundState("no_tokenizer"),
): NextTurnProjection {
  const base = { ...inputs, userMessage: "", planId: "00000000-0000-4000-8000-000000000000" };
  const full = compileContextPlan(base);
  const fixedPlan = compileContextPlan({ ...base, history: [], omitted: null });
  const fixed = admit(fixedPlan, { exchanges: [], narrowed: false });
  const admitted = admit(full, { exchanges: [], narrowed: false });
  if (!fixed.ok) return { available: false, reason: "fixed_context_over_budget" };
  // Even collapsed the history does not fit: show the whole of it (the meter reads "over").
  const withHistory = admitted.ok ? admitted : admitOpen(full);
  const used = withHistory.estimate;
  const uncollapsed = full.history.length === 0 ? used : estimateUncollapsed(full);
  const cal = calibrationRatio(samples);
  const calibrated = cal.ratio === null ? null : Math.ceil(used * cal.ratio);
  const shown = calibrated ?? used;
  const parts = inputParts(full, withHistory);
  const breakdown = breakdownOf(
    calibrated === null ? parts : scaleParts(parts, calibrated),
    inputs.window,
    inputs.budget,
    {
      kept: withHistory.keptBundles,
      collapsed: full.history.length - withHistory.keptBundles,
      omitted: full.omitted?.count ?? 0,
      summarized: full.summary?.turns ?? 0,
    },
  );
  const free = Math.max(0, inputs.budget - shown);
  const usedPercent = Math.min(100, Math.round((shown * 100) / inputs.window));
  return {
    available: true,
    estimator: full.counter.id,
    window: inputs.window,
    budget: inputs.budget,
    fixed_context_tokens: fixed.estimate,
    history_tokens: Math.max(0, used - fixed.estimate),
    context_tokens: used,
    remaining_percent: Math.max(0, Math.floor(((inputs.budget - used) * 100) / inputs.budget)),
    safe_user_tokens: Math.max(0, inputs.budget - used),
    tokens_before_auto_compaction: Math.max(0, collapseThreshold(inputs.budget) - uncollapsed),
    calibration: {
      samples: cal.samples,
      ratio: cal.ratio,
      calibrated_context_tokens: calibrated,
    },
    meter: {
      used_tokens: shown,
      window: inputs.window,
      output_reserve: inputs.window - inputs.budget,
      free_tokens: free,
      used_percent: usedPercent,
      free_percent: Math.max(0, Math.floor((free * 100) / inputs.window)),
      basis: calibrated === null ? "estimate" : "calibrated",
      counting: full.counter.exact ? "exact" : "upper_bound",
    },
    counting,
    breakdown,
  };
}

/** Same renderer, but with collapse disabled: a budget no request reaches. */
function admitOpen(plan: ContextPlan) {
  const a = admit({ ...plan, budget: Number.MAX_SAFE_INTEGER }, { exchanges: [], narrowed: false });
  if (!a.ok) throw new Error("unreachable: an unbounded budget admits every request");
  return a;
}

function estimateUncollapsed(plan: ContextPlan): number {
  return admitOpen(plan).estimate;
}
