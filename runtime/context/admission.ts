/**
 * Context admission and deterministic collapse [CX-3], re-run before EVERY
 * provider call of a Run.
 *
 * What this file enforces: the estimate is the conservative upper bound
 * `utf8-bytes-upper-bound-v1` — one token per UTF-8 byte of every rendered
 * message (role + content + tool calls), of the provider tool schemas, plus a
 * 256-token template reserve. At ≥ 80 % of the input budget the oldest
 * complete history bundle is moved out and replaced by ONE content-free
 * receipt (bound to the collapsed Turn ids, their bundle digests, the
 * renderer and the policy); the latest complete bundle is always kept; if the
 * request is still over the budget the call is refused with
 * `model_context_limit`.
 *
 * In-Turn collapse [CX-10]: when the history cannot shrink further, the
 * oldest tool results OF THE CURRENT TURN are replaced, one by one, by
 * content-free receipts (call id, tool, result bytes, result digest); the
 * newest result, the user message and every tool-call message are kept. Only
 * when nothing more can be collapsed is the call refused. Nothing here
 * touches the durable transcript.
 */
import { CONTEXT_COLLAPSE_PERCENT, CONTEXT_TEMPLATE_RESERVE_TOKENS } from "../limits.ts";
import type { ChatMessage, ProviderTool, ToolCall } from "../model/types.ts";
import { canonicalJson, type Digest, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import { providerTools } from "../tools/policy.ts";
import {
  type ContextPlan,
  FINALIZATION_MARKER,
  type PlannedBundle,
  RENDERER_ID,
  sectionText,
} from "./plan.ts";
import {
  type TokenCounter,
  UPPER_BOUND_COUNTER,
  UPPER_BOUND_ESTIMATOR_ID,
  withMargin,
} from "./counter.ts";

export const ESTIMATOR_ID = UPPER_BOUND_ESTIMATOR_ID;
export const COLLAPSE_POLICY_ID = "collapse-oldest-complete-bundle-v1";

/** One executed tool call as the next model call sees it. */
export interface ToolExchange {
  call: ToolCall;
  /** The [TL-3] projection (≤ 4096 bytes, or a receipt). */
  projection: string;
  /** The model call whose response asked for it (calls of one response render together). */
  response?: number;
  /** Stable tool id, canonical result bytes and digest: what a collapse receipt names. */
  toolId: string;
  resultBytes: number;
  resultDigest: string;
}

export const RESULT_COLLAPSE_POLICY_ID = "collapse-oldest-turn-tool-result-v1";

/** The content-free receipt that replaces a collapsed tool result [CX-10]. */
export function resultReceipt(x: ToolExchange): string {
  return `[agent-builder context receipt] tool result collapsed to fit the model window: ` +
    `call_id=${x.call.id} tool=${x.toolId} bytes=${x.resultBytes} digest=${x.resultDigest} ` +
    `policy=${RESULT_COLLAPSE_POLICY_ID}`;
}

/** The exchanges with the oldest `n` results replaced by their receipts. */
export function collapseResults(
  exchanges: readonly ToolExchange[],
  n: number,
): ToolExchange[] {
  return exchanges.map((x, i) => {
    if (i >= n) return x;
    const r = resultReceipt(x);
    // A result already smaller than its receipt stays as it is.
    return utf8Bytes(r) < utf8Bytes(x.projection) ? { ...x, projection: r } : x;
  });
}

export interface CollapseReceipt {
  turn_ids: string[];
  bundle_digests: Digest[];
  renderer: string;
  policy: string;
  digest: Digest;
}

export type Admission =
  | {
    ok: true;
    messages: ChatMessage[];
    tools: ProviderTool[];
    estimate: number;
    keptBundles: number;
    receipt: CollapseReceipt | null;
    /** The exchanges as sent: `collapsedResults` of the oldest replaced by receipts [CX-10]. */
    exchanges: readonly ToolExchange[];
    collapsedResults: number;
  }
  | { ok: false; code: "model_context_limit"; estimate: number };

export interface AdmitOptions {
  exchanges: readonly ToolExchange[];
  /** After the last permitted tool call: no provider tools, finalization marker. */
  narrowed: boolean;
}

export function makeReceipt(collapsed: readonly PlannedBundle[]): CollapseReceipt {
  const turn_ids = collapsed.map((b) => b.turnId);
  const bundle_digests = collapsed.map((b) => b.digest);
  const digest = domainDigest(
    "agent-builder/collapse-receipt/v1",
    canonicalJson({ turn_ids, bundle_digests, renderer: RENDERER_ID, policy: COLLAPSE_POLICY_ID }),
  );
  return { turn_ids, bundle_digests, renderer: RENDERER_ID, policy: COLLAPSE_POLICY_ID, digest };
}

/** The instruction section as rendered into the system message. */
export function instructionsText(instr: string): string {
  return `Agent instructions (agent-builder.md):\n${instr}`;
}

/** The content-free line naming the Turns beyond the history read bound. */
export function omittedText(plan: ContextPlan): string | null {
  if (!plan.omitted) return null;
  return `[agent-builder context receipt] ${plan.omitted.count} older completed turn(s) are ` +
    `beyond the history read bound and were omitted (receipt ${plan.omitted.digest}).`;
}

/** The content-free line naming the collapsed Turns. */
export function receiptText(receipt: CollapseReceipt): string {
  return `[agent-builder context receipt] ${receipt.turn_ids.length} earlier completed turn(s) ` +
    `were collapsed to fit the model window (receipt ${receipt.digest}).`;
}

function systemText(plan: ContextPlan, receipt: CollapseReceipt | null): string {
  const parts = [sectionText(plan, "platform")!];
  const instr = sectionText(plan, "instructions");
  if (instr !== null) parts.push(instructionsText(instr));
  parts.push(sectionText(plan, "environment")!);
  const git = sectionText(plan, "git");
  if (git !== null) parts.push(git);
  const summary = sectionText(plan, "history_summary");
  if (summary !== null) parts.push(summary);
  if (plan.omitted) {
    // Content-free: a count and a digest of the omitted Turn ids only.
    parts.push(omittedText(plan)!);
  }
  if (receipt) {
    // Content-free: counts and a digest only, never the collapsed text.
    parts.push(receiptText(receipt));
  }
  return parts.join("\n\n");
}

/** Renders the messages of one provider call with the given kept history. */
export function render(
  plan: ContextPlan,
  kept: readonly PlannedBundle[],
  receipt: CollapseReceipt | null,
  opts: AdmitOptions,
): ChatMessage[] {
  const msgs: ChatMessage[] = [{ role: "system", content: systemText(plan, receipt) }];
  for (const b of kept) {
    msgs.push({ role: "user", content: b.user }, { role: "assistant", content: b.assistant });
  }
  msgs.push({ role: "user", content: sectionText(plan, "user_message")! });
  // The calls of one model response form one assistant message, then their results in order.
  for (let i = 0; i < opts.exchanges.length;) {
    const batch = opts.exchanges[i].response;
    let j = i + 1;
    while (
      j < opts.exchanges.length && batch !== undefined && opts.exchanges[j].response === batch
    ) j++;
    const group = opts.exchanges.slice(i, j);
    msgs.push({ role: "assistant", content: "", tool_calls: group.map((x) => x.call) });
    for (const x of group) {
      msgs.push({
        role: "tool",
        content: x.projection,
        tool_call_id: x.call.id,
        tool_name: x.call.name,
      });
    }
    i = j;
  }
  if (opts.narrowed) msgs.push({ role: "system", content: FINALIZATION_MARKER });
  return msgs;
}

/**
 * The token estimate of a request: the conservative upper bound [CX-3], or
 * with a verified tokenizer the exact count plus its 2 % margin [CX-7].
 */
export function estimateTokens(
  messages: readonly ChatMessage[],
  tools: readonly unknown[],
  counter: TokenCounter = UPPER_BOUND_COUNTER,
): number {
  const c = (t: string) => counter.count(t);
  let n = CONTEXT_TEMPLATE_RESERVE_TOKENS;
  for (const m of messages) {
    n += c(m.role) + c(m.content);
    if (m.role === "assistant" && m.tool_calls) n += c(JSON.stringify(m.tool_calls));
    if (m.role === "tool") n += c(m.tool_name);
  }
  if (tools.length > 0) n += c(JSON.stringify(tools));
  return withMargin(counter, n);
}

/** Threshold at which collapse starts: 80 % of the budget. */
export function collapseThreshold(budget: number): number {
  return Math.floor((budget * CONTEXT_COLLAPSE_PERCENT) / 100);
}

/**
 * Admits (and if needed collapses) one provider call. Pure and deterministic.
 * Order: the oldest complete history bundles first (the latest is kept), then
 * the oldest tool results of the current Turn (the newest is kept).
 */
export function admit(plan: ContextPlan, opts: AdmitOptions): Admission {
  const tools = providerTools(plan.toolset, opts.narrowed) as unknown as ProviderTool[];
  const threshold = collapseThreshold(plan.budget);
  // `/compact` starts with everything but the latest bundle collapsed.
  let dropped = plan.compact ? Math.max(0, plan.history.length - 1) : 0;
  let collapsed = 0;
  const collapsible = Math.max(0, opts.exchanges.length - 1);
  for (;;) {
    const kept = plan.history.slice(dropped);
    const receipt = dropped > 0 ? makeReceipt(plan.history.slice(0, dropped)) : null;
    const exchanges = collapsed > 0 ? collapseResults(opts.exchanges, collapsed) : opts.exchanges;
    const messages = render(plan, kept, receipt, { ...opts, exchanges });
    const estimate = estimateTokens(messages, tools, plan.counter);
    if (estimate >= threshold) {
      // Keep at least the latest complete bundle, then the newest tool result.
      if (kept.length > 1) {
        dropped++;
        continue;
      }
      if (collapsed < collapsible) {
        collapsed++;
        continue;
      }
    }
    if (estimate > plan.budget) return { ok: false, code: "model_context_limit", estimate };
    return {
      ok: true,
      messages,
      tools,
      estimate,
      keptBundles: kept.length,
      receipt,
      exchanges,
      // Results actually sent as receipts (a result smaller than its receipt stays whole).
      collapsedResults: exchanges.filter((x, i) => x !== opts.exchanges[i]).length,
    };
  }
}

/**
 * Every text the estimate and the breakdown of this plan's next call count:
 * what an exact counter must have primed for an exact answer [CX-7].
 */
export function countedTexts(plan: ContextPlan, opts: AdmitOptions): string[] {
  const out = ["system", "user", "assistant", "tool", "\n\n"];
  const tools = providerTools(plan.toolset, opts.narrowed);
  if (tools.length > 0) out.push(JSON.stringify(tools));
  for (const m of render(plan, plan.history, null, opts)) {
    out.push(m.content);
    if (m.role === "system") out.push(...m.content.split("\n\n"));
    if (m.role === "assistant" && m.tool_calls) out.push(JSON.stringify(m.tool_calls));
    if (m.role === "tool") out.push(m.tool_name);
  }
  const instr = sectionText(plan, "instructions");
  if (instr !== null) out.push(instructionsText(instr));
  for (const name of ["environment", "git", "history_summary", "user_message"] as const) {
    const t = sectionText(plan, name);
    if (t !== null) out.push(t);
  }
  return out;
}
