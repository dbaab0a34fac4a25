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
 *
 * Per-Agent policy [TL-9, TL-10]: rules name a tool id, `exec/command:<argv0>`
 * or `mcp/<server>/*`, optionally narrowed to a workspace directory
 * (`path_prefix`). The decision of one call is: a matching platform deny,
 * else the strictest matching Agent rule, else the catalog default — with the
 * reason. A narrowed allow/ask matches only when EVERY path the call touches
 * lies inside the prefix; a narrowed deny (platform or Agent) matches when ANY
 * does, and when the paths are not known. Paths are matched as the canonical
 * workspace-relative paths the tools themselves use (`..`, `.`, empty and
 * absolute components are not canonical, so they never match an allow); the
 * tools open every component with O_NOFOLLOW, so a symlink cannot carry a
 * matched path elsewhere. No rule may relax a platform deny.
 */
import { type Digest, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { providerToolSchema, type ToolCatalog, type ToolSpec } from "./catalog.ts";
import type { PolicyRuleJson } from "../protocol/api.ts";
import { canonicalDirPath, canonicalPath } from "./path.ts";
import { POLICY_RULES_MAX, TOOLSET_MANIFESTS_KEPT } from "../limits.ts";
import type { ErrorCode } from "../errors.ts";

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
  /**
   * The platform's denies and the Agent's rules [TL-9]: when given, each tool starts from its
   * tool-level decision (platform deny > Agent rule > catalog default) instead of the default.
   * @default none
   */
  agent?: { rules: readonly AgentRule[]; platform: readonly PlatformRule[] };
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
    let d: PolicyDecision = opts.agent
      ? decideTool(spec.id, spec.default_policy, opts.agent.rules, opts.agent.platform).decision
      : spec.default_policy;
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
  const { manifest, digest } = manifestOf(tools);
  return Object.freeze({
    id: opts.id,
    digest,
    tools: Object.freeze(tools),
    denied: Object.freeze(denied),
    manifest,
  });
}

/** Small numbers naming sealed specs (deep-frozen by `sealCatalog`), keys of the memo below. */
const specNumbers = new WeakMap<ToolSpec, number>();
let specsNumbered = 0;
/**
 * The manifests and digests of the latest tool lists [PF-1]: every Run of an Agent resolves the
 * same list, and its canonical JSON and digest (~0.4 ms before each submit's 202) are a pure
 * function of the (sealed spec, decision) pairs. A list with a spec that is not frozen (not from
 * a sealed catalog) is never remembered.
 */
const manifests = new Map<string, { manifest: string; digest: Digest }>();

function manifestOf(tools: readonly EffectiveTool[]): { manifest: string; digest: Digest } {
  let key: string | null = "";
  for (const t of tools) {
    if (!Object.isFrozen(t.spec)) {
      key = null;
      break;
    }
    let n = specNumbers.get(t.spec);
    if (n === undefined) specNumbers.set(t.spec, n = ++specsNumbered);
    key += `${n}:${t.decision},`;
  }
  const known = key === null ? undefined : manifests.get(key);
  if (known) return known;
  const manifest = canonicalJson(tools.map((t) => ({ decision: t.decision, spec: t.spec })));
  const made = { manifest, digest: domainDigest("agent-builder/toolset/v3", manifest) };
  if (key !== null) {
    manifests.set(key, made);
    if (manifests.size > TOOLSET_MANIFESTS_KEPT) manifests.delete(manifests.keys().next().value!);
  }
  return made;
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

// ---------------------------------------------------------------- per-Agent rules [TL-9]

export type AgentRule = PolicyRuleJson;

/** Why a decision is what it is (shown in the policy view). */
export type DecisionReason = "platform deny" | "Agent rule" | "default";

/**
 * One of the platform's own denies: a whole tool, a directory of it (`path_prefix`), or every
 * path with a component of that name (`component`, e.g. `.git` at any depth).
 */
export interface PlatformRule {
  tool: string;
  path_prefix?: string;
  component?: string;
  reason: string;
}

/** Tools whose calls name workspace paths a `path_prefix` can narrow. */
export const PATH_TOOLS: ReadonlySet<string> = new Set([
  "file/stat",
  "file/read_text",
  "file/glob",
  "file/grep",
  "file/edit",
  "file/write",
  "exec/apply",
  "document/extract_text",
]);

const GIT_REASON =
  "git metadata: hooks and config there run code outside the sandbox when git is used";

/** The platform's denies for this server [TL-9]: fixed, plus the exec tools without a runner. */
export function platformRules(o: { runner: boolean }): PlatformRule[] {
  const out: PlatformRule[] = ["file/edit", "file/write", "exec/apply"].map((tool) => ({
    tool,
    component: ".git",
    reason: GIT_REASON,
  }));
  if (!o.runner) {
    for (const tool of ["exec/run", "exec/command", "exec/apply"]) {
      out.push({ tool, reason: "no runner sandbox on this server" });
    }
  }
  return out;
}

type Target =
  | { kind: "tool"; tool: string }
  | { kind: "command"; argv0: string }
  | { kind: "mcp_server"; server: string };

const ARGV0_RE = /^[A-Za-z0-9._+-]{1,255}$/;
const MCP_SERVER_RULE_RE = /^mcp\/([a-z][a-z0-9-]{0,15})\/\*$/;
const MCP_TOOL_RE = /^mcp\/[a-z][a-z0-9-]{0,15}\/[A-Za-z0-9_-]{1,64}$/;

/** What a rule's `tool` names; null when it names nothing a rule may name. */
export function ruleTarget(tool: string, builtinIds: ReadonlySet<string>): Target | null {
  if (tool.startsWith("exec/command:")) {
    const argv0 = tool.slice("exec/command:".length);
    return ARGV0_RE.test(argv0) && argv0 !== "." && argv0 !== ".."
      ? { kind: "command", argv0 }
      : null;
  }
  const m = MCP_SERVER_RULE_RE.exec(tool);
  if (m) return { kind: "mcp_server", server: m[1] };
  if (MCP_TOOL_RE.test(tool) || builtinIds.has(tool)) return { kind: "tool", tool };
  return null;
}

function targetOf(tool: string): Target | null {
  // At decision time the rules were validated already; built-in ids need no check here.
  return ruleTarget(tool, { has: () => true } as unknown as ReadonlySet<string>);
}

function targetApplies(t: Target, toolId: string): boolean {
  if (t.kind === "tool") return t.tool === toolId;
  if (t.kind === "command") return toolId === "exec/command";
  return toolId.startsWith(`mcp/${t.server}/`);
}

/** Whether canonical `path` lies in the directory `prefix` ("." is the whole workspace). */
export function withinPrefix(path: string, prefix: string): boolean {
  return prefix === "." || path === prefix || path.startsWith(`${prefix}/`);
}

function hasComponent(path: string, name: string): boolean {
  return path.split("/").includes(name);
}

/** What of a call the policy looks at. */
export interface CallFacts {
  toolId: string;
  /** The catalog's default decision of the tool. */
  defaultDecision: PolicyDecision;
  /** exec/command: argv[0]. */
  argv0?: string;
  /**
   * Canonical workspace-relative paths the call touches; undefined when the tool names none,
   * null when they are not known (not canonical): narrowed allows never match then.
   */
  paths?: readonly string[] | null;
  /** Why `paths` is null: the code the tool itself would refuse the path with. */
  pathCode?: ErrorCode;
}

export interface Decided {
  decision: PolicyDecision;
  reason: DecisionReason;
  /** The Agent rule that decided, by index. */
  ruleIndex: number | null;
  /** The platform rule that decided. */
  platform: PlatformRule | null;
}

function pathsMatch(
  kind: "deny" | "loosen",
  paths: readonly string[] | null | undefined,
  inScope: (p: string) => boolean,
): boolean {
  if (paths === undefined) return false;
  if (paths === null) return kind === "deny";
  if (paths.length === 0) return false;
  return kind === "deny" ? paths.some(inScope) : paths.every(inScope);
}

function platformMatches(p: PlatformRule, f: CallFacts): boolean {
  if (p.tool !== f.toolId) return false;
  if (p.path_prefix !== undefined) {
    return pathsMatch("deny", f.paths, (x) => withinPrefix(x, p.path_prefix!));
  }
  if (p.component !== undefined) {
    return pathsMatch("deny", f.paths, (x) => hasComponent(x, p.component!));
  }
  return true;
}

function ruleMatches(r: AgentRule, f: CallFacts): boolean {
  const t = targetOf(r.tool);
  if (!t || !targetApplies(t, f.toolId)) return false;
  if (t.kind === "command" && f.argv0 !== t.argv0) return false;
  if (r.path_prefix === undefined) return true;
  return pathsMatch(
    r.decision === "deny" ? "deny" : "loosen",
    f.paths,
    (x) => withinPrefix(x, r.path_prefix!),
  );
}

function decideWith(
  f: CallFacts,
  rules: readonly AgentRule[],
  platform: readonly PlatformRule[],
  matches: (r: AgentRule, f: CallFacts) => boolean,
  platformMatch: (p: PlatformRule, f: CallFacts) => boolean,
): Decided {
  const p = platform.find((x) => platformMatch(x, f));
  if (p) return { decision: "deny", reason: "platform deny", ruleIndex: null, platform: p };
  let best: { d: PolicyDecision; i: number } | null = null;
  rules.forEach((r, i) => {
    if (!matches(r, f)) return;
    if (best === null || RANK[r.decision] > RANK[best.d]) best = { d: r.decision, i };
  });
  // A skill is never `allow`, whatever a rule says [LC-3].
  const cap = (d: PolicyDecision): PolicyDecision =>
    d === "allow" && alwaysAsk(f.toolId) ? "ask" : d;
  if (best === null) {
    return { decision: cap(f.defaultDecision), reason: "default", ruleIndex: null, platform: null };
  }
  const b = best as { d: PolicyDecision; i: number };
  return { decision: cap(b.d), reason: "Agent rule", ruleIndex: b.i, platform: null };
}

/**
 * The decision of one call: a matching platform deny, else the strictest matching Agent rule
 * (deny > ask > allow), else the default. Pure.
 */
export function decideCall(
  f: CallFacts,
  rules: readonly AgentRule[],
  platform: readonly PlatformRule[],
): Decided {
  return decideWith(f, rules, platform, ruleMatches, platformMatches);
}

/**
 * The decision of a tool as a whole (whether it is offered, what the view shows first): only
 * platform and Agent rules that cover every call of it (no path, no program) count.
 */
export function decideTool(
  toolId: string,
  defaultDecision: PolicyDecision,
  rules: readonly AgentRule[],
  platform: readonly PlatformRule[],
): Decided {
  return decideWith(
    { toolId, defaultDecision },
    rules,
    platform,
    (r) => {
      const t = targetOf(r.tool);
      return t !== null && t.kind !== "command" && targetApplies(t, toolId) &&
        r.path_prefix === undefined;
    },
    (p) => p.tool === toolId && p.path_prefix === undefined && p.component === undefined,
  );
}

/** A stable key of what a rule covers (two rules with one key are duplicates). */
export function ruleKey(r: AgentRule): string {
  return `${r.tool}\u0000${r.path_prefix ?? ""}`;
}

export type PolicyCheck = { ok: true } | { ok: false; code: ErrorCode; index: number };

/**
 * Validates a whole policy [TL-9]: ≤ POLICY_RULES_MAX rules, each naming something a rule may
 * name, `path_prefix` only on path tools and canonical, no two rules covering the same thing,
 * and no allow/ask inside what the platform denies. Pure.
 */
export function checkPolicy(
  rules: readonly AgentRule[],
  platform: readonly PlatformRule[],
  builtinIds: ReadonlySet<string>,
): PolicyCheck {
  if (rules.length > POLICY_RULES_MAX) {
    return { ok: false, code: "policy_too_many_rules", index: POLICY_RULES_MAX };
  }
  const seen = new Set<string>();
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    const t = ruleTarget(r.tool, builtinIds);
    if (!t) return { ok: false, code: "policy_invalid", index: i };
    if (r.path_prefix !== undefined) {
      if (t.kind !== "tool" || !PATH_TOOLS.has(t.tool)) {
        return { ok: false, code: "policy_invalid", index: i };
      }
      const c = canonicalDirPath(r.path_prefix);
      if (!c.ok || c.path !== r.path_prefix) return { ok: false, code: "policy_invalid", index: i };
    }
    const k = ruleKey(r);
    if (seen.has(k)) return { ok: false, code: "policy_duplicate_rule", index: i };
    seen.add(k);
    if (r.decision !== "deny" && platform.some((p) => relaxes(r, t, p))) {
      return { ok: false, code: "policy_platform_deny", index: i };
    }
  }
  return { ok: true };
}

/** Whether an allow/ask rule lies inside a platform deny (and so would try to relax it). */
function relaxes(r: AgentRule, t: Target, p: PlatformRule): boolean {
  if (!targetApplies(t, p.tool)) return false;
  if (p.path_prefix === undefined && p.component === undefined) return true;
  if (r.path_prefix === undefined) return false;
  if (p.path_prefix !== undefined) return withinPrefix(r.path_prefix, p.path_prefix);
  return hasComponent(r.path_prefix, p.component!);
}

/** The directory a path lies in ("." for the workspace root). */
export function parentDir(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "." : path.slice(0, i);
}

/**
 * The rule "Always allow" adds for a call [TL-10], narrowed: file tools to the target's
 * directory, exec/command to the exact argv[0], an MCP tool to itself, exec/run to itself.
 * null when nothing narrow enough exists (exec/apply writes whatever the change set holds;
 * a path that is not canonical).
 */
export function alwaysAllowRule(f: CallFacts): AgentRule | null {
  if (f.toolId === "exec/command") {
    return f.argv0 !== undefined && ARGV0_RE.test(f.argv0) && f.argv0 !== "." &&
        f.argv0 !== ".."
      ? { tool: `exec/command:${f.argv0}`, decision: "allow" }
      : null;
  }
  if (f.toolId === "exec/apply") return null;
  if (PATH_TOOLS.has(f.toolId)) {
    if (!f.paths || f.paths.length !== 1) return null;
    const p = f.paths[0];
    return { tool: f.toolId, decision: "allow", path_prefix: p === "." ? "." : parentDir(p) };
  }
  if (f.toolId === "exec/run" || MCP_TOOL_RE.test(f.toolId)) {
    return { tool: f.toolId, decision: "allow" };
  }
  return null;
}

/** Human wording of a rule's scope (the policy view, the approval card). */
export function scopeText(r: { tool: string; path_prefix?: string; component?: string }): string {
  if (r.path_prefix !== undefined) {
    return r.path_prefix === "."
      ? `${r.tool} in the whole workspace`
      : `${r.tool} in ${r.path_prefix}/`;
  }
  if (r.component !== undefined) return `${r.tool} under any ${r.component}/`;
  return r.tool;
}

/**
 * The facts of a call the policy decides on: argv[0] of exec/command, and the canonical paths a
 * path tool touches (`planPaths`: exec/apply's planned paths, known only after its plan).
 */
export function callFacts(
  spec: ToolSpec,
  args: ToolArgs,
  planPaths?: readonly string[],
): CallFacts {
  const f: CallFacts = { toolId: spec.id, defaultDecision: spec.default_policy };
  if (spec.id === "exec/command") {
    const argv = args.argv;
    if (Array.isArray(argv) && typeof argv[0] === "string") f.argv0 = argv[0];
    return f;
  }
  if (!PATH_TOOLS.has(spec.id)) return f;
  if (spec.id === "exec/apply") {
    f.paths = planPaths ?? null;
    return f;
  }
  if (spec.id === "file/glob") {
    f.paths = ["."];
    return f;
  }
  const c = spec.id === "file/grep" ? canonicalDirPath(args.path) : canonicalPath(args.path);
  if (c.ok) f.paths = [c.path];
  else {
    f.paths = null;
    f.pathCode = c.code;
  }
  return f;
}
