import { deepStrictEqual as assertEquals, notStrictEqual, ok, throws } from "node:assert/strict";
import {
  admit,
  estimateTokens,
  makeReceipt,
  resultReceipt,
  type ToolExchange,
} from "../../runtime/context/admission.ts";
import {
  createInspectionKey,
  inspectPlan,
  nextTurnProjection,
} from "../../runtime/context/inspect.ts";
import {
  compileContextPlan,
  type ContextInputs,
  FINALIZATION_MARKER,
  type HistoryBundle,
} from "../../runtime/context/plan.ts";
import { sealCatalog } from "../../runtime/tools/catalog.ts";
import { resolveToolSet } from "../../runtime/tools/policy.ts";

const toolset = resolveToolSet({
  catalog: sealCatalog(),
  rules: [],
  interactive: false,
  id: "33333333-3333-4333-8333-333333333333",
});
const noTools = resolveToolSet({
  catalog: sealCatalog(),
  rules: [
    "file/stat",
    "file/read_text",
    "file/glob",
    "file/grep",
    "task/status",
    "task/output",
    "document/extract_text",
  ]
    .map((
      tool_id,
    ) => ({
      tool_id,
      decision: "deny" as const,
    })),
  interactive: false,
  id: "33333333-3333-4333-8333-333333333333",
});

const bundle = (i: number, size = 100): HistoryBundle => ({
  turnId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  user: `u${i} ` + "x".repeat(size),
  assistant: `a${i} ` + "y".repeat(size),
});

/** One executed read of this Turn whose projection is `text`. */
function exchange(i: number, text: string): ToolExchange {
  return {
    call: { id: `call-${i}`, name: "file__read_text", arguments: { path: `f${i}.txt` } },
    projection: text,
    toolId: "file/read_text",
    resultBytes: new TextEncoder().encode(text).length,
    resultDigest: `sha256:${i.toString(16).padStart(64, "0")}`,
  };
}

function inputs(over: Partial<ContextInputs> = {}): ContextInputs {
  return {
    planId: "22222222-2222-4222-8222-222222222222",
    instructions: "Be terse.",
    now: new Date("2026-11-29T21:00:00Z"),
    history: [],
    userMessage: "hello",
    toolset: noTools,
    window: 32768,
    budget: 28672,
    modelId: "qwen3.5:2b",
    ...over,
  };
}

Deno.test("compileContextPlan(): sections come in the fixed order with the allowlisted environment", () => {
  const plan = compileContextPlan(inputs({ history: [bundle(1)] }));
  assertEquals(plan.sections.map((s) => s.name), [
    "platform",
    "instructions",
    "environment",
    "history",
    "user_message",
    "tool_manifest",
  ]);
  const env = plan.sections.find((s) => s.name === "environment")!.text;
  assertEquals(env, "Date (UTC): 2026-11-29\nTimezone: UTC\nOperating system: Linux");
});

Deno.test("compileContextPlan(): a missing instruction file omits the section", () => {
  const plan = compileContextPlan(inputs({ instructions: null }));
  ok(!plan.sections.some((s) => s.name === "instructions"));
});

Deno.test("compileContextPlan(): the digest is deterministic and pins every input", () => {
  const a = compileContextPlan(inputs());
  assertEquals(a.digest, compileContextPlan(inputs()).digest);
  for (
    const change of [
      { userMessage: "hello!" },
      { instructions: "Be verbose." },
      { history: [bundle(1)] },
      { toolset },
      { now: new Date("2026-11-30T00:00:00Z") },
      { budget: 1000 },
    ] as Partial<ContextInputs>[]
  ) notStrictEqual(compileContextPlan(inputs(change)).digest, a.digest);
});

Deno.test("admit(): renders history as user/assistant pairs before the current message", () => {
  const a = admit(compileContextPlan(inputs({ history: [bundle(1), bundle(2)] })), {
    exchanges: [],
    narrowed: false,
  });
  ok(a.ok);
  assertEquals(a.messages.map((m) => m.role), [
    "system",
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
  ]);
  assertEquals(a.messages.at(-1)!.content, "hello");
  assertEquals(a.tools, []);
  assertEquals(a.estimate, estimateTokens(a.messages, []));
});

Deno.test("admit(): the estimate is one token per UTF-8 byte plus the 256-token reserve", () => {
  const a = admit(compileContextPlan(inputs({ userMessage: "é" })), {
    exchanges: [],
    narrowed: false,
  });
  const b = admit(compileContextPlan(inputs({ userMessage: "e" })), {
    exchanges: [],
    narrowed: false,
  });
  ok(a.ok && b.ok);
  assertEquals(a.estimate - b.estimate, 1);
  assertEquals(estimateTokens([], []), 256);
});

Deno.test("admit(): below 80 % of the budget nothing collapses", () => {
  const plan = compileContextPlan(inputs({ history: [bundle(1), bundle(2)], budget: 4000 }));
  const a = admit(plan, { exchanges: [], narrowed: false });
  ok(a.ok);
  assertEquals([a.keptBundles, a.receipt], [2, null]);
});

Deno.test("admit(): at 80 % the oldest bundles collapse into one content-free receipt", () => {
  const history = [1, 2, 3, 4, 5].map((i) => bundle(i, 400));
  const plan = compileContextPlan(inputs({ history, budget: 2600 }));
  const a = admit(plan, { exchanges: [], narrowed: false });
  ok(a.ok);
  ok(a.estimate < 2600 * 0.8);
  ok(a.keptBundles >= 1 && a.keptBundles < 5);
  const collapsed = 5 - a.keptBundles;
  assertEquals(a.receipt, makeReceipt(plan.history.slice(0, collapsed)));
  const system = a.messages[0].content;
  ok(system.includes(`${collapsed} earlier completed turn(s)`));
  // The collapsed text never appears anywhere in the request.
  for (const b of history.slice(0, collapsed)) {
    ok(!a.messages.some((m) => m.content.includes(b.user) || m.content.includes(b.assistant)));
  }
  // The latest bundle survives.
  ok(a.messages.some((m) => m.content === history[4].assistant));
});

Deno.test("admit(): collapse keeps the latest bundle and refuses with model_context_limit", () => {
  const plan = compileContextPlan(
    inputs({ history: [bundle(1, 3000), bundle(2, 3000)], budget: 5000 }),
  );
  const a = admit(plan, { exchanges: [], narrowed: false });
  assertEquals(a.ok, false);
  ok(!a.ok && a.code === "model_context_limit");
});

Deno.test("admit(): a narrowed call drops provider tools and ends with the finalization marker", () => {
  const plan = compileContextPlan(inputs({ toolset }));
  const call = { id: "call-1", name: "file__read_text", arguments: { path: "a.txt" } };
  const x = exchange(1, "hi");
  const wide = admit(plan, { exchanges: [{ ...x, call }], narrowed: false });
  const narrow = admit(plan, { exchanges: [{ ...x, call }], narrowed: true });
  ok(wide.ok && narrow.ok);
  assertEquals(wide.tools.length, 7); // the read tools: four file tools, the two Task tools, documents
  assertEquals(narrow.tools, []);
  assertEquals(narrow.messages.at(-1), { role: "system", content: FINALIZATION_MARKER });
  assertEquals(wide.messages.slice(-2).map((m) => m.role), ["assistant", "tool"]);
});

Deno.test("inspectPlan(): returns metadata and a keyed digest but no section text", () => {
  const plan = compileContextPlan(
    inputs({ userMessage: "SECRET-USER-TEXT", instructions: "SECRET-INSTR" }),
  );
  const key = createInspectionKey();
  const view = inspectPlan(plan, key);
  const text = JSON.stringify(view);
  ok(!text.includes("SECRET"));
  ok(!text.includes(plan.digest));
  assertEquals(view.sections.length, plan.sections.length);
  notStrictEqual(view.keyed_digest, createInspectionKey().keyed(plan.digest));
});

Deno.test("nextTurnProjection(): reports fixed and history tokens and calibrates from usages", () => {
  const base = { ...inputs({ history: [bundle(1)] }) };
  const { userMessage: _u, planId: _p, ...rest } = base;
  const p = nextTurnProjection(rest, []);
  ok(p.available);
  ok(p.fixed_context_tokens > 256 && p.history_tokens > 200);
  assertEquals(p.safe_user_tokens, 28672 - p.context_tokens);
  assertEquals(p.calibration.ratio, null);
  const c = nextTurnProjection(rest, [{ estimate: 1000, inputTokens: 500 }, {
    estimate: 1000,
    inputTokens: 400,
  }]);
  ok(c.available);
  assertEquals(c.calibration.ratio, 0.5);
  assertEquals(c.calibration.calibrated_context_tokens, Math.ceil(c.context_tokens * 0.5));
});

Deno.test("compileContextPlan(): refuses a history bundle without a committed answer", () => {
  throws(() =>
    compileContextPlan(
      inputs({ history: [{ turnId: "t", user: "u" } as unknown as HistoryBundle] }),
    )
  );
});

Deno.test("admit(): compact collapses every bundle but the latest even under 80 %", () => {
  const history = [bundle(1), bundle(2), bundle(3)];
  const plan = compileContextPlan(inputs({ history, compact: true }));
  const a = admit(plan, { exchanges: [], narrowed: false });
  ok(a.ok);
  assertEquals(a.keptBundles, 1);
  assertEquals(a.receipt?.turn_ids, history.slice(0, 2).map((b) => b.turnId));
  notStrictEqual(plan.digest, compileContextPlan(inputs({ history })).digest);
});

Deno.test("admit(): the oldest tool results of the Turn become content-free receipts, the newest stays [CX-10]", () => {
  const plan = compileContextPlan(inputs({ toolset, budget: 12000 }));
  const exchanges = [1, 2, 3, 4].map((i) => exchange(i, `R${i}:` + "x".repeat(3000)));
  const a = admit(plan, { exchanges, narrowed: false });
  ok(a.ok);
  ok(a.collapsedResults >= 1 && a.collapsedResults <= 3, String(a.collapsedResults));
  const tools = a.messages.filter((m) => m.role === "tool").map((m) => m.content);
  assertEquals(tools.length, 4, "every tool message is still there");
  for (let i = 0; i < 4; i++) {
    if (i < a.collapsedResults) {
      assertEquals(tools[i], resultReceipt(exchanges[i]));
      ok(!tools[i].includes("xxx"), "a receipt carries no content");
    } else assertEquals(tools[i], exchanges[i].projection);
  }
  assertEquals(tools[3], exchanges[3].projection, "the newest result is kept");
  ok(
    a.messages.some((m) => m.role === "user" && m.content === "hello"),
    "the user message is kept",
  );
  ok(a.estimate < Math.floor(12000 * 0.8));
});

Deno.test("admit(): model_context_limit only when nothing more can be collapsed [CX-10]", () => {
  const plan = compileContextPlan(inputs({ toolset, budget: 6000 }));
  // The newest result alone does not fit: every older one collapsed, still over ⇒ refused.
  const exchanges = [exchange(1, "a".repeat(3000)), exchange(2, "b".repeat(6000))];
  const a = admit(plan, { exchanges, narrowed: false });
  ok(!a.ok && a.code === "model_context_limit");
  // Without the oversized newest result the same plan is admitted with the older one collapsed.
  const b = admit(plan, {
    exchanges: [exchange(1, "a".repeat(3000)), exchange(2, "ok")],
    narrowed: false,
  });
  ok(b.ok);
});

Deno.test("admit(): a result smaller than its receipt is never replaced", () => {
  const plan = compileContextPlan(inputs({ toolset, budget: 8000 }));
  const exchanges = [exchange(1, "tiny"), exchange(2, "y".repeat(5000)), exchange(3, "z")];
  const a = admit(plan, { exchanges, narrowed: false });
  ok(a.ok);
  const tools = a.messages.filter((m) => m.role === "tool").map((m) => m.content);
  assertEquals(tools[0], "tiny");
  assertEquals(tools[1], resultReceipt(exchanges[1]));
});
