/**
 * The broker against the scripted Ollama server: provider errors and stream
 * faults map to fixed codes with the right retry and event shape [MB-5, MB-6,
 * MB-8]: in-band errors, EOF without done, empty 200 bodies, 404/400/5xx,
 * context overflow recovery, raw stream bounds, unknown ids and capabilities.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  MODEL_TOOL_CALLS_PER_RESPONSE_MAX,
  PROVIDER_FRAME_MAX_BYTES,
  PROVIDER_STREAM_MAX_BYTES,
  PROVIDER_STREAM_MAX_FRAMES,
} from "../../runtime/limits.ts";
import {
  contentFrame,
  doneFrame,
  thinkingFrame,
  toolCallFrame,
} from "../../tools/fake_ollama/frames.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { pairs, withBroker } from "../helpers/model.ts";

const finished = (rec: { events: { type: string; e: unknown }[] }) => {
  const f = rec.events.at(-1)!;
  assertEquals(f.type, "response.finished");
  return f.e as { outcome: string; errorCode: string | null; attempts: number; usage: unknown };
};

Deno.test("an in-band error line mid-stream fails with model_provider_error and no retry", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.inBandError());
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_provider_error",
      retryable: true,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(ollama.chats.length, 1);
    const f = finished(rec);
    assertEquals([f.outcome, f.errorCode], ["failed", "model_provider_error"]);
    assertEquals(f.usage, { inputTokens: 0, outputTokens: 0, complete: false });
  });
});

Deno.test("EOF after frames without a done frame fails with model_protocol_error and no retry", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.eofWithoutDone());
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_protocol_error",
      retryable: false,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(ollama.chats.length, 1);
  });
});

Deno.test("an empty 200 body (no frame) is retried once transparently and can then succeed", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.emptyStream(), sc.text("second time lucky"));
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.content, "second time lucky");
    assertEquals(rec.types(), pairs(2));
    const attempts = rec.events.filter((e) => e.type === "attempt.finished").map((e) => e.e);
    assertEquals(attempts.map((a: any) => [a.attempt, a.maxAttempts, a.outcome]), [
      [1, 2, "protocol_error"],
      [2, 2, "ok"],
    ]);
    assertEquals((attempts[0] as any).ttfbMs, null);
    assert(typeof (attempts[1] as any).ttfbMs === "number");
    assertEquals(finished(rec).attempts, 2);
  });
});

Deno.test("a 5xx before any frame is retried once, then fails with model_provider_error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.serverError(), sc.serverError(503));
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_provider_error",
      retryable: true,
    });
    assertEquals(rec.types(), pairs(2));
    assertEquals(ollama.chats.length, 2);
  });
});

Deno.test("a chat-time 404 model not found fails model_unavailable and marks the model unavailable", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.modelNotFound());
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_unavailable",
      retryable: true,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(broker.status(), { available: false, reason: "model_missing" });
  });
});

Deno.test("a 400 capability error fails model_capability_missing without retry", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.capabilityError("tools"));
    const { req: r, rec } = req({ phase: "tools" });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_capability_missing",
      retryable: false,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(ollama.chats.length, 1);
  });
});

Deno.test("a model without the tools capability is refused for the tools phase before any request", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    const { req: r, rec } = req({ phase: "tools" });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_capability_missing",
      retryable: false,
    });
    assertEquals(rec.events, []);
    assertEquals(ollama.chats.length, 0);
  }, {
    fake: {
      models: {
        "qwen3.5:2b": { arch: "qwen35", contextLength: 8192, capabilities: ["completion"] },
      },
    },
  });
});

Deno.test("an unknown model id fails model_not_found and sends nothing", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    const { req: r, rec } = req({ modelId: "llama3:70b" });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_not_found",
      retryable: false,
    });
    assertEquals(rec.events, []);
    assertEquals(ollama.chats.length, 0);
  });
});

Deno.test("a context overflow before any frame gets exactly one recovery call with the smaller projection", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.contextOverflow(), sc.text("fits now"));
    const calls: unknown[] = [];
    const smaller = [{ role: "user" as const, content: "current message only" }];
    const { req: r, rec } = req({
      recover: (info) => {
        calls.push(info);
        return smaller;
      },
    });
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.content, "fits now");
    assertEquals(calls, [{ modelId: "qwen3.5:2b", status: 400 }]);
    assertEquals(rec.types(), [...pairs(1), ...pairs(1)]);
    const firstFin = rec.events[3].e as any;
    assertEquals([firstFin.outcome, firstFin.errorCode], [
      "context_overflow",
      "model_context_limit",
    ]);
    assertEquals((rec.events[4].e as any).recovery, 1);
    assertEquals(ollama.chats[1].body.messages, smaller);
  });
});

Deno.test("a 413 overflow is recoverable too", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.contextOverflow(413), sc.text("ok"));
    const out = await broker.chat(req({ recover: () => [{ role: "user", content: "x" }] }).req);
    assertEquals(out.kind, "completed");
  });
});

Deno.test("a second overflow is never recovered again: model_context_limit", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.contextOverflow(), sc.contextOverflow());
    let n = 0;
    const { req: r, rec } = req({ recover: () => (n++, [{ role: "user", content: "x" }]) });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_context_limit",
      retryable: false,
    });
    assertEquals(n, 1);
    assertEquals(ollama.chats.length, 2);
    assertEquals(rec.types(), [...pairs(1), ...pairs(1)]);
  });
});

Deno.test("an overflow without a recovery hook (or a hook returning null) fails model_context_limit", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.contextOverflow(), sc.contextOverflow());
    assertEquals(await broker.chat(req().req), {
      kind: "failed",
      code: "model_context_limit",
      retryable: false,
    });
    assertEquals((await broker.chat(req({ recover: () => null }).req)).kind, "failed");
    assertEquals(ollama.chats.length, 2);
  });
});

Deno.test("a 400 whose body is not the strict overflow JSON is not treated as an overflow", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(
      {
        kind: "error",
        status: 400,
        body: '{"error":"the input length exceeds the context length","x":1}',
      },
      { kind: "error", status: 400, body: "the input length exceeds the context length" },
    );
    let recovered = 0;
    const hook = () => (recovered++, [{ role: "user" as const, content: "x" }]);
    assertEquals(await broker.chat(req({ recover: hook }).req), {
      kind: "failed",
      code: "model_provider_error",
      retryable: true,
    });
    assertEquals((await broker.chat(req({ recover: hook }).req)).kind, "failed");
    assertEquals(recovered, 0);
  });
});

Deno.test("a raw stream over 1 MiB fails with model_stream_too_large; just under 1 MiB completes", async () => {
  const chunk = "hmm… ".repeat(1300); // ≈ 8 KB of thinking per frame: never visible, never guarded
  /** `frames` thinking frames (endless when null), then a short answer and the final frame. */
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
    const under = Math.floor((PROVIDER_STREAM_MAX_BYTES - 1024) / frameBytes);
    ollama.enqueue(thinker(null), thinker(under));
    const { req: r, rec } = req({ reasoning: false }); // reasoning off: the [MB-6] bound
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_stream_too_large",
      retryable: false,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(await ollama.chats[0].closed, "client_closed");
    const out = await broker.chat(req({ reasoning: false }).req);
    assert(out.kind === "completed", JSON.stringify(out));
    assertEquals(out.content, "ok");
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 10_000, callMs: 20_000 } }); // no timer under load
});

Deno.test("a raw stream over 4096 frames fails with model_stream_too_large", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.manyFrames(PROVIDER_STREAM_MAX_FRAMES));
    assertEquals(await broker.chat(req({ reasoning: false }).req), {
      kind: "failed",
      code: "model_stream_too_large",
      retryable: false,
    });
    ollama.enqueue(sc.manyFrames(PROVIDER_STREAM_MAX_FRAMES - 2));
    assertEquals((await broker.chat(req({ reasoning: false }).req)).kind, "completed"); // 4094 + content + done = 4096
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 10_000, callMs: 20_000 } }); // no timer under load
});

Deno.test("a line that is not JSON fails with model_protocol_error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.garbage());
    assertEquals(await broker.chat(req().req), {
      kind: "failed",
      code: "model_protocol_error",
      retryable: false,
    });
  });
});

Deno.test("a frame with array tool arguments is a protocol error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue({
      kind: "stream",
      steps: [{
        frame: {
          model: "qwen3.5:2b",
          message: {
            role: "assistant",
            content: "",
            tool_calls: [{ function: { name: "x", arguments: [1] } }],
          },
          done: true,
          done_reason: "stop",
        },
      }],
    });
    assertEquals(await broker.chat(req({ phase: "tools" }).req), {
      kind: "failed",
      code: "model_protocol_error",
      retryable: false,
    });
  });
});

Deno.test("a ledger that cannot record the request boundary stops the call before any HTTP", async () => {
  await withBroker(async ({ ollama, broker, req, log }) => {
    const { req: r } = req({
      ledger: {
        started: () => {
          throw new Error("disk full");
        },
        finished: () => {
          throw new Error("must not be called");
        },
      },
    });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "journal_unavailable",
      retryable: false,
    });
    assertEquals(ollama.chats.length, 0);
    assert(log.lines.some((l) => l.event === "model.ledger_started_failed"));
  });
});

Deno.test("throwing transport observers and delta sinks never change the call", async () => {
  await withBroker(async ({ ollama, broker, req, log }) => {
    ollama.enqueue(sc.text("still fine"));
    const { req: r } = req({
      observer: {
        attemptStarted: () => {
          throw new Error("x");
        },
        attemptFinished: () => {
          throw new Error("y");
        },
      },
      onDelta: () => {
        throw new Error("sse gone");
      },
    });
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.content, "still fine");
    assertEquals(ollama.chats.length, 1); // no duplicate HTTP
    assertEquals(log.lines.filter((l) => l.event === "model.observer_failed").length, 2);
    assertEquals(log.lines.filter((l) => l.event === "model.delta_sink_failed").length, 1);
  });
});

Deno.test("a recovery hook that throws fails the call with model_context_limit", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.contextOverflow());
    const out = await broker.chat(
      req({
        recover: () => {
          throw new Error("bug");
        },
      }).req,
    );
    assertEquals(out, { kind: "failed", code: "model_context_limit", retryable: false });
    assertEquals(ollama.chats.length, 1);
  });
});

Deno.test("one NDJSON line over 64 KiB fails with model_stream_too_large; exactly 64 KiB is read", async () => {
  /** A content frame whose JSON line (without the newline) is exactly `n` bytes. */
  const lineOf = (n: number) => {
    const shell = JSON.stringify({
      model: "qwen3.5:2b",
      message: { role: "assistant", content: "" },
      done: false,
    });
    const pad = Array.from({ length: n - shell.length }, (_, i) => "abcdefghij"[i % 7]).join("");
    const line = shell.replace('"content":""', `"content":"${pad}"`);
    assertEquals(line.length, n);
    return line + "\n";
  };
  await withBroker(async ({ ollama, broker, req }) => {
    const done = JSON.stringify({ model: "qwen3.5:2b", done: true, done_reason: "stop" }) + "\n";
    ollama.enqueue(
      { kind: "stream", steps: [{ raw: lineOf(PROVIDER_FRAME_MAX_BYTES + 1) }, { raw: done }] },
      { kind: "stream", steps: [{ raw: lineOf(PROVIDER_FRAME_MAX_BYTES) }, { raw: done }] },
    );
    const { req: r, rec } = req({ phase: "tools" }); // tools phase: no repetition guard
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_stream_too_large",
      retryable: false,
    });
    assertEquals(rec.types(), pairs(1));
    const out = await broker.chat(req({ phase: "tools" }).req);
    assert(out.kind === "completed");
    assertEquals(out.reason, "max_output"); // 64 KiB of content is past the 12 KiB ceiling
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 10_000, callMs: 20_000 } }); // no timer under load
});

Deno.test("at most 16 tool calls per response: 16 are surfaced, a 17th in a later frame is a protocol error", async () => {
  const calls = (n: number, from = 0) =>
    Array.from({ length: n }, (_, i) => ({
      id: `call_${from + i}`,
      name: "file/stat",
      arguments: { path: `f${from + i}` },
    }));
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(
      (c) => ({
        kind: "stream",
        steps: [{ frame: toolCallFrame(c.model, calls(MODEL_TOOL_CALLS_PER_RESPONSE_MAX)) }, {
          frame: doneFrame(c.model),
        }],
      }),
      (c) => ({
        kind: "stream",
        steps: [
          { frame: toolCallFrame(c.model, calls(MODEL_TOOL_CALLS_PER_RESPONSE_MAX)) },
          { frame: doneFrame(c.model, { toolCalls: calls(1, MODEL_TOOL_CALLS_PER_RESPONSE_MAX) }) },
        ],
      }),
    );
    const ok = await broker.chat(req({ phase: "tools" }).req);
    assert(ok.kind === "completed");
    assertEquals(ok.toolCalls.length, MODEL_TOOL_CALLS_PER_RESPONSE_MAX);
    assertEquals(ok.toolCalls.at(-1)!.arguments, { path: "f15" });
    assertEquals(await broker.chat(req({ phase: "tools" }).req), {
      kind: "failed",
      code: "model_protocol_error",
      retryable: false,
    });
  });
});

Deno.test("a final frame whose done_reason is neither stop nor length (e.g. load) is a protocol error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    for (const reason of ["load", "unload", "stop"]) {
      ollama.enqueue((c) => ({
        kind: "stream",
        steps: [{ frame: contentFrame(c.model, "hi") }, {
          frame: { ...doneFrame(c.model), done_reason: reason },
        }],
      }));
      const out = await broker.chat(req().req);
      assertEquals(
        out.kind === "failed" ? out.code : out.kind,
        reason === "stop" ? "completed" : "model_protocol_error",
      );
    }
  });
});

Deno.test("an in-band error as the very first line counts as a provider frame: no retry, model_provider_error", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue({ kind: "stream", steps: [{ frame: { error: "model runner crashed" } }] });
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_provider_error",
      retryable: true,
    });
    assertEquals(rec.types(), pairs(1));
    assertEquals(ollama.chats.length, 1);
  });
});
