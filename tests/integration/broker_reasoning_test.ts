/**
 * Reasoning through the broker against the scripted Ollama [MB-12]: `think`
 * follows the setting for thinking models only; thinking arrives as reasoning
 * deltas, never in the answer; past 32 KiB it is cut with one marker while the
 * answer is untouched; with reasoning on the raw stream may hold 16,384 frames
 * (one more fails), with it off the [MB-6] 4096 stands; a repeated thought
 * never trips the repetition guard. Discovery meanwhile never disturbs a call
 * in flight, and runs again by itself while idle.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  PROVIDER_STREAM_REASONING_MAX_BYTES,
  PROVIDER_STREAM_REASONING_MAX_FRAMES,
  REASONING_COMMIT_MAX_BYTES,
} from "../../runtime/limits.ts";
import { REASONING_MARKER } from "../../runtime/model/reasoning.ts";
import { createBroker } from "../../runtime/model/broker.ts";
import { createCatalog } from "../../runtime/model/catalog.ts";
import {
  contentFrame,
  doneFrame,
  FAKE_FLEET,
  thinkingFrame,
} from "../../tools/fake_ollama/frames.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { FAST, memoryLogger, withBroker } from "../helpers/model.ts";

const NO_TIMERS = { firstFrameMs: 10_000, idleMs: 10_000, callMs: 30_000 };

Deno.test("think follows the reasoning setting; thinking streams as reasoning deltas and never reaches the answer", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.thinking(), sc.thinking());
    const seen: string[] = [];
    const on = await broker.chat(req({ onReasoningDelta: (d) => seen.push(d.text) }).req);
    assert(on.kind === "completed");
    assertEquals(on.content, "Hi there!");
    assertEquals(on.reasoning, "The user greets me. I should answer briefly.");
    assertEquals(seen.join(""), on.reasoning);
    assertEquals(ollama.chats[0].body.think, true);
    const off = await broker.chat(req({ reasoning: false }).req);
    assertEquals(ollama.chats[1].body.think, false);
    assert(off.kind === "completed" && off.content === "Hi there!");
  }, { timeouts: NO_TIMERS });
});

Deno.test("reasoning past 32 KiB is cut with one marker; the answer and the repetition guard are untouched", async () => {
  const thought = "I keep thinking the very same thought over and over. "; // repeats: never guarded
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue((c) => ({
      kind: "stream",
      steps: (function* () {
        for (let i = 0; i < 1000; i++) yield { frame: thinkingFrame(c.model, thought) };
        yield { frame: contentFrame(c.model, "The answer.") };
        yield { frame: doneFrame(c.model) };
      })(),
    }));
    const out = await broker.chat(req().req);
    assert(out.kind === "completed", JSON.stringify(out).slice(0, 200));
    assertEquals([out.content, out.reason], ["The answer.", "stop"]);
    assert(out.reasoning.endsWith(REASONING_MARKER));
    assert(new TextEncoder().encode(out.reasoning).length <= REASONING_COMMIT_MAX_BYTES);
  }, { timeouts: NO_TIMERS });
});

Deno.test("with reasoning on the raw stream may hold 16,384 frames; one more fails model_stream_too_large", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.manyFrames(PROVIDER_STREAM_REASONING_MAX_FRAMES - 2)); // + content + done
    const ok = await broker.chat(req().req);
    assert(ok.kind === "completed", JSON.stringify(ok).slice(0, 200));
    ollama.enqueue(sc.manyFrames(PROVIDER_STREAM_REASONING_MAX_FRAMES - 1));
    assertEquals(await broker.chat(req().req), {
      kind: "failed",
      code: "model_stream_too_large",
      retryable: false,
    });
    ollama.enqueue(sc.manyFrames(PROVIDER_STREAM_REASONING_MAX_FRAMES - 2));
    assertEquals((await broker.chat(req({ reasoning: false }).req)).kind, "failed"); // 4096 then
  }, { timeouts: NO_TIMERS });
});

Deno.test("with reasoning on the raw stream may hold 4 MiB; past it model_stream_too_large", async () => {
  const chunk = "hmm… ".repeat(1300); // ≈ 8 KB of thinking per frame
  const thinker = (frames: number | null) => (c: { model: string }) => ({
    kind: "stream" as const,
    steps: (function* () {
      for (let i = 0; frames === null || i < frames; i++) {
        yield { frame: thinkingFrame(c.model, chunk) };
      }
      yield { frame: contentFrame(c.model, "ok") };
      yield { frame: doneFrame(c.model) };
    })(),
  });
  await withBroker(async ({ ollama, broker, req }) => {
    const frameBytes =
      new TextEncoder().encode(JSON.stringify(thinkingFrame("qwen3.5:2b", chunk))).length + 1;
    const under = Math.floor((PROVIDER_STREAM_REASONING_MAX_BYTES - 1024) / frameBytes);
    assert(under * frameBytes > 3 * 1024 * 1024, "well past the [MB-6] 1 MiB");
    ollama.enqueue(thinker(under), thinker(null));
    const ok = await broker.chat(req().req);
    assert(ok.kind === "completed" && ok.content === "ok", JSON.stringify(ok).slice(0, 200));
    assertEquals(await broker.chat(req().req), {
      kind: "failed",
      code: "model_stream_too_large",
      retryable: false,
    });
  }, { timeouts: NO_TIMERS });
});

Deno.test("discovery during a call never disturbs it, even when the model vanished meanwhile", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("slow but steady answer", { frameDelayMs: 40 }));
    const call = broker.chat(req().req);
    await ollama.waitForChat(0);
    delete ollama.models["qwen3.5:2b"];
    await broker.refresh();
    const out = await call;
    assert(out.kind === "completed" && out.content === "slow but steady answer");
    assertEquals((await broker.profile("qwen3.5:2b")).ok, false);
  }, { timeouts: NO_TIMERS });
});

Deno.test("discovery runs again by itself while idle: a model added to Ollama joins the catalog", async () => {
  const ollama = await startFakeOllama();
  const broker = createBroker({
    catalog: createCatalog({
      ollamaUrl: ollama.url,
      timeouts: { ...FAST, discoveryIntervalMs: 50 },
    }),
    log: memoryLogger(),
  });
  try {
    ollama.models["gemma3:1b"] = FAKE_FLEET["gemma3:1b"];
    const end = Date.now() + 20_000;
    while (!broker.publicProfiles().some((m) => m.id === "gemma3:1b") && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(broker.publicProfiles().find((m) => m.id === "gemma3:1b")?.state, "chat_only");
  } finally {
    await broker.close();
    await ollama.close();
  }
});
