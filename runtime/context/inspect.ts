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
import { admit, collapseThreshold, ESTIMATOR_ID } from "./admission.ts";
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
  keyed_digest: string;
}

/** Metadata of a plan still in memory. No section text is included. */
export function inspectPlan(plan: ContextPlan, key: InspectionKey): ContextInspection {
  const a = admit(plan, { exchanges: [], narrowed: false });
  return {
    source: "memory",
    plan_id: plan.id,
    renderer: RENDERER_ID,
    estimator: ESTIMATOR_ID,
    model_id: plan.modelId,
    sections: plan.sections.map((s) => ({
      name: s.name,
      role: s.role,
      trust: s.trust,
      provenance: s.provenance,
      bytes: s.bytes,
      tokens_estimate: s.bytes,
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
  }
  | { available: false; reason: string };

/** Projects the next Turn from the inputs a Run would compile with an empty message. */
export function nextTurnProjection(
  inputs: Omit<ContextInputs, "userMessage" | "planId">,
  samples: readonly UsageSample[],
): NextTurnProjection {
  const base = { ...inputs, userMessage: "", planId: "00000000-0000-4000-8000-000000000000" };
  const full = compileContextPlan(base);
  const fixedPlan = compileContextPlan({ ...base, history: [] });
  const fixed = admit(fixedPlan, { exchanges: [], narrowed: false });
  const withHistory = admit(full, { exchanges: [], narrowed: false });
  if (!fixed.ok) return { available: false, reason: "fixed_context_over_budget" };
  const used = withHistory.estimate;
  const uncollapsed = full.history.length === 0 ? used : estimateUncollapsed(full);
  const recent = samples.slice(0, CONTEXT_CALIBRATION_USAGES).filter((s) => s.estimate > 0);
  const ratio = recent.length === 0
    ? null
    : Math.max(...recent.map((s) => s.inputTokens / s.estimate));
  return {
    available: true,
    estimator: ESTIMATOR_ID,
    window: inputs.window,
    budget: inputs.budget,
    fixed_context_tokens: fixed.estimate,
    history_tokens: Math.max(0, used - fixed.estimate),
    context_tokens: used,
    remaining_percent: Math.max(0, Math.floor(((inputs.budget - used) * 100) / inputs.budget)),
    safe_user_tokens: Math.max(0, inputs.budget - used),
    tokens_before_auto_compaction: Math.max(0, collapseThreshold(inputs.budget) - uncollapsed),
    calibration: {
      samples: recent.length,
      ratio: ratio === null ? null : Math.round(ratio * 1000) / 1000,
      calibrated_context_tokens: ratio === null ? null : Math.ceil(used * ratio),
    },
  };
}

function estimateUncollapsed(plan: ContextPlan): number {
  // Same renderer, but with collapse disabled: a budget no request reaches.
  const open = { ...plan, budget: Number.MAX_SAFE_INTEGER };
  const a = admit(open, { exchanges: [], narrowed: false });
  return a.estimate;
}
