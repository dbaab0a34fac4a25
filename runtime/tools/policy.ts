/**
 * Tool policy → EffectiveToolSet [TL-1].
 *
 * What this file enforces: deny precedence — the strictest of the catalog
 * default, the operator rules and the Agent rules wins (deny > ask > allow);
 * a tool the catalog does not have can never be enabled by a rule;
 * a non-interactive Run turns every `ask` into `deny`; skills are never
 * `allow` (alwaysAsk) [LC-3]. The result is an
 * immutable, digest-pinned manifest used for the provider tools, the
 * ContextPlan, the Worker snapshot and argument validation by the executor.
 * Also validates model-chosen arguments against the controlled schema.
 */
import { type Digest, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { providerToolSchema, type ToolCatalog, type ToolSpec } from "./catalog.ts";

export type PolicyDecision = "allow" | "ask" | "deny";

export interface PolicyRule {
  tool_id: string;
  decision: PolicyDecision;
}

export interface EffectiveTool {
  spec: ToolSpec;
  decision: "allow" | "ask";
}

export interface EffectiveToolSet {
  readonly id: string;
  readonly digest: Digest;
  readonly tools: readonly EffectiveTool[];
  /** Tools the policy removed, with the reason (for inspection, never sent to the model). */
  readonly denied: readonly { tool_id: string; reason: "policy_deny" | "non_interactive_ask" }[];
  /** The canonical manifest text the digest covers. */
  readonly manifest: string;
}

const RANK: Record<PolicyDecision, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * Tools no rule can make `allow` [LC-3]: a skill runs an operator-installed
 * script, so every call is approved one by one. A rule may still deny it.
 */
export function alwaysAsk(toolId: string): boolean {
  return toolId.startsWith("skill/");
}

/** The strictest decision wins. */
export function strictest(a: PolicyDecision, b: PolicyDecision): PolicyDecision {
  return RANK[a] >= RANK[b] ? a : b;
}

export interface ResolveOptions {
  catalog: ToolCatalog;
  rules: readonly PolicyRule[];
  /** Whether an operator can answer an approval during this Run. */
  interactive: boolean;
  /** Manifest id (the Run's toolset id). */
  id: string;
}

/** Resolves the EffectiveToolSet for one Run. Pure. */
export function resolveToolSet(opts: ResolveOptions): EffectiveToolSet {
  const tools: EffectiveTool[] = [];
  const denied: EffectiveToolSet["denied"][number][] = [];
  for (const spec of opts.catalog.specs) {
    let d: PolicyDecision = spec.default_policy;
    // Rules can only tighten or loosen within the catalog; deny anywhere is final.
    let ruleDecision: PolicyDecision | null = null;
    for (const r of opts.rules) {
      if (r.tool_id !== spec.id) continue;
      ruleDecision = ruleDecision === null ? r.decision : strictest(ruleDecision, r.decision);
    }
    if (ruleDecision === "deny") d = "deny";
    else if (ruleDecision !== null) d = strictest(d, ruleDecision);
    if (d === "allow" && alwaysAsk(spec.id)) d = "ask";
    if (d === "deny") {
      denied.push({ tool_id: spec.id, reason: "policy_deny" });
      continue;
    }
    if (d === "ask" && !opts.interactive) {
      denied.push({ tool_id: spec.id, reason: "non_interactive_ask" });
      continue;
    }
    tools.push({ spec, decision: d });
  }
  const manifest = canonicalJson(tools.map((t) => ({ decision: t.decision, spec: t.spec })));
  return Object.freeze({
    id: opts.id,
    digest: domainDigest("agent-builder/toolset/v3", manifest),
    tools: Object.freeze(tools),
    denied: Object.freeze(denied),
    manifest,
  });
}

/** Provider `tools` for a call; an empty list once the ToolSet narrowed. */
export function providerTools(set: EffectiveToolSet, narrowed: boolean): Record<string, unknown>[] {
  return narrowed ? [] : set.tools.map((t) => providerToolSchema(t.spec));
}

/** One validated argument value. */
export type ToolArgValue = string | number | boolean | string[];
export type ToolArgs = Record<string, ToolArgValue>;

export type ArgsCheck =
  | { ok: true; args: ToolArgs }
  | { ok: false };

/** Validates model-chosen arguments against the spec's controlled schema. */
export function validateToolArgs(spec: ToolSpec, raw: unknown): ArgsCheck {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { ok: false };
  if (utf8Bytes(JSON.stringify(raw)) > spec.input_max_bytes) return { ok: false };
  const out: ToolArgs = {};
  for (const key of Object.keys(raw)) {
    if (!Object.hasOwn(spec.args, key)) return { ok: false };
  }
  for (const [name, a] of Object.entries(spec.args)) {
    const v = (raw as Record<string, unknown>)[name];
    if (v === undefined) {
      if (a.required) return { ok: false };
      continue;
    }
    if (a.type === "string") {
      if (typeof v !== "string" || utf8Bytes(v) > a.max_bytes || !v.isWellFormed()) {
        return { ok: false };
      }
    } else if (a.type === "integer") {
      if (typeof v !== "number" || !Number.isInteger(v) || v < a.minimum || v > a.maximum) {
        return { ok: false };
      }
    } else if (a.type === "string_array") {
      if (!Array.isArray(v) || v.length > a.max_items) return { ok: false };
      for (const item of v) {
        if (typeof item !== "string" || utf8Bytes(item) > a.item_max_bytes) return { ok: false };
        if (!item.isWellFormed()) return { ok: false };
      }
      out[name] = [...v as string[]];
      continue;
    } else if (typeof v !== "boolean") return { ok: false };
    out[name] = v as string | number | boolean;
  }
  return { ok: true, args: out };
}
