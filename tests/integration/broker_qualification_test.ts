/**
 * Qualification against the scripted Ollama server [MB-2, MB-10]: the window
 * is min(native, 32768) from `<arch>.context_length`, the reserve
 * min(4096, window / 4), every failure has a fixed reason, a hostname is
 * resolved once and pinned, and re-qualification happens on demand.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { createBroker } from "../../runtime/model/broker.ts";
import { createCatalog } from "../../runtime/model/catalog.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import type { UnavailableReason } from "../../runtime/model/types.ts";
import { FAST, memoryLogger, withBroker } from "../helpers/model.ts";

const model = (contextLength: number, capabilities = ["completion", "tools"]) => ({
  "qwen3.5:2b": { arch: "qwen35", contextLength, capabilities },
});

Deno.test("the default model's 262144-token native window is capped to 32768 with a 28672 budget", async () => {
  await withBroker(({ broker, ollama }) => {
    const s = broker.status();
    assert(s.available);
    assertEquals(
      [s.profile.nativeWindow, s.profile.window, s.profile.reserve, s.profile.budget],
      [262144, 32768, 4096, 28672],
    );
    assertEquals(s.profile.capabilities, { completion: true, tools: true, thinking: true });
    assertEquals(s.profile.truncateSupported, true);
    assertEquals(ollama.requests.map((r) => `${r.method} ${r.path}`), [
      "GET /api/version",
      "GET /api/tags",
      "POST /api/show",
    ]);
    assertEquals(ollama.requests[2].body, { model: "qwen3.5:2b" });
  });
});

Deno.test("a smaller native window is used as reported, never trusted from the name", async () => {
  await withBroker(async ({ broker, ollama, req }) => {
    const p = await broker.profile("qwen3.5:2b");
    assert(p.ok);
    assertEquals([p.profile.window, p.profile.reserve, p.profile.budget], [8192, 2048, 6144]);
    ollama.enqueue(sc.text("ok"));
    await broker.chat(req().req);
    assertEquals(ollama.chats[0].body.options.num_ctx, 8192);
    assertEquals(ollama.chats[0].body.options.num_predict, 2048);
  }, { fake: { models: model(8192) } });
  await withBroker(({ broker }) => {
    const s = broker.status();
    assert(s.available);
    assertEquals([s.profile.window, s.profile.reserve, s.profile.budget], [4096, 1024, 3072]);
  }, { fake: { models: model(4096) } });
});

Deno.test("qualification failures map to fixed reasons", async () => {
  const cases: Array<[string, Parameters<typeof withBroker>[1], UnavailableReason]> = [
    ["window below 2048", { fake: { models: model(1024) } }, "window_too_small"],
    [
      "no completion capability",
      { fake: { models: model(32768, ["embedding"]) } },
      "capability_missing",
    ],
    ["model not pulled", { fake: { models: {} } }, "model_missing"],
    ["version endpoint failing", { fake: { versionStatus: 500 } }, "unreachable"],
  ];
  for (const [name, opts, reason] of cases) {
    await withBroker(async ({ broker, req }) => {
      assertEquals(broker.status(), { available: false, reason }, name);
      const out = await broker.chat(req().req);
      assertEquals(out, { kind: "failed", code: "model_unavailable", retryable: true }, name);
      assertEquals(
        await broker.profile("qwen3.5:2b"),
        { ok: false, code: "model_unavailable" },
        name,
      );
    }, opts);
  }
});

Deno.test("show without a context length for the architecture is a protocol_error", async () => {
  const broken = await startFakeOllama({ models: model(0) });
  try {
    const broker = createBroker({
      catalog: createCatalog({ ollamaUrl: broken.url, timeouts: FAST }),
      log: memoryLogger(),
      qualifyNow: false,
    });
    await broker.requalify();
    assertEquals(broker.status(), { available: false, reason: "protocol_error" });
    await broker.close();
  } finally {
    await broken.close();
  }
});

Deno.test("an older Ollama without truncate support gets no truncate field", async () => {
  await withBroker(async ({ broker, ollama, req }) => {
    ollama.enqueue(sc.text("ok"));
    await broker.chat(req().req);
    assertEquals("truncate" in ollama.chats[0].body, false);
  }, { fake: { version: "0.11.4" } });
});

Deno.test("a host name is resolved once and pinned; Host names the operator's host", async () => {
  const ollama = await startFakeOllama();
  try {
    const broker = createBroker({
      catalog: createCatalog({ ollamaUrl: `http://localhost:${ollama.port}`, timeouts: FAST }),
      log: memoryLogger(),
      qualifyNow: false,
    });
    await broker.requalify();
    assert(broker.status().available);
    assertEquals(ollama.requests[0].headers.host, `localhost:${ollama.port}`);
    await broker.close();
  } finally {
    await ollama.close();
  }
});

Deno.test("a host name resolving to several addresses pins the first that answers, resolved once", async () => {
  const ollama = await startFakeOllama();
  const lookups: string[] = [];
  const broker = createBroker({
    catalog: createCatalog({ ollamaUrl: `http://ollama.test:${ollama.port}`, timeouts: FAST }),
    log: memoryLogger(),
    qualifyNow: false,
    // Like `localhost` on a dual-stack host: the first address has no Ollama listening.
    resolve: (host) => (lookups.push(host), Promise.resolve(["127.0.0.2", "127.0.0.1"])),
  });
  try {
    await broker.requalify();
    assert(broker.status().available, JSON.stringify(broker.status()));
    await broker.requalify();
    assertEquals(lookups, ["ollama.test"]);
    assertEquals(ollama.requests[0].headers.host, `ollama.test:${ollama.port}`);
    const out = await broker.chat({
      modelId: "qwen3.5:2b",
      phase: "plain",
      messages: [{ role: "user", content: "Hi" }],
      signal: new AbortController().signal,
      deadline: Date.now() + 10_000,
    });
    assertEquals(out.kind, "completed");
  } finally {
    await broker.close();
    await ollama.close();
  }
});

Deno.test("the model becomes available on demand once Ollama comes up, and public profiles never show host or port", async () => {
  const log = memoryLogger();
  // Reserve a port, start with nothing listening there, then bring the server up on it.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  const broker = createBroker({
    catalog: createCatalog({ ollamaUrl: `http://127.0.0.1:${port}`, timeouts: FAST }),
    log,
    qualifyNow: false,
  });
  await broker.requalify();
  assertEquals(broker.status(), { available: false, reason: "unreachable" });
  assertEquals(broker.publicProfiles(), [{
    id: "qwen3.5:2b",
    default: true,
    state: "unavailable",
    family: null,
    parameter_size: null,
    quantization: null,
    available: false,
    reason: "unreachable",
    window: null,
    budget: null,
    capabilities: [],
  }]);
  const ollama = await startFakeOllama({ port });
  try {
    const p = await broker.profile("qwen3.5:2b"); // re-qualifies on demand
    assert(p.ok);
    const pub = broker.publicProfiles();
    assertEquals(pub, [{
      id: "qwen3.5:2b",
      default: true,
      state: "ready",
      family: "qwen35",
      parameter_size: "2B",
      quantization: "Q4_K_M",
      available: true,
      window: 32768,
      budget: 28672,
      capabilities: ["completion", "tools", "thinking"],
    }]);
    assert(!JSON.stringify(pub).includes(String(port)));
    assert(!JSON.stringify(pub).includes("127.0.0.1"));
    assertEquals(await broker.profile("nope"), { ok: false, code: "model_not_found" });
  } finally {
    await broker.close();
    await ollama.close();
  }
});

Deno.test("re-qualification is spaced: poke() does nothing until the interval has passed", async () => {
  await withBroker(async ({ broker, ollama }) => {
    assertEquals(broker.status(), { available: false, reason: "unreachable" });
    const before = ollama.requests.length;
    broker.poke();
    await new Promise((r) => setTimeout(r, 30));
    assertEquals(ollama.requests.length, before);
  }, { fake: { versionStatus: 500 }, timeouts: { requalifyIntervalMs: 60_000 } });
});
