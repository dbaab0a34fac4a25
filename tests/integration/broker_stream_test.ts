/**
 * The broker against the scripted Ollama server: successful streams — plain
 * text, thinking, tool calls (in a done:false frame, inside the final frame,
 * several per frame), the 12 KiB commit ceiling with drain, delta coalescing —
 * and exactly what the broker sent [MB-1, MB-3, MB-6].
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import {
  ANSWER_COMMIT_MAX_BYTES,
  CONTENT_IPC_FRAMES_MAX,
  PROVIDER_STREAM_MAX_FRAMES,
} from "../../runtime/limits.ts";
import { MAX_OUTPUT_MARKER } from "../../runtime/model/answer.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { contentFrame, doneFrame } from "../../tools/fake_ollama/frames.ts";
import { pairs, withBroker } from "../helpers/model.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

Deno.test("a plain answer streams as coalesced deltas and completes with validated usage", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(
      sc.text("Hello there, operator. This is a streamed answer.", {
        promptEvalCount: 17,
        evalCount: 9,
      }),
    );
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assertEquals(out, {
      kind: "completed",
      content: "Hello there, operator. This is a streamed answer.",
      reasoning: "",
      toolCalls: [],
      usage: { inputTokens: 17, outputTokens: 9, complete: true },
      reason: "stop",
    });
    assertEquals(
      rec.deltas.map((d) => d.text).join(""),
      "Hello there, operator. This is a streamed answer.",
    );
    assertEquals(rec.types(), pairs(1));
    const fin = rec.events.at(-1)!;
    assert(fin.type === "response.finished");
    assertEquals(fin.e.outcome, "completed");
    assertEquals(fin.e.attempts, 1);
    assertEquals(fin.e.errorCode, null);
  });
});

Deno.test("the broker sends only catalog-fixed options: plain policy, num_ctx = window, num_predict = reserve", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("ok"));
    const { req: r, rec } = req();
    await broker.chat(r);
    const sent = ollama.chats[0].body;
    assertEquals(Object.keys(sent), [
      "model",
      "messages",
      "stream",
      "think",
      "truncate",
      "keep_alive",
      "options",
    ]);
    assertEquals(sent.think, true); // a thinking model, reasoning on by default [MB-12]
    assertEquals(sent.model, "qwen3.5:2b");
    assertEquals(sent.stream, true);
    assertEquals(sent.truncate, false);
    assertEquals(sent.keep_alive, 300);
    assertEquals(sent.options, {
      temperature: 1.0,
      top_p: 0.95,
      top_k: 20,
      presence_penalty: 1.5,
      seed: 0,
      num_ctx: 32768,
      num_predict: 4096,
    });
    assertEquals(sent.messages, r.messages);
    assertEquals(ollama.chats[0].path, "/api/chat");
    const started = rec.events[0];
    assert(started.type === "request.started");
    assertEquals(started.e.requestBytes, bytes(JSON.stringify(sent)));
    assert(/^sha256:[0-9a-f]{64}$/.test(started.e.digest));
    assertEquals(started.e.recovery, 0);
  });
});

Deno.test("the tool-selection phase sends temperature 0 and seed 0 and the tool schemas", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.toolCall());
    const tools = [{
      type: "function" as const,
      function: {
        name: "file/stat",
        description: "stat a file",
        parameters: {
          type: "object",
          properties: { path: { type: "string" } },
          required: ["path"],
        },
      },
    }];
    const { req: r } = req({ phase: "tools", tools });
    const out = await broker.chat(r);
    assertEquals(out.kind, "completed");
    const sent = ollama.chats[0].body;
    assertEquals(sent.options, { temperature: 0, seed: 0, num_ctx: 32768, num_predict: 4096 });
    assertEquals(sent.tools, tools);
  });
});

Deno.test("extra fields smuggled onto messages or tool schemas never reach Ollama", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.toolCall());
    const smuggled = { options: { num_ctx: 1_000_000, temperature: 2 }, keep_alive: -1 };
    const tool = {
      type: "function" as const,
      function: { name: "file/stat", description: "stat", parameters: { type: "object" } },
    };
    const { req: r } = req({
      phase: "tools",
      messages: [{ role: "user", content: "Hi", images: ["AAAA"], ...smuggled }] as any,
      tools: [{ ...tool, ...smuggled, function: { ...tool.function, ...smuggled } }] as any,
    });
    assertEquals((await broker.chat(r)).kind, "completed");
    const sent = ollama.chats[0].body;
    assertEquals(sent.messages, [{ role: "user", content: "Hi" }]);
    assertEquals(sent.tools, [tool]);
    assertEquals(sent.keep_alive, 300);
    assertEquals(sent.options, { temperature: 0, seed: 0, num_ctx: 32768, num_predict: 4096 });
  });
});

Deno.test("plain phase never sends tools even when the caller passes some", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("ok"));
    const { req: r } = req({
      tools: [{ type: "function", function: { name: "x", description: "x", parameters: {} } }],
    });
    await broker.chat(r);
    assertEquals("tools" in ollama.chats[0].body, false);
  });
});

Deno.test("tool calls in a done:false frame are surfaced with id, name and object arguments", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.toolCall());
    const out = await broker.chat(req({ phase: "tools" }).req);
    assert(out.kind === "completed");
    assertEquals(out.toolCalls, [{
      id: "call_f00d",
      name: "file__stat",
      arguments: { path: "agent-builder.md" },
    }]);
    assertEquals(out.content, "");
  });
});

Deno.test("tool calls carried inside the final done:true frame are surfaced", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.toolCallInDone([{ name: "file/glob", arguments: { pattern: "*.md" } }]));
    const out = await broker.chat(req({ phase: "tools" }).req);
    assert(out.kind === "completed");
    assertEquals(out.toolCalls, [{
      id: "call_0",
      name: "file/glob",
      arguments: { pattern: "*.md" },
    }]);
  });
});

Deno.test("several tool calls in one frame keep their order and ids", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.multiToolCalls());
    const out = await broker.chat(req({ phase: "tools" }).req);
    assert(out.kind === "completed");
    assertEquals(out.toolCalls.map((c) => [c.id, c.name]), [["call_a1", "file__stat"], [
      "call_b2",
      "file__read_text",
    ]]);
    assertEquals(out.toolCalls[1].arguments, { path: "src/main.ts", offset: 0 });
  });
});

Deno.test("thinking frames are not part of the visible answer", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.thinking());
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.content, "Hi there!");
    assertEquals(rec.deltas.map((d) => d.text).join(""), "Hi there!");
  });
});

Deno.test("a done_reason of length completes with reason length", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("cut by num_predict", { doneReason: "length" }));
    const out = await broker.chat(req().req);
    assert(out.kind === "completed");
    assertEquals(out.reason, "length");
  });
});

Deno.test("a final frame without counts completes with usage marked incomplete", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("no counts", { omitCounts: true }));
    const out = await broker.chat(req().req);
    assert(out.kind === "completed");
    assertEquals(out.usage, { inputTokens: 0, outputTokens: 0, complete: false });
  });
});

Deno.test("output over 12 KiB commits a UTF-8-safe prefix plus one marker, drains for usage, reason max_output", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.oversize(40 * 1024));
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.reason, "max_output");
    assert(bytes(out.content) <= ANSWER_COMMIT_MAX_BYTES, `${bytes(out.content)} bytes`);
    assert(out.content.endsWith(MAX_OUTPUT_MARKER));
    assertEquals(out.content.split(MAX_OUTPUT_MARKER).length, 2);
    assert(!out.content.includes("\uFFFD"), "no broken code point");
    assertEquals(out.usage.complete, true); // drained to the final frame
    assert(out.usage.outputTokens > 1000);
    assertEquals(await ollama.chats[0].closed, "completed");
    assertEquals(rec.deltas.map((d) => d.text).join(""), out.content);
    assert(rec.deltas.length <= CONTENT_IPC_FRAMES_MAX);
    const fin = rec.events.at(-1)!;
    assert(fin.type === "response.finished");
    assertEquals(fin.e.outcome, "max_output");
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 10_000, callMs: 20_000 } }); // no timer under load
});

Deno.test("a long stream of tiny frames reaches the caller as at most 128 deltas", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    const words = Array.from({ length: 3000 }, (_, i) => `w${i % 97}`).join(" ");
    ollama.enqueue(sc.text(words));
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assert(rec.deltas.length <= CONTENT_IPC_FRAMES_MAX, `${rec.deltas.length} deltas`);
    assertEquals(rec.deltas.map((d) => d.text).join(""), out.content);
    assertEquals(rec.deltas.map((d) => d.index), rec.deltas.map((_, i) => i));
  });
});

Deno.test("the default scripted answer is friendly Markdown", async () => {
  await withBroker(async ({ broker, req, ollama }) => {
    ollama.setDefault(sc.markdown(0));
    const out = await broker.chat(req().req);
    assert(out.kind === "completed");
    assertMatch(out.content, /\*\*scripted Ollama\*\*/);
  });
});

Deno.test("tool calls arriving together with a max_output answer fail closed with model_protocol_error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    const big = "déjà vu ".repeat(2000); // 18 KB in one frame: past the ceiling
    ollama.enqueue((c) => ({
      kind: "stream",
      steps: [
        { frame: contentFrame(c.model, big) },
        {
          frame: doneFrame(c.model, {
            toolCalls: [{ name: "file/stat", arguments: { path: "x" } }],
          }),
        },
      ],
    }));
    assertEquals(await broker.chat(req({ phase: "tools" }).req), {
      kind: "failed",
      code: "model_protocol_error",
      retryable: false,
    });
  });
});

Deno.test("once the 12 KiB answer is committed, a drain that breaks a stream bound or stalls still finishes max_output", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    const big = "déjà vu, encore une fois. ".repeat(600); // ≈ 16 KB: past the ceiling
    // Past the ceiling, the provider keeps going beyond the 4096-frame bound (as a
    // num_predict-long answer does: 4096 token frames + the final frame).
    ollama.enqueue((c) => ({
      kind: "stream",
      steps: (function* () {
        yield { frame: contentFrame(c.model, big) };
        for (let i = 0; i < PROVIDER_STREAM_MAX_FRAMES; i++) {
          yield { frame: contentFrame(c.model, ` t${i}`) };
        }
        yield { frame: doneFrame(c.model, { doneReason: "length" }) };
      })(),
    }), (c) => ({
      kind: "stream",
      steps: [{ frame: contentFrame(c.model, big) }, { hang: true }],
    }));
    for (const [i, transport] of [[0, "stream_too_large"], [1, "idle_timeout"]] as const) {
      // tools phase: no repetition guard; reasoning off: the [MB-6] stream bounds
      const { req: r, rec } = req({ phase: "tools", reasoning: false });
      const out = await broker.chat(r);
      assert(out.kind === "completed", JSON.stringify(out));
      assertEquals(out.reason, "max_output");
      assert(out.content.endsWith(MAX_OUTPUT_MARKER));
      assert(bytes(out.content) <= ANSWER_COMMIT_MAX_BYTES);
      assertEquals(out.usage, { inputTokens: 0, outputTokens: 0, complete: false });
      assertEquals(rec.types(), pairs(1));
      assertEquals((rec.events[2].e as any).outcome, transport);
      assertEquals((rec.events[3].e as any).outcome, "max_output");
      // The stalled stream is hung up on (the bounded one may already sit whole in socket buffers).
      if (i === 1) assertEquals(await ollama.chats[i].closed, "client_closed");
    }
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 1500, callMs: 20_000 } }); // idle: only the stall
});

Deno.test("the event loop turns once after a call's first delta, before the rest of the stream is parsed [PF-1]", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue((c) => ({
      kind: "stream",
      // The whole stream in one write: the broker reads it at once.
      steps: [{
        raw: [
          ...Array.from({ length: 40 }, (_, i) => contentFrame(c.model, ` w${i}`)),
          doneFrame(c.model, { evalCount: 40 }),
        ].map((f) => JSON.stringify(f) + "\n").join(""),
      }],
    }));
    // A timer set at the first delta stands for the SSE write of that delta: it must run
    // before the rest of the stream (read at once) is parsed and its last delta emitted.
    const order: string[] = [];
    const { req: r } = req({
      onDelta: (d) => {
        order.push(`delta ${d.index}`);
        if (d.index === 0) setTimeout(() => order.push("macrotask"), 0);
      },
    });
    const out = await broker.chat(r);
    order.push("outcome");
    assertEquals(out.kind, "completed");
    assertEquals(order[0], "delta 0");
    const lastDelta = order.findLastIndex((x) => x.startsWith("delta"));
    assert(lastDelta > 0, order.join(", "));
    const turned = order.indexOf("macrotask");
    assert(turned > 0 && turned < lastDelta, order.join(", "));
  });
});
