/**
 * Per-Agent policy as a service [TL-9, TL-10]: read, replace and extend an
 * Agent's rules, the policy view (every tool of the Agent's catalog with its
 * effective decision and why), and the decision of one call at the time it
 * is made.
 *
 * What this file enforces:
 * - a replacement is checked whole (runtime/tools/policy.ts `checkPolicy`):
 *   more than POLICY_RULES_MAX rules, a duplicate, an invalid target or
 *   prefix, or an allow/ask inside a platform deny is refused with its code
 *   and NOTHING is written;
 * - every change (PUT or "Always allow") is written together with its audit
 *   row (what was added and removed, and by what) in one transaction;
 * - decisions read the Agent's CURRENT rules, so a rule added by "Always
 *   allow" applies to the very next call and a new deny applies at once;
 * - a stored document that does not parse fails closed (the Run or the view
 *   refuses), never silently as "no rules".
 */
import { z } from "zod";
import type { DatabaseSync } from "node:sqlite";
import type { AgentService } from "../agents/service.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { POLICY_AUDIT_SHOWN_MAX, POLICY_RULES_MAX } from "../limits.ts";
import { type PolicyResponseJson, PolicyRuleSchema, type PolicyToolJson } from "../protocol/api.ts";
import { listPolicyAudit, readPolicyJson, writePolicyJson } from "../store/policy_store.ts";
import type { ToolCatalog, ToolSpec } from "./catalog.ts";
import {
  type AgentRule,
  type CallFacts,
  checkPolicy,
  decideCall,
  type Decided,
  decideTool,
  type PlatformRule,
  platformRules,
  ruleKey,
  ruleTarget,
  scopeText,
} from "./policy.ts";

export interface PolicyServiceOptions {
  registryDb: DatabaseSync;
  agents: Pick<AgentService, "requireUsable">;
  /** The built-in catalog. */
  catalog: ToolCatalog;
  /** Whether a runner executes the exec tools (else the platform denies them). */
  runner: boolean;
  /** The Agent's enabled extension tools [LC-5]. @default none */
  extensionSpecs?: (agentId: string) => ToolSpec[];
  log: Logger;
  /** @default Date.now */
  now?: () => number;
}

const StoredRules = z.array(PolicyRuleSchema).max(POLICY_RULES_MAX);
const AuditDetail = z.object({
  source: z.enum(["api", "always_allow"]),
  added: z.array(PolicyRuleSchema),
  removed: z.array(PolicyRuleSchema),
}).strict();

export type PolicyService = ReturnType<typeof createPolicyService>;

/** Canonical field order, and no `path_prefix: undefined` keys. */
function clean(r: AgentRule): AgentRule {
  return r.path_prefix === undefined
    ? { tool: r.tool, decision: r.decision }
    : { tool: r.tool, decision: r.decision, path_prefix: r.path_prefix };
}

const sameRule = (a: AgentRule, b: AgentRule) =>
  ruleKey(a) === ruleKey(b) && a.decision === b.decision;

export function createPolicyService(o: PolicyServiceOptions) {
  const now = o.now ?? Date.now;
  const platform: readonly PlatformRule[] = Object.freeze(platformRules({ runner: o.runner }));
  const builtinIds: ReadonlySet<string> = new Set(o.catalog.specs.map((s) => s.id));

  function stored(agentId: string): { json: string | null; rules: AgentRule[] } {
    const json = readPolicyJson(o.registryDb, agentId);
    if (json === null) return { json, rules: [] };
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      parsed = undefined;
    }
    const r = StoredRules.safeParse(parsed);
    if (!r.success) {
      o.log.error("policy.stored_invalid", { agent_id: agentId });
      throw new AppError("internal_error", "stored policy does not parse");
    }
    return { json, rules: r.data.map(clean) };
  }

  function rulesOf(agentId: string): AgentRule[] {
    return stored(agentId).rules;
  }

  function write(
    agentId: string,
    before: { json: string | null; rules: AgentRule[] },
    next: AgentRule[],
    source: "api" | "always_allow",
  ): void {
    const added = next.filter((r) => !before.rules.some((b) => sameRule(b, r)));
    const removed = before.rules.filter((b) => !next.some((r) => sameRule(b, r)));
    const detail = JSON.stringify({ source, added, removed });
    if (
      !writePolicyJson(o.registryDb, agentId, before.json, JSON.stringify(next), {
        at: now(),
        detail,
      })
    ) throw new AppError("agent_not_found");
  }

  function check(rules: AgentRule[]): void {
    const c = checkPolicy(rules, platform, builtinIds);
    if (!c.ok) throw new AppError(c.code, `rule ${c.index}`);
  }

  function catalogOf(agentId: string): ToolSpec[] {
    return [...o.catalog.specs, ...(o.extensionSpecs?.(agentId) ?? [])];
  }

  function why(d: Decided, rules: readonly AgentRule[]): string {
    if (d.reason === "platform deny") return d.platform!.reason;
    if (d.reason === "Agent rule") return `rule: ${scopeText(rules[d.ruleIndex!])}`;
    return "catalog default";
  }

  function toolRow(spec: ToolSpec, rules: readonly AgentRule[]): PolicyToolJson {
    const d = decideTool(spec.id, spec.default_policy, rules, platform);
    const overridden = d.reason === "platform deny";
    const scoped: PolicyToolJson["scoped"] = [];
    for (const p of platform) {
      if (p.tool !== spec.id || (p.path_prefix === undefined && p.component === undefined)) {
        continue;
      }
      scoped.push({
        scope: scopeText(p),
        decision: "deny",
        reason: "platform deny",
        rule_index: null,
      });
    }
    rules.forEach((r, i) => {
      const t = ruleTarget(r.tool, builtinIds);
      if (!t || t.kind === "command" || r.path_prefix === undefined) return;
      const applies = t.kind === "tool"
        ? t.tool === spec.id
        : spec.id.startsWith(`mcp/${t.server}/`);
      if (!applies) return;
      scoped.push({
        scope: scopeText(r),
        decision: overridden ? "deny" : r.decision,
        reason: overridden ? "platform deny" : "Agent rule",
        rule_index: i,
      });
    });
    return {
      tool: spec.id,
      kind: "tool",
      description: spec.description,
      default_decision: spec.default_policy,
      decision: d.decision,
      reason: d.reason,
      why: why(d, rules),
      rule_index: d.ruleIndex,
      scoped,
    };
  }

  function view(agentId: string): PolicyResponseJson {
    o.agents.requireUsable(agentId);
    const rules = rulesOf(agentId);
    const specs = catalogOf(agentId);
    const tools = specs.map((s) => toolRow(s, rules));
    const command = o.catalog.get("exec/command");
    rules.forEach((r, i) => {
      const t = ruleTarget(r.tool, builtinIds);
      if (t?.kind === "command" && command) {
        const d = decideCall(
          { toolId: "exec/command", defaultDecision: command.default_policy, argv0: t.argv0 },
          rules,
          platform,
        );
        tools.push({
          tool: r.tool,
          kind: "command",
          description: `exec/command running ${t.argv0}`,
          default_decision: command.default_policy,
          decision: d.decision,
          reason: d.reason,
          why: why(d, rules),
          rule_index: d.ruleIndex ?? i,
          scoped: [],
        });
      } else if (t?.kind === "mcp_server") {
        const offered = specs.filter((s) => s.id.startsWith(`mcp/${t.server}/`)).length;
        tools.push({
          tool: r.tool,
          kind: "mcp_server",
          description: `every tool of MCP server ${t.server} (${offered} offered to this Agent)`,
          default_decision: "ask",
          decision: r.decision,
          reason: "Agent rule",
          why: `rule: ${scopeText(r)}`,
          rule_index: i,
          scoped: [],
        });
      }
    });
    const audit = listPolicyAudit(o.registryDb, agentId, POLICY_AUDIT_SHOWN_MAX).flatMap((a) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(a.detail ?? "");
      } catch {
        return [];
      }
      const d = AuditDetail.safeParse(parsed);
      return d.success ? [{ at: a.at, ...d.data }] : [];
    });
    return {
      rules,
      platform: platform.map((p) => ({ scope: scopeText(p), reason: p.reason })),
      tools,
      audit,
      rules_max: POLICY_RULES_MAX,
    };
  }

  return {
    platform,
    rulesOf,
    view,

    /** PUT: replaces the rules whole, or refuses with nothing changed. */
    put(agentId: string, rules: AgentRule[]): PolicyResponseJson {
      o.agents.requireUsable(agentId);
      const next = rules.map(clean);
      check(next);
      let before: { json: string | null; rules: AgentRule[] };
      try {
        before = stored(agentId);
      } catch (err) {
        // A document that no longer parses is replaced whole (its audit names no removals).
        if (!(err instanceof AppError)) throw err;
        before = { json: readPolicyJson(o.registryDb, agentId), rules: [] };
      }
      write(agentId, before, next, "api");
      return view(agentId);
    },

    /**
     * "Always allow" [TL-10]: adds the narrowed allow rule (an existing rule on the same scope
     * takes its decision), or refuses with nothing changed. Returns the rule.
     */
    addAlwaysAllow(agentId: string, rule: AgentRule): AgentRule {
      const before = stored(agentId);
      const r = clean(rule);
      const at = before.rules.findIndex((x) => ruleKey(x) === ruleKey(r));
      if (at >= 0 && before.rules[at].decision === r.decision) return r;
      const next = at >= 0 ? before.rules.map((x, i) => i === at ? r : x) : [...before.rules, r];
      check(next);
      write(agentId, before, next, "always_allow");
      return r;
    },

    /** The decision of one call, on the Agent's rules as they are now. */
    decide(agentId: string, facts: CallFacts): Decided {
      return decideCall(facts, rulesOf(agentId), platform);
    },

    /** The platform's denies and the Agent's rules, for the Run's EffectiveToolSet. */
    toolsetPolicy(agentId: string): { rules: AgentRule[]; platform: readonly PlatformRule[] } {
      return { rules: rulesOf(agentId), platform };
    },
  };
}
