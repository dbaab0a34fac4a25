/**
 * Catalog discovery against the scripted fleet [MB-10, MB-11]: every model
 * Ollama lists is qualified with /api/show (≤ 4 at a time) into ready /
 * chat_only / unsupported (hidden) / unavailable with a reason; `--model`
 * restricts and orders the catalog; `--max-window` caps the window; a slow,
 * huge or malformed show refuses that one model only; ≤ 256 models are read;
 * a model that vanished stays marked until an explicit refresh; each family
 * gets its own generation profile in the request the server received.
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { createBroker } from "../../runtime/model/broker.ts";
import {
  CatalogError,
  type CatalogOptions,
  createCatalog,
  isHostQualified,
  isModelName,
} from "../../runtime/model/catalog.ts";
import { MODEL_SHOW_BODY_MAX_BYTES, MODEL_TAGS_MAX } from "../../runtime/limits.ts";
import type { ModelBroker, PublicModelProfile } from "../../runtime/model/types.ts";
import { FAKE_FLEET, type FakeModel } from "../../tools/fake_ollama/frames.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { type FakeOllama, startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { FAST, memoryLogger } from "../helpers/model.ts";

const ROOMY = {
  qualifyMs: 10_000,
  showMs: 10_000,
  firstFrameMs: 10_000,
  idleMs: 10_000,
  callMs: 20_000,
};

const fleet = () => structuredClone(FAKE_FLEET) as Record<string, FakeModel>;

async function withFleet(
  fn: (b: ModelBroker, o: FakeOllama) => void | Promise<void>,
  cat: Omit<CatalogOptions, "ollamaUrl"> = {},
  models: Record<string, FakeModel> = fleet(),
): Promise<void> {
  const ollama = await startFakeOllama({ models });
  const broker = createBroker({
    catalog: createCatalog({
      ollamaUrl: ollama.url,
      ...cat,
      // Generous timers: these tests are about discovery, not timeouts (a loaded machine).
      timeouts: { ...FAST, ...ROOMY, ...cat.timeouts },
    }),
    log: memoryLogger(),
    qualifyNow: false,
  });
  try {
    await broker.requalify();
    await fn(broker, ollama);
  } finally {
    await broker.close();
    await ollama.close();
  }
}

const brief = (p: PublicModelProfile[]) =>
  p.map((m) => [m.id, m.state, m.window, m.budget, m.default, m.reason ?? null]);

const chat = (broker: ModelBroker, modelId: string, phase: "plain" | "tools" = "plain") =>
  broker.chat({
    modelId,
    phase,
    messages: [{ role: "user", content: "Hi" }],
    tools: phase === "tools"
      ? [{
        type: "function",
        function: { name: "file__stat", description: "stat", parameters: { type: "object" } },
      }]
      : undefined,
    signal: new AbortController().signal,
    deadline: Date.now() + 10_000,
  });

Deno.test("the fleet is listed with its states, windows and budgets; the embedding model is hidden", async () => {
  await withFleet((broker, ollama) => {
    const pub = broker.publicProfiles();
    assertEquals(brief(pub), [
      ["deepseek-r1:1.5b", "chat_only", 32768, 28672, false, null],
      ["gemma3:1b", "chat_only", 8192, 6144, false, null],
      ["llama3.2:3b", "ready", 32768, 28672, false, null],
      ["qwen3.5:2b", "ready", 32768, 28672, true, null],
    ]);
    const q = pub.find((m) => m.id === "qwen3.5:2b")!;
    assertEquals(
      [q.family, q.parameter_size, q.quantization, q.capabilities],
      ["qwen35", "2.3B", "Q4_K_M", ["completion", "tools", "thinking"]],
    );
    assertEquals(pub.find((m) => m.id === "deepseek-r1:1.5b")!.capabilities, [
      "completion",
      "thinking",
    ]);
    const text = JSON.stringify(pub);
    assert(!text.includes(String(ollama.port)) && !text.includes("127.0.0.1"), "no host/port");
    assert(!text.includes("digest") && !/[0-9a-f]{64}/.test(text), "no digests");
    const shows = ollama.requests.filter((r) => r.path === "/api/show").map((r) => r.body.model);
    assertEquals(shows.sort(), Object.keys(FAKE_FLEET).sort());
  });
});

Deno.test("--model restricts and orders the catalog; missing and embedding-only names are shown with their state", async () => {
  await withFleet(async (broker, ollama) => {
    assertEquals(brief(broker.publicProfiles()), [
      ["gemma3:1b", "chat_only", 8192, 6144, false, null],
      ["nomic-embed-text:latest", "unsupported", null, null, false, "capability_missing"],
      ["missing:1b", "unavailable", null, null, false, "model_missing"],
      ["llama3.2:3b", "ready", 32768, 28672, true, null], // no qwen3.5:2b: the first ready
    ]);
    const shows = ollama.requests.filter((r) => r.path === "/api/show").map((r) => r.body.model);
    assert(!shows.includes("missing:1b") && !shows.includes("qwen3.5:2b"), shows.join());
    assertEquals(await broker.profile("qwen3.5:2b"), { ok: false, code: "model_not_found" });
    assertEquals((await chat(broker, "missing:1b")).kind, "failed");
  }, { models: ["gemma3:1b", "nomic-embed-text:latest", "missing:1b", "llama3.2:3b"] });
  await withFleet((broker) => {
    assertEquals(broker.publicProfiles().filter((m) => m.default).map((m) => m.id), ["gemma3:1b"]);
  }, { models: ["llama3.2:3b", "gemma3:1b"], defaultModel: "gemma3:1b" });
});

Deno.test("--max-window caps every window and the reserve follows it; it must be ≥ 4096", async () => {
  await withFleet(async (broker, ollama) => {
    assertEquals(brief(broker.publicProfiles()).map((r) => [r[0], r[2], r[3]]), [
      ["deepseek-r1:1.5b", 16384, 12288],
      ["gemma3:1b", 8192, 6144], // native below the cap
      ["llama3.2:3b", 16384, 12288],
      ["qwen3.5:2b", 16384, 12288],
    ]);
    ollama.enqueue(sc.text("ok"));
    await chat(broker, "llama3.2:3b");
    assertEquals(ollama.chats[0].body.options, { seed: 0, num_ctx: 16384, num_predict: 4096 });
  }, { maxWindow: 16384 });
  await withFleet((broker) => {
    assertEquals(broker.publicProfiles().find((m) => m.id === "gemma3:1b")!.window, 4096);
  }, { maxWindow: 4096 });
  assertThrows(() => createCatalog({ maxWindow: 4095 }), (e) => assert(e instanceof CatalogError));
  assertThrows(
    () => createCatalog({ maxWindow: 4096.5 }),
    (e) => assert(e instanceof CatalogError),
  );
});

Deno.test("each family gets its profile: Qwen 3.x the fixed sampling, others only num_ctx/num_predict/seed; tools phase temperature 0", async () => {
  await withFleet(async (broker, ollama) => {
    ollama.enqueue(sc.text("a"), sc.text("b"), sc.text("c"), sc.toolCall());
    await chat(broker, "qwen3.5:2b");
    await chat(broker, "gemma3:1b");
    await chat(broker, "deepseek-r1:1.5b");
    await chat(broker, "llama3.2:3b", "tools");
    const [q, g, d, l] = ollama.chats.map((c) => c.body);
    assertEquals(q.options, {
      temperature: 1.0,
      top_p: 0.95,
      top_k: 20,
      presence_penalty: 1.5,
      seed: 0,
      num_ctx: 32768,
      num_predict: 4096,
    });
    assertEquals(g.options, { seed: 0, num_ctx: 8192, num_predict: 2048 });
    assertEquals(d.options, { seed: 0, num_ctx: 32768, num_predict: 4096 });
    assertEquals(l.options, { temperature: 0, seed: 0, num_ctx: 32768, num_predict: 4096 });
    assertEquals([q.model, g.model, d.model, l.model], [
      "qwen3.5:2b",
      "gemma3:1b",
      "deepseek-r1:1.5b",
      "llama3.2:3b",
    ]);
    // think only for thinking models; tools only where the model has them.
    assertEquals([q.think, "think" in g, d.think, "think" in l], [true, false, true, false]);
    assertEquals(l.tools.length, 1);
    // A chat_only model is refused the tools phase before any request.
    assertEquals(await chat(broker, "gemma3:1b", "tools"), {
      kind: "failed",
      code: "model_capability_missing",
      retryable: false,
    });
    assertEquals(ollama.chats.length, 4);
  });
});

Deno.test("a slow, a huge and a malformed /api/show refuse that one model only; a show of exactly 1 MiB is read", async () => {
  const models = fleet();
  const pad = (n: number) => {
    const base = JSON.stringify({
      capabilities: ["completion", "tools"],
      model_info: { "general.architecture": "llama", "llama.context_length": 8192 },
      license: "",
    });
    return base.slice(0, -2) + "x".repeat(n - base.length) + '"}';
  };
  models["slow:1b"] = { ...FAKE_FLEET["llama3.2:3b"], showDelayMs: 60_000 };
  models["huge:1b"] = { ...FAKE_FLEET["llama3.2:3b"], showRaw: pad(MODEL_SHOW_BODY_MAX_BYTES + 1) };
  models["exact:1b"] = { ...FAKE_FLEET["llama3.2:3b"], showRaw: pad(MODEL_SHOW_BODY_MAX_BYTES) };
  models["bad:1b"] = { ...FAKE_FLEET["llama3.2:3b"], showRaw: "{not json" };
  await withFleet(
    (broker) => {
      const by = Object.fromEntries(broker.publicProfiles().map((m) => [m.id, m]));
      assertEquals(by["slow:1b"].reason, "show_timeout");
      assertEquals(by["huge:1b"].reason, "show_too_large");
      assertEquals(by["bad:1b"].reason, "protocol_error");
      assertEquals([by["exact:1b"].state, by["exact:1b"].window], ["ready", 8192]);
      assertEquals(by["qwen3.5:2b"].state, "ready");
      assertEquals(by["llama3.2:3b"].state, "ready");
    },
    { timeouts: { showMs: 5000 } },
    models,
  );
});

Deno.test("at most 4 /api/show requests are in flight at once", async () => {
  const models: Record<string, FakeModel> = {};
  for (let i = 0; i < 10; i++) {
    models[`m${i}:1b`] = { ...FAKE_FLEET["gemma3:1b"], showDelayMs: 1000 };
  }
  await withFleet(
    (broker, ollama) => {
      assertEquals(broker.publicProfiles().length, 10);
      assertEquals(ollama.maxShowsInFlight, 4);
    },
    {},
    models,
  );
});

Deno.test("at most 256 models are read from /api/tags: 256 are all listed, the 257th is not", async () => {
  for (const n of [MODEL_TAGS_MAX, MODEL_TAGS_MAX + 1]) {
    const models: Record<string, FakeModel> = {};
    for (let i = 0; i < n; i++) {
      models[`m${String(i).padStart(3, "0")}:1b`] = FAKE_FLEET["gemma3:1b"];
    }
    await withFleet(
      (broker, ollama) => {
        assertEquals(broker.publicProfiles().length, MODEL_TAGS_MAX);
        assertEquals(ollama.requests.filter((r) => r.path === "/api/show").length, MODEL_TAGS_MAX);
      },
      {},
      models,
    );
  }
});

Deno.test("a /api/tags body over 1 MiB marks the catalog unavailable with its reason", async () => {
  const models: Record<string, FakeModel> = {};
  for (let i = 0; i < 5000; i++) models[`m${i}:1b`] = FAKE_FLEET["gemma3:1b"];
  await withFleet(
    (broker) => {
      assertEquals(brief(broker.publicProfiles()), [
        ["qwen3.5:2b", "unavailable", null, null, true, "tags_too_large"],
      ]);
    },
    {},
    models,
  );
});

Deno.test("a model that vanished stays listed as unavailable until an explicit refresh", async () => {
  await withFleet(async (broker, ollama) => {
    delete ollama.models["gemma3:1b"];
    await broker.requalify();
    const g = broker.publicProfiles().find((m) => m.id === "gemma3:1b")!;
    assertEquals([g.state, g.reason], ["unavailable", "model_missing"]);
    await broker.refresh();
    assertEquals(broker.publicProfiles().some((m) => m.id === "gemma3:1b"), false);
  });
});

Deno.test("the catalog name grammar: ≤ 3 lower-case path parts, an optional tag, ≤ 256 bytes", () => {
  for (
    const ok of [
      "qwen3.5:2b",
      "llama3.2",
      "library/llama3:8B-Instruct_q4.K",
      "a/b/c:tag",
      "x".repeat(252) + ":abc",
    ]
  ) assert(isModelName(ok), ok);
  for (
    const bad of [
      "",
      "Qwen3:2b",
      "a/b/c/d",
      "-x",
      "a:",
      "a:b:c",
      "a b",
      "a/../b",
      "x".repeat(253) + ":abc",
      "ünï:1",
    ]
  ) assert(!isModelName(bad), bad);
  assert(isHostQualified("registry.example/llama3:8b"));
  assert(isHostQualified("localhost:5000/llama3"));
  assert(!isHostQualified("library/llama3:8b"));
  assert(!isHostQualified("qwen3.5:2b"));
  assertThrows(() => createCatalog({ models: Array.from({ length: 33 }, (_, i) => `m${i}`) }));
  createCatalog({ models: Array.from({ length: 32 }, (_, i) => `m${i}`) });
  assertThrows(
    () => createCatalog({ models: ["a", "a"] }),
    (e) => assert(e instanceof CatalogError),
  );
  assertThrows(
    () => createCatalog({ models: ["a"], defaultModel: "b" }),
    (e) => assert(e instanceof CatalogError),
  );
});
