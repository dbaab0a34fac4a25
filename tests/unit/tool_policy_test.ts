import { deepStrictEqual as assertEquals, notDeepStrictEqual, throws } from "node:assert/strict";
import {
  BUILTIN_TOOL_SPECS,
  providerToolName,
  providerToolSchema,
  sealCatalog,
  toolIdFromProviderName,
} from "../../runtime/tools/catalog.ts";
import {
  type PolicyRule,
  providerTools,
  resolveToolSet,
  validateToolArgs,
} from "../../runtime/tools/policy.ts";
import { canonicalJson, domainDigest } from "../../runtime/protocol/digest.ts";
import { TOOLSET_MANIFESTS_KEPT } from "../../runtime/limits.ts";

const ID = "33333333-3333-4333-8333-333333333333";
const catalog = sealCatalog();
const ids = (rules: PolicyRule[], interactive = false) =>
  resolveToolSet({ catalog, rules, interactive, id: ID }).tools.map((t) =>
    `${t.spec.id}:${t.decision}`
  );

const cases: { name: string; rules: PolicyRule[]; interactive: boolean; expect: string[] }[] = [
  {
    name: "non-interactive defaults offer only the read tools (files and Tasks)",
    rules: [],
    interactive: false,
    expect: [
      "document/extract_text:allow",
      "file/glob:allow",
      "file/grep:allow",
      "file/read_text:allow",
      "file/stat:allow",
      "task/output:allow",
      "task/status:allow",
    ],
  },
  {
    name: "interactive defaults add the ask tools",
    rules: [],
    interactive: true,
    expect: [
      "agent/delegate:ask",
      "document/extract_text:allow",
      "exec/apply:ask",
      "exec/command:ask",
      "exec/run:ask",
      "file/edit:ask",
      "file/glob:allow",
      "file/grep:allow",
      "file/read_text:allow",
      "file/stat:allow",
      "file/write:ask",
      "task/output:allow",
      "task/status:allow",
    ],
  },
  {
    name: "deny beats an allow rule for the same tool",
    rules: [{ tool_id: "file/grep", decision: "allow" }, {
      tool_id: "file/grep",
      decision: "deny",
    }],
    interactive: false,
    expect: [
      "document/extract_text:allow",
      "file/glob:allow",
      "file/read_text:allow",
      "file/stat:allow",
      "task/output:allow",
      "task/status:allow",
    ],
  },
  {
    name: "an allow rule cannot loosen an ask tool",
    rules: [{ tool_id: "file/write", decision: "allow" }],
    interactive: true,
    expect: [
      "agent/delegate:ask",
      "document/extract_text:allow",
      "exec/apply:ask",
      "exec/command:ask",
      "exec/run:ask",
      "file/edit:ask",
      "file/glob:allow",
      "file/grep:allow",
      "file/read_text:allow",
      "file/stat:allow",
      "file/write:ask",
      "task/output:allow",
      "task/status:allow",
    ],
  },
  {
    name: "an ask rule on a read tool in a non-interactive Run denies it",
    rules: [{ tool_id: "file/stat", decision: "ask" }],
    interactive: false,
    expect: [
      "document/extract_text:allow",
      "file/glob:allow",
      "file/grep:allow",
      "file/read_text:allow",
      "task/output:allow",
      "task/status:allow",
    ],
  },
  {
    name: "a rule naming a tool outside the catalog enables nothing",
    rules: [{ tool_id: "net/fetch", decision: "allow" }],
    interactive: false,
    expect: [
      "document/extract_text:allow",
      "file/glob:allow",
      "file/grep:allow",
      "file/read_text:allow",
      "file/stat:allow",
      "task/output:allow",
      "task/status:allow",
    ],
  },
];

for (const c of cases) {
  Deno.test(`resolveToolSet(): ${c.name}`, () => {
    assertEquals(ids(c.rules, c.interactive), c.expect);
  });
}

Deno.test("resolveToolSet(): the digest pins the manifest and changes with the policy", () => {
  const a = resolveToolSet({ catalog, rules: [], interactive: false, id: ID });
  const b = resolveToolSet({ catalog, rules: [], interactive: false, id: ID });
  const c = resolveToolSet({
    catalog,
    rules: [{ tool_id: "file/glob", decision: "deny" }],
    interactive: false,
    id: ID,
  });
  assertEquals(a.digest, b.digest);
  notDeepStrictEqual(a.digest, c.digest);
  assertEquals(c.denied, [
    { tool_id: "agent/delegate", reason: "non_interactive_ask" },
    { tool_id: "exec/apply", reason: "non_interactive_ask" },
    { tool_id: "exec/command", reason: "non_interactive_ask" },
    { tool_id: "exec/run", reason: "non_interactive_ask" },
    { tool_id: "file/edit", reason: "non_interactive_ask" },
    { tool_id: "file/glob", reason: "policy_deny" },
    { tool_id: "file/write", reason: "non_interactive_ask" },
  ]);
});

/** The manifest and digest as the SPEC defines them, computed afresh (never remembered). */
function reference(set: ReturnType<typeof resolveToolSet>) {
  const manifest = canonicalJson(set.tools.map((t) => ({ decision: t.decision, spec: t.spec })));
  return { manifest, digest: domainDigest("agent-builder/toolset/v3", manifest) };
}

Deno.test("resolveToolSet(): a remembered manifest is the one computed afresh, for equal and for changed specs", () => {
  for (let i = 0; i < 2; i++) {
    const set = resolveToolSet({ catalog, rules: [], interactive: true, id: ID });
    assertEquals({ manifest: set.manifest, digest: set.digest }, reference(set));
  }
  // Equal specs in another sealed catalog: the same manifest, whatever the objects.
  const again = sealCatalog(BUILTIN_TOOL_SPECS);
  const a = resolveToolSet({ catalog: again, rules: [], interactive: true, id: ID });
  assertEquals(a.digest, resolveToolSet({ catalog, rules: [], interactive: true, id: ID }).digest);
  // One changed description: its own manifest.
  const changed = sealCatalog(
    BUILTIN_TOOL_SPECS.map((s, i) => i === 0 ? { ...s, description: `${s.description} (v2)` } : s),
  );
  const c = resolveToolSet({ catalog: changed, rules: [], interactive: true, id: ID });
  assertEquals({ manifest: c.manifest, digest: c.digest }, reference(c));
  notDeepStrictEqual(c.digest, a.digest);
});

Deno.test("resolveToolSet(): specs that are not sealed are never remembered; past the memo's bound every list is still right", () => {
  // A hand-made catalog whose spec changes between two Runs.
  const loose = structuredClone(BUILTIN_TOOL_SPECS[0]);
  const handMade = { specs: [loose], get: (id: string) => id === loose.id ? loose : undefined };
  const before = resolveToolSet({ catalog: handMade, rules: [], interactive: true, id: ID });
  loose.description = `${loose.description} (edited)`;
  const after = resolveToolSet({ catalog: handMade, rules: [], interactive: true, id: ID });
  notDeepStrictEqual(after.digest, before.digest);
  assertEquals({ manifest: after.manifest, digest: after.digest }, reference(after));
  // TOOLSET_MANIFESTS_KEPT + 1 distinct lists, twice over: each digest is its own list's.
  for (let round = 0; round < 2; round++) {
    for (let n = 0; n <= TOOLSET_MANIFESTS_KEPT; n++) {
      const rules = catalog.specs.slice(0, n % catalog.specs.length).map((s) => ({
        tool_id: s.id,
        decision: "deny" as const,
      }));
      const set = resolveToolSet({ catalog, rules, interactive: true, id: ID });
      assertEquals({ manifest: set.manifest, digest: set.digest }, reference(set));
    }
  }
});

Deno.test("sealCatalog(): the catalog is frozen and refuses duplicates and loose specs", () => {
  throws(() => (catalog.specs as unknown as unknown[]).push({}));
  throws(() => {
    (catalog.get("file/stat") as { timeout_ms: number }).timeout_ms = 1;
  });
  throws(() => sealCatalog([BUILTIN_TOOL_SPECS[0], BUILTIN_TOOL_SPECS[0]]));
  throws(() => sealCatalog([{ ...BUILTIN_TOOL_SPECS[0], endpoint: "x" } as never]));
  throws(() =>
    sealCatalog([{
      ...BUILTIN_TOOL_SPECS[0],
      args: { path: { type: "object" } },
    } as never])
  );
});

Deno.test("providerTools(): narrowing yields an empty provider ToolSet", () => {
  const set = resolveToolSet({ catalog, rules: [], interactive: false, id: ID });
  assertEquals(providerTools(set, false).length, 7);
  assertEquals(providerTools(set, true), []);
  assertEquals(toolIdFromProviderName(providerToolName("file/read_text")), "file/read_text");
  assertEquals(toolIdFromProviderName("file/read_text"), null);
});

const read = catalog.get("file/read_text")!;
const argCases: { name: string; raw: unknown; ok: boolean }[] = [
  { name: "a path alone", raw: { path: "a.txt" }, ok: true },
  { name: "a path and an offset", raw: { path: "a.txt", offset: 10 }, ok: true },
  { name: "a missing required path", raw: {}, ok: false },
  { name: "an unknown argument", raw: { path: "a", mode: "x" }, ok: false },
  { name: "a negative offset", raw: { path: "a", offset: -1 }, ok: false },
  { name: "a fractional offset", raw: { path: "a", offset: 1.5 }, ok: false },
  { name: "a path over 1024 bytes", raw: { path: "a".repeat(1025) }, ok: false },
  { name: "a non-object", raw: ["a"], ok: false },
  { name: "a lone surrogate", raw: { path: "\ud800" }, ok: false },
];
for (const c of argCases) {
  Deno.test(`validateToolArgs(): ${c.ok ? "accepts" : "refuses"} ${c.name}`, () => {
    assertEquals(validateToolArgs(read, c.raw).ok, c.ok);
  });
}

Deno.test("validateToolArgs(): a string list is checked for shape, item count and item size", () => {
  const spec = catalog.get("exec/command")!;
  assertEquals(validateToolArgs(spec, { argv: ["echo", "hi"] }), {
    ok: true,
    args: { argv: ["echo", "hi"] },
  });
  assertEquals(validateToolArgs(spec, { argv: "echo hi" }).ok, false);
  assertEquals(validateToolArgs(spec, { argv: ["echo", 1] }).ok, false);
  assertEquals(validateToolArgs(spec, { argv: Array(64).fill("x") }).ok, true);
  assertEquals(validateToolArgs(spec, { argv: Array(65).fill("x") }).ok, false);
  assertEquals(validateToolArgs(spec, { argv: ["x".repeat(4096)] }).ok, true);
  assertEquals(validateToolArgs(spec, { argv: ["x".repeat(4097)] }).ok, false);
  const rendered = providerToolSchema(spec) as {
    function: { parameters: { properties: Record<string, unknown> } };
  };
  assertEquals(rendered.function.parameters.properties.argv, {
    type: "array",
    description: spec.args.argv.description,
    items: { type: "string" },
    maxItems: 64,
  });
});
