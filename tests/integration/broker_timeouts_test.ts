/**
 * Timeouts, retry, circuit breaker, semaphore and cancellation [MB-4, MB-5]
 * against the scripted Ollama server, with millisecond durations injected
 * through the catalog. The server records whether the broker hung up.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { freePort } from "../helpers/server.ts";
import { pairs, withBroker } from "../helpers/model.ts";
import { contentFrame, doneFrame } from "../../tools/fake_ollama/frames.ts";

const attemptOutcomes = (rec: { events: { type: string; e: any }[] }) =>
  rec.events.filter((e) => e.type === "attempt.finished").map((e) => e.e.outcome);

Deno.test("a slow first frame times out, is retried once, and the retry can succeed", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.slowFirstFrame(2000), sc.text("on time"));
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.content, "on time");
    assertEquals(rec.types(), pairs(2));
    assertEquals(attemptOutcomes(rec), ["first_frame_timeout", "ok"]);
    assertEquals(await ollama.chats[0].closed, "client_closed");
  }, { timeouts: { firstFrameMs: 150 } });
});

Deno.test("two first-frame timeouts fail model_first_frame_timeout and open the circuit", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.slowFirstFrame(5000), sc.slowFirstFrame(5000));
    const first = req();
    assertEquals(await broker.chat(first.req), {
      kind: "failed",
      code: "model_first_frame_timeout",
      retryable: true,
    });
    assertEquals(first.rec.types(), pairs(2));
    // Open: the next call is refused before any slot or HTTP, with 0 attempts (2 + 2·0 events).
    const second = req();
    assertEquals(await broker.chat(second.req), {
      kind: "failed",
      code: "model_temporarily_unhealthy",
      retryable: true,
    });
    assertEquals(second.rec.types(), pairs(0));
    assertEquals(ollama.chats.length, 2);
    // After the open time a good first frame closes it again.
    await new Promise((r) => setTimeout(r, 450));
    ollama.enqueue(sc.text("healthy"));
    assertEquals((await broker.chat(req().req)).kind, "completed");
    ollama.enqueue(sc.slowFirstFrame(5000), sc.text("ok"));
    assertEquals((await broker.chat(req().req)).kind, "completed"); // one failure alone never opens
  }, { timeouts: { firstFrameMs: 100, circuitOpenMs: 400 } });
});

Deno.test("a stall after the first frame fails model_stream_idle_timeout without retry and hangs up", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.stall());
    const { req: r, rec } = req();
    const t0 = Date.now();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_stream_idle_timeout",
      retryable: true,
    });
    assert(Date.now() - t0 < 4000, "the idle timer fired, not a call deadline");
    assertEquals(rec.types(), pairs(1));
    assertEquals(attemptOutcomes(rec), ["idle_timeout"]);
    assertEquals(await ollama.chats[0].closed, "client_closed");
    // Idle stalls are not zero-frame failures: after two more in a row the circuit stays closed.
    ollama.enqueue(sc.stall(), sc.stall(), sc.text("fine"));
    for (let i = 0; i < 2; i++) {
      assertEquals((await broker.chat(req().req)).kind, "failed");
    }
    assertEquals((await broker.chat(req().req)).kind, "completed");
  }, { timeouts: { idleMs: 150 } });
});

Deno.test("a stream that outlives the call bound fails model_transport_timeout", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(40, "x"));
    const { req: r, rec } = req({ phase: "tools" }); // no repetition guard in the tools phase
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_transport_timeout",
      retryable: true,
    });
    assertEquals(attemptOutcomes(rec), ["call_timeout"]);
    assertEquals(await ollama.chats[0].closed, "client_closed");
  }, { timeouts: { callMs: 300, idleMs: 1000 } });
});

Deno.test("the Run deadline ends a stream with model_turn_deadline", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(40, "y"));
    const { req: r, rec } = req({ phase: "tools", deadline: Date.now() + 250 });
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_turn_deadline",
      retryable: true,
    });
    assertEquals(attemptOutcomes(rec), ["deadline"]);
    // A deadline already past fails before any attempt.
    const late = req({ deadline: Date.now() - 1 });
    assertEquals(await broker.chat(late.req), {
      kind: "failed",
      code: "model_turn_deadline",
      retryable: true,
    });
    assertEquals(late.rec.types(), pairs(0));
  }, { timeouts: { idleMs: 1000 } });
});

Deno.test("a third concurrent stream waits for a slot and gets model_busy after the wait bound", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.stall(), sc.stall());
    const a = req();
    const b = req();
    const pa = broker.chat(a.req);
    const pb = broker.chat(b.req);
    await ollama.waitForChat(1);
    const c = req();
    const t0 = Date.now();
    assertEquals(await broker.chat(c.req), { kind: "failed", code: "model_busy", retryable: true });
    assert(Date.now() - t0 >= 250);
    assertEquals(c.rec.types(), pairs(0));
    assertEquals(ollama.chats.length, 2);
    a.abort.abort();
    b.abort.abort();
    assertEquals((await pa).kind, "cancelled");
    assertEquals((await pb).kind, "cancelled");
  }, { timeouts: { queueWaitMs: 300, idleMs: 5000 } });
});

Deno.test("a waiting call takes the slot as soon as one frees up", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.stall(), sc.stall(), sc.text("my turn"));
    const a = req();
    const b = req();
    const pa = broker.chat(a.req);
    const pb = broker.chat(b.req);
    await ollama.waitForChat(1);
    const pc = broker.chat(req().req);
    setTimeout(() => a.abort.abort(), 50);
    const out = await pc;
    assert(out.kind === "completed");
    assertEquals(out.content, "my turn");
    b.abort.abort();
    await Promise.all([pa, pb]);
  }, { timeouts: { queueWaitMs: 2000, idleMs: 5000 } });
});

Deno.test("cancelling mid-stream closes the HTTP connection promptly and yields cancelled", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(30, "Counting: "));
    const { req: r, rec, abort } = req({ phase: "tools" });
    const p = broker.chat(r);
    const chat = await ollama.waitForChat(0);
    await new Promise((res) => setTimeout(res, 100));
    const t0 = Date.now();
    abort.abort();
    assertEquals(await p, { kind: "cancelled" });
    assertEquals(await chat.closed, "client_closed");
    // The endless stream would run until callMs (10 s) without a prompt hang-up.
    assert(Date.now() - t0 < 2000, `disconnect took ${Date.now() - t0} ms`);
    assertEquals(rec.types(), pairs(1));
    assertEquals(attemptOutcomes(rec), ["cancelled"]);
    assertEquals((rec.events.at(-1)!.e as any).outcome, "cancelled");
  }, { timeouts: { idleMs: 5000, callMs: 10_000 } });
});

Deno.test("cancelling before the first frame closes the connection and is not retried", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.slowFirstFrame(5000));
    const { req: r, abort } = req();
    const p = broker.chat(r);
    const chat = await ollama.waitForChat(0);
    abort.abort();
    assertEquals(await p, { kind: "cancelled" });
    assertEquals(await chat.closed, "client_closed");
    assertEquals(ollama.chats.length, 1);
  }, { timeouts: { firstFrameMs: 10_000 } });
});

Deno.test("an already-aborted signal returns cancelled and emits nothing", async () => {
  await withBroker(async ({ broker, req, ollama }) => {
    const { req: r, rec, abort } = req();
    abort.abort();
    assertEquals(await broker.chat(r), { kind: "cancelled" });
    assertEquals(rec.events, []);
    assertEquals(ollama.chats.length, 0);
  });
});

Deno.test("when Ollama is down, Runs fail closed with model_unavailable and status says unreachable", async () => {
  const closedPort = freePort();
  await withBroker(async ({ broker, req }) => {
    assertEquals(broker.status(), { available: false, reason: "unreachable" });
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_unavailable",
      retryable: true,
    });
    assertEquals(rec.events, []);
    assertEquals(broker.publicProfiles()[0].available, false);
  }, { ollamaUrl: `http://127.0.0.1:${closedPort}` });
});

Deno.test("a connection refused mid-life is retried once then fails model_unavailable and marks the model unreachable", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    await ollama.close(); // qualified, then the server goes away
    const { req: r, rec } = req();
    assertEquals(await broker.chat(r), {
      kind: "failed",
      code: "model_unavailable",
      retryable: true,
    });
    assertEquals(rec.types(), pairs(2));
    assertEquals(attemptOutcomes(rec), ["connect_error", "connect_error"]);
    assertEquals(broker.status(), { available: false, reason: "unreachable" });
  });
});

Deno.test("a far-future deadline does not fire early (timer delays are clamped)", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.text("fine", { frameDelayMs: 20 }));
    const out = await broker.chat(req({ deadline: Number.MAX_SAFE_INTEGER }).req);
    assertEquals(out.kind, "completed");
  });
});

Deno.test("a call that waited for a slot while the circuit opened is refused without HTTP", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(...Array.from({ length: 4 }, () => sc.slowFirstFrame(5000)));
    const a = broker.chat(req().req);
    const b = broker.chat(req().req);
    await ollama.waitForChat(1);
    const c = req();
    const pc = broker.chat(c.req); // queued behind A and B, whose first frames never come
    assertEquals(await pc, {
      kind: "failed",
      code: "model_temporarily_unhealthy",
      retryable: true,
    });
    assertEquals(c.rec.types(), pairs(0));
    await Promise.all([a, b]);
    assert(ollama.chats.length <= 3, `${ollama.chats.length} chats: C reached Ollama`);
  }, { timeouts: { firstFrameMs: 150, queueWaitMs: 5000, circuitOpenMs: 10_000 } });
});

Deno.test("a cancel from inside a delta callback stops the call even when the rest of the stream is already buffered", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    // One write: both content frames and the final frame reach the client in one read.
    const lines = [
      contentFrame("qwen3.5:2b", "Hello"),
      contentFrame("qwen3.5:2b", " world"),
      doneFrame("qwen3.5:2b"),
    ].map((f) => JSON.stringify(f) + "\n").join("");
    ollama.enqueue({ kind: "stream", steps: [{ raw: lines }] });
    const holder: { abort?: AbortController } = {};
    const seen: string[] = [];
    const { req: r, rec, abort } = req({
      onDelta: (d) => {
        seen.push(d.text);
        holder.abort?.abort();
      },
    });
    holder.abort = abort;
    assertEquals(await broker.chat(r), { kind: "cancelled" });
    assertEquals(seen, ["Hello"]);
    assertEquals(attemptOutcomes(rec), ["cancelled"]);
  });
});
