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
 * `model_context_limit`. Nothing here touches the durable transcript.
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

export const ESTIMATOR_ID = "utf8-bytes-upper-bound-v1";
export const COLLAPSE_POLICY_ID = "collapse-oldest-complete-bundle-v1";

/** One executed tool call as the next model call sees it. */
export interface ToolExchange {
  call: ToolCall;
  /** The [TL-3] projection (≤ 4096 bytes, or a receipt). */
  projection: string;
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

function systemText(plan: ContextPlan, receipt: CollapseReceipt | null): string {
  const parts = [sectionText(plan, "platform")!];
  const instr = sectionText(plan, "instructions");
  if (instr !== null) parts.push(`Agent instructions (agent-builder.md):\n${instr}`);
  parts.push(sectionText(plan, "environment")!);
  if (plan.omitted) {
    // Content-free: a count and a digest of the omitted Turn ids only.
    parts.push(
      `[agent-builder context receipt] ${plan.omitted.count} older completed turn(s) are ` +
        `beyond the history read bound and were omitted (receipt ${plan.omitted.digest}).`,
    );
  }
  if (receipt) {
    // Content-free: counts and a digest only, never the collapsed text.
    parts.push(
      `[agent-builder context receipt] ${receipt.turn_ids.length} earlier completed turn(s) ` +
        `were collapsed to fit the model window (receipt ${receipt.digest}).`,
    );
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
  for (const x of opts.exchanges) {
    msgs.push({ role: "assistant", content: "", tool_calls: [x.call] });
    msgs.push({
      role: "tool",
      content: x.projection,
      tool_call_id: x.call.id,
      tool_name: x.call.name,
    });
  }
  if (opts.narrowed) msgs.push({ role: "system", content: FINALIZATION_MARKER });
  return msgs;
}

/** The conservative token upper bound of a request [CX-3]. */
export function estimateTokens(
  messages: readonly ChatMessage[],
  tools: readonly unknown[],
): number {
  let n = CONTEXT_TEMPLATE_RESERVE_TOKENS;
  for (const m of messages) {
    n += utf8Bytes(m.role) + utf8Bytes(m.content);
    if (m.role === "assistant" && m.tool_calls) n += utf8Bytes(JSON.stringify(m.tool_calls));
    if (m.role === "tool") n += utf8Bytes(m.tool_name);
  }
  if (tools.length > 0) n += utf8Bytes(JSON.stringify(tools));
  return n;
}

/** Threshold at which collapse starts: 80 % of the budget. */
export function collapseThreshold(budget: number): number {
  return Math.floor((budget * CONTEXT_COLLAPSE_PERCENT) / 100);
}

/** Admits (and if needed collapses) one provider call. Pure and deterministic. */
export function admit(plan: ContextPlan, opts: AdmitOptions): Admission {
  const tools = providerTools(plan.toolset, opts.narrowed) as unknown as ProviderTool[];
  const threshold = collapseThreshold(plan.budget);
  // `/compact` starts with everything but the latest bundle collapsed.
  let dropped = plan.compact ? Math.max(0, plan.history.length - 1) : 0;
  for (;;) {
    const kept = plan.history.slice(dropped);
    const receipt = dropped > 0 ? makeReceipt(plan.history.slice(0, dropped)) : null;
    const messages = render(plan, kept, receipt, opts);
    const estimate = estimateTokens(messages, tools);
    // Keep at least the latest complete bundle.
    if (estimate >= threshold && kept.length > 1) {
      dropped++;
      continue;
    }
    if (estimate > plan.budget) return { ok: false, code: "model_context_limit", estimate };
    return { ok: true, messages, tools, estimate, keptBundles: kept.length, receipt };
  }
}
