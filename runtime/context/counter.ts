/**
 * How context tokens are counted [CX-3, CX-7]: one `TokenCounter` per plan.
 *
 * What this file enforces: without a verified tokenizer the count is the
 * conservative upper bound `utf8-bytes-upper-bound-v1` (one token per UTF-8
 * byte — a byte-level BPE never produces more tokens than bytes); an exact
 * counter is only ever built from a tokenizer whose vocabulary matched the
 * model's (see tokenizer.ts) and every exact total carries a 2 % margin
 * (`withMargin`). Counting is pure and synchronous here: the expensive part
 * (loading and running the tokenizer) happens before, off the request path.
 */
import { CONTEXT_EXACT_MARGIN_PERCENT } from "../limits.ts";
import { utf8Bytes } from "../protocol/utf8.ts";
import type { CountingReason } from "../protocol/api.ts";

export const UPPER_BOUND_ESTIMATOR_ID = "utf8-bytes-upper-bound-v1";

export interface TokenCounter {
  /** Estimator id, part of the plan digest and of the calibration scope. */
  readonly id: string;
  /** True only for a tokenizer verified against the model's vocabulary [CX-7]. */
  readonly exact: boolean;
  /** Tokens of one text (exact, or its upper bound). */
  count(text: string): number;
}

/** The conservative default [CX-3]. */
export const UPPER_BOUND_COUNTER: TokenCounter = Object.freeze({
  id: UPPER_BOUND_ESTIMATOR_ID,
  exact: false,
  count: utf8Bytes,
});

/** An exact total plus its margin (upper-bound totals stay as they are). */
export function withMargin(counter: TokenCounter, tokens: number): number {
  if (!counter.exact) return tokens;
  return Math.ceil((tokens * (100 + CONTEXT_EXACT_MARGIN_PERCENT)) / 100);
}

/** How a plan is counted, as the projection and /context report it. */
export interface CountingState {
  mode: "exact" | "upper_bound";
  estimator: string;
  /** The tokenizer used (exact) or that was considered (null when none applies). */
  tokenizer: string | null;
  /** Why the count is an upper bound (null when exact). */
  reason: CountingReason | null;
}

export function upperBoundState(
  reason: CountingReason,
  tokenizer: string | null = null,
): CountingState {
  return { mode: "upper_bound", estimator: UPPER_BOUND_ESTIMATOR_ID, tokenizer, reason };
}
