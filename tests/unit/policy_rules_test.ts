/**
 * The pure per-Agent policy core [TL-9, TL-10]: which rule decides a call and
 * why, deny precedence, narrowed rules (all paths inside for an allow, any
 * for a deny, unknown paths never allowed), the platform's denies, whole-policy
 * checks, and the narrowed "Always allow" rule.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { sealCatalog } from "../../runtime/tools/catalog.ts";
import {
  type AgentRule,
  alwaysAllowRule,
  type CallFacts,
  callFacts,
  checkPolicy,
  decideCall,
  decideTool,
  platformRules,
  resolveToolSet,
  withinPrefix,
} from "../../runtime/tools/policy.ts";

const catalog = sealCatalog();
const ids = new Set(catalog.specs.map((s) => s.id));
const platform = platformRules({ runner: true });
const spec = (id: string) => catalog.get(id)!;

const write = (path: string | null): CallFacts => ({
  toolId: "file/write",
  defaultDecision: "ask",
  paths: path === null ? null : [path],
});

Deno.test("decideCall() names what decided: platform deny, Agent rule, default", () => {
  const rules: AgentRule[] = [{ tool: "file/write", decision: "allow", path_prefix: "docs" }];
  const cases: [CallFacts, string, string][] = [
    [write("docs/a.md"), "allow", "Agent rule"],
    [write("docs/deep/b.md"), "allow", "Agent rule"],
    [write("docsx/a.md"), "ask", "default"],
    [write("a.md"), "ask", "default"],
    [write(null), "deny", "platform deny"], // unknown paths: narrowed denies match, allows never
    [write(".git/hooks/pre-commit"), "deny", "platform deny"],
    [write("docs/.git/config"), "deny", "platform deny"],
  ];
  for (const [f, decision, reason] of cases) {
    const d = decideCall(f, rules, platform);
    assertEquals([d.decision, d.reason], [decision, reason], JSON.stringify(f));
  }
});

Deno.test("deny wins over ask over allow among matching rules", () => {
  const rules: AgentRule[] = [
    { tool: "file/write", decision: "allow" },
    { tool: "file/write", decision: "ask", path_prefix: "src" },
    { tool: "file/write", decision: "deny", path_prefix: "src/secret" },
  ];
  assertEquals(decideCall(write("a.md"), rules, []).decision, "allow");
  assertEquals(decideCall(write("src/a.md"), rules, []).decision, "ask");
  const d = decideCall(write("src/secret/k"), rules, []);
  assertEquals([d.decision, d.ruleIndex], ["deny", 2]);
});

Deno.test("a narrowed allow needs every path inside; a narrowed deny any", () => {
  const apply = (paths: string[]): CallFacts => ({
    toolId: "exec/apply",
    defaultDecision: "ask",
    paths,
  });
  const allow: AgentRule[] = [{ tool: "exec/apply", decision: "allow", path_prefix: "src" }];
  assertEquals(decideCall(apply(["src/a", "src/b"]), allow, []).decision, "allow");
  assertEquals(decideCall(apply(["src/a", "b"]), allow, []).decision, "ask");
  assertEquals(decideCall(apply([]), allow, []).decision, "ask");
  const deny: AgentRule[] = [{ tool: "exec/apply", decision: "deny", path_prefix: "src" }];
  assertEquals(decideCall(apply(["a", "src/b"]), deny, []).decision, "deny");
  assertEquals(decideCall(apply(["x/.git/hooks/h"]), [], platform).decision, "deny");
});

Deno.test("program and MCP-server rules match exactly their calls", () => {
  const rules: AgentRule[] = [
    { tool: "exec/command:git", decision: "allow" },
    { tool: "mcp/srv/*", decision: "deny" },
  ];
  const cmd = (argv0: string): CallFacts => ({
    toolId: "exec/command",
    defaultDecision: "ask",
    argv0,
  });
  assertEquals(decideCall(cmd("git"), rules, []).decision, "allow");
  assertEquals(decideCall(cmd("gitk"), rules, []).decision, "ask");
  const mcp = (id: string): CallFacts => ({ toolId: id, defaultDecision: "ask" });
  assertEquals(decideCall(mcp("mcp/srv/echo"), rules, []).decision, "deny");
  assertEquals(decideCall(mcp("mcp/srv2/echo"), rules, []).decision, "ask");
  // Tool level: the server rule covers every tool of it; the program rule no whole tool.
  assertEquals(decideTool("mcp/srv/echo", "ask", rules, []).decision, "deny");
  assertEquals(decideTool("exec/command", "ask", rules, []).decision, "ask");
});

Deno.test("without a runner the platform denies the exec tools, and nothing relaxes that", () => {
  const p = platformRules({ runner: false });
  assertEquals(decideTool("exec/command", "ask", [], p).reason, "platform deny");
  const r = checkPolicy([{ tool: "exec/command:git", decision: "allow" }], p, ids);
  assertEquals(r, { ok: false, code: "policy_platform_deny", index: 0 });
  assertEquals(checkPolicy([{ tool: "exec/run", decision: "deny" }], p, ids), { ok: true });
});

Deno.test("checkPolicy() refuses at the bound, duplicates, bad targets and prefixes", () => {
  const many = (n: number): AgentRule[] =>
    Array.from({ length: n }, (_, i) => ({ tool: `exec/command:p${i}`, decision: "allow" }));
  assertEquals(checkPolicy(many(64), platform, ids), { ok: true });
  assertEquals(checkPolicy(many(65), platform, ids).ok, false);
  const bad: [AgentRule, string][] = [
    [{ tool: "file/nope", decision: "allow" }, "policy_invalid"],
    [{ tool: "exec/command:", decision: "allow" }, "policy_invalid"],
    [{ tool: "exec/command:a/b", decision: "allow" }, "policy_invalid"],
    [{ tool: "mcp/Bad/*", decision: "allow" }, "policy_invalid"],
    [{ tool: "file/write", decision: "allow", path_prefix: "../x" }, "policy_invalid"],
    [{ tool: "file/write", decision: "allow", path_prefix: "a//b" }, "policy_invalid"],
    [{ tool: "exec/run", decision: "allow", path_prefix: "a" }, "policy_invalid"],
    [{ tool: "file/write", decision: "ask", path_prefix: ".git" }, "policy_platform_deny"],
    [{ tool: "file/edit", decision: "allow", path_prefix: "a/.git/b" }, "policy_platform_deny"],
  ];
  for (const [rule, code] of bad) {
    assertEquals(checkPolicy([rule], platform, ids), { ok: false, code, index: 0 });
  }
  const dup: AgentRule[] = [
    { tool: "file/write", decision: "allow", path_prefix: "a" },
    { tool: "file/write", decision: "deny", path_prefix: "a" },
  ];
  assertEquals(checkPolicy(dup, platform, ids), {
    ok: false,
    code: "policy_duplicate_rule",
    index: 1,
  });
  // A broad allow is accepted: the platform deny still wins per call.
  assertEquals(checkPolicy([{ tool: "file/write", decision: "allow" }], platform, ids), {
    ok: true,
  });
});

Deno.test("alwaysAllowRule() narrows to the directory, the program, the tool", () => {
  const f = (id: string, args: Record<string, unknown>) =>
    alwaysAllowRule(callFacts(spec(id), args as never));
  assertEquals(f("file/write", { path: "notes/a.md", content: "" }), {
    tool: "file/write",
    decision: "allow",
    path_prefix: "notes",
  });
  assertEquals(f("file/edit", { path: "a.md", old_text: "a", new_text: "b" }), {
    tool: "file/edit",
    decision: "allow",
    path_prefix: ".",
  });
  assertEquals(f("exec/command", { argv: ["git", "status"] }), {
    tool: "exec/command:git",
    decision: "allow",
  });
  assertEquals(f("exec/apply", {}), null);
  assertEquals(f("file/write", { path: "a/../b", content: "" }), null);
  assertEquals(
    alwaysAllowRule({ toolId: "mcp/srv/echo", defaultDecision: "ask" }),
    { tool: "mcp/srv/echo", decision: "allow" },
  );
});

Deno.test("the document reader is narrowed by directory like the file tools", () => {
  const rules: AgentRule[] = [
    { tool: "document/extract_text", decision: "deny", path_prefix: "private" },
  ];
  assertEquals(checkPolicy(rules, platform, ids), { ok: true });
  const f = (path: string) => callFacts(spec("document/extract_text"), { path });
  assertEquals(decideCall(f("private/cv.pdf"), rules, platform).decision, "deny");
  assertEquals(decideCall(f("public/cv.pdf"), rules, platform).decision, "allow");
  assertEquals(f("private/../cv.pdf").pathCode, "path_invalid");
});

Deno.test("withinPrefix() is by whole components", () => {
  assertEquals(withinPrefix("src/a", "src"), true);
  assertEquals(withinPrefix("src", "src"), true);
  assertEquals(withinPrefix("srcx/a", "src"), false);
  assertEquals(withinPrefix("anything", "."), true);
});

Deno.test("the EffectiveToolSet leaves out tools an Agent denies whole and keeps narrowed ones", () => {
  const set = resolveToolSet({
    catalog,
    rules: [],
    interactive: true,
    id: "x",
    agent: {
      rules: [
        { tool: "file/grep", decision: "deny" },
        { tool: "file/read_text", decision: "deny", path_prefix: "secret" },
        { tool: "file/write", decision: "allow" },
      ],
      platform,
    },
  });
  const got = Object.fromEntries(set.tools.map((t) => [t.spec.id, t.decision]));
  assertEquals(got["file/grep"], undefined);
  assertEquals(got["file/read_text"], "allow");
  assertEquals(got["file/write"], "allow");
  assertEquals(got["file/edit"], "ask");
});
