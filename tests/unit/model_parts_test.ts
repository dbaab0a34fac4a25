/**
 * Pure parts of the Model Broker: the operator catalog and URL rules [MB-1],
 * the answer buffer (12 KiB ceiling, marker, ≤ 128 deltas) [MB-6], the stream
 * semaphore [MB-4], the circuit breaker [MB-5] and the wire classifiers [MB-8].
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import {
  ANSWER_COMMIT_MAX_BYTES,
  CIRCUIT_ENTRIES_MAX,
  CONTENT_IPC_FRAMES_MAX,
} from "../../runtime/limits.ts";
import {
  AnswerBuffer,
  CONTENT_LIMIT_BYTES,
  MAX_OUTPUT_MARKER,
  utf8Prefix,
} from "../../runtime/model/answer.ts";
import {
  CatalogError,
  createCatalog,
  entryFor,
  parseOllamaUrl,
  PLAIN_POLICY,
  TOOLS_POLICY,
} from "../../runtime/model/catalog.ts";
import { CircuitBreaker } from "../../runtime/model/circuit.ts";
import { StreamSemaphore } from "../../runtime/model/semaphore.ts";
import { isOverflowBody, versionAtLeast } from "../../runtime/model/wire.ts";
import type { ContentDelta } from "../../runtime/model/types.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

Deno.test("parseOllamaUrl() accepts only a plain http origin", () => {
  assertEquals(parseOllamaUrl("http://127.0.0.1:11434"), { host: "127.0.0.1", port: 11434 });
  assertEquals(parseOllamaUrl("http://iollama:11434/"), { host: "iollama", port: 11434 });
  assertEquals(parseOllamaUrl("http://[::1]:8080"), { host: "::1", port: 8080 });
  assertEquals(parseOllamaUrl("http://ollama.local"), { host: "ollama.local", port: 80 });
  for (
    const bad of [
      "https://127.0.0.1:11434",
      "http://user:pw@127.0.0.1:11434",
      "http://127.0.0.1:11434/api",
      "http://127.0.0.1:11434/?x=1",
      "http://127.0.0.1:11434/#f",
      "ftp://127.0.0.1",
      "127.0.0.1:11434",
      "",
    ]
  ) assertThrows(() => parseOllamaUrl(bad), (e) => assert(e instanceof CatalogError, bad));
});

Deno.test("the default catalog has qwen3.5:2b with frozen per-phase policies", () => {
  const c = createCatalog();
  assertEquals(c.defaultId, "qwen3.5:2b");
  assertEquals(c.get("qwen3.5:2b")!.family, null); // until discovery reads the family
  const e = entryFor(c.config, "qwen3.5:2b", "qwen35");
  assertEquals(e.endpoint, { host: "127.0.0.1", port: 11434 });
  assertEquals(e.plain, {
    temperature: 1.0,
    top_p: 0.95,
    top_k: 20,
    presence_penalty: 1.5,
    seed: 0,
  });
  assertEquals(e.tools, { temperature: 0, seed: 0 });
  assert(Object.isFrozen(PLAIN_POLICY) && Object.isFrozen(TOOLS_POLICY) && Object.isFrozen(e));
  assertEquals(e.timeouts.firstFrameMs, 60_000);
  assertEquals(e.timeouts.idleMs, 20_000);
  assertEquals(e.timeouts.callMs, 120_000);
  assertEquals(e.timeouts.queueWaitMs, 30_000);
  assertEquals(e.timeouts.circuitOpenMs, 30_000);
  assertEquals(c.get("llama3"), undefined);
  assert(/^[0-9a-f]{64}$/.test(e.profileDigest));
  assertThrows(() => createCatalog({ models: ["bad name!"] }));
  assertThrows(() => createCatalog({ models: [] }));
});

Deno.test("the answer buffer commits at most 12 KiB including one max_output marker", () => {
  const deltas: ContentDelta[] = [];
  const a = new AnswerBuffer({ guard: false, onDelta: (d) => deltas.push(d), now: () => 0 });
  let r = "continue";
  for (let i = 0; i < 2000 && r === "continue"; i++) r = a.append("héllo wörld ");
  assertEquals(r, "max_output");
  assertEquals(a.append("more"), "max_output");
  const text = a.finish();
  assert(bytes(text) <= ANSWER_COMMIT_MAX_BYTES);
  assert(bytes(text) > ANSWER_COMMIT_MAX_BYTES - 200);
  assert(text.endsWith(MAX_OUTPUT_MARKER) && !text.includes("\uFFFD"));
  assertEquals(deltas.map((d) => d.text).join(""), text);
  assert(deltas.length <= CONTENT_IPC_FRAMES_MAX);
});

Deno.test("content exactly at the content limit is not truncated", () => {
  const a = new AnswerBuffer({ guard: false });
  assertEquals(a.append("x".repeat(CONTENT_LIMIT_BYTES)), "continue");
  assertEquals(a.finish().length, CONTENT_LIMIT_BYTES);
  const b = new AnswerBuffer({ guard: false });
  assertEquals(b.append("x".repeat(CONTENT_LIMIT_BYTES + 1)), "max_output");
});

Deno.test("deltas coalesce by size and time and never exceed 128", () => {
  let t = 0;
  const deltas: ContentDelta[] = [];
  const a = new AnswerBuffer({ guard: false, onDelta: (d) => deltas.push(d), now: () => t });
  a.append("a");
  assertEquals(deltas.map((d) => d.text), ["a"]); // the first delta goes out at once
  a.append("b");
  assertEquals(deltas.length, 1); // 1 byte, 0 ms: held back
  t = 60;
  a.append("c");
  assertEquals(deltas.map((d) => d.text), ["a", "bc"]); // ≥ 50 ms since the last flush
  a.append("x".repeat(100));
  assertEquals(deltas.length, 3); // ≥ 96 bytes
  for (let i = 0; i < 5000; i++) {
    t += 100;
    a.append("y");
  }
  a.finish();
  assertEquals(deltas.length, CONTENT_IPC_FRAMES_MAX - 1);
  assertEquals(deltas.map((d) => d.index), deltas.map((_, i) => i));
});

Deno.test("utf8Prefix() never splits a code point", () => {
  const e = new TextEncoder().encode("aé€😀");
  assertEquals(utf8Prefix(e, 2).length, 1);
  assertEquals(utf8Prefix(e, 3).length, 3);
  assertEquals(utf8Prefix(e, 5).length, 3);
  assertEquals(utf8Prefix(e, 6).length, 6);
  assertEquals(utf8Prefix(e, 9).length, 6);
  assertEquals(utf8Prefix(e, 10).length, 10);
});

Deno.test("the semaphore grants 2 permits, queues with a bound and reports busy after the wait", async () => {
  const s = new StreamSemaphore();
  const never = new AbortController().signal;
  const a = await s.acquire(10, never);
  const b = await s.acquire(10, never);
  assert(a.kind === "acquired" && b.kind === "acquired");
  assertEquals(s.inUse, 2);
  const t0 = Date.now();
  assertEquals((await s.acquire(40, never)).kind, "busy");
  assert(Date.now() - t0 >= 35);
  assertEquals(s.waiting, 0);
  const waiting = s.acquire(1000, never);
  a.release();
  a.release(); // idempotent
  const c = await waiting;
  assert(c.kind === "acquired");
  assertEquals(s.inUse, 2);
  b.release();
  c.release();
  assertEquals(s.inUse, 0);
});

Deno.test("the semaphore refuses beyond its waiter bound and lets an aborted waiter leave", async () => {
  const s = new StreamSemaphore({ permits: 1, maxWaiters: 1 });
  const never = new AbortController().signal;
  const a = await s.acquire(10, never);
  const ac = new AbortController();
  const w = s.acquire(5000, ac.signal);
  assertEquals((await s.acquire(5000, never)).kind, "busy"); // queue full: refused at once
  ac.abort();
  assertEquals((await w).kind, "aborted");
  assertEquals(s.waiting, 0);
  assert(a.kind === "acquired");
  a.release();
  assertEquals(s.inUse, 0);
});

Deno.test("the circuit opens after two zero-frame failures, resets on a first frame, and holds ≤ 16 entries", () => {
  let now = 1000;
  const c = new CircuitBreaker(30_000, () => now);
  const k = CircuitBreaker.key("m", "d");
  c.recordZeroFrameFailure(k);
  assertEquals(c.isOpen(k), false);
  c.recordZeroFrameFailure(k);
  assertEquals(c.isOpen(k), true);
  now += 29_999;
  assertEquals(c.isOpen(k), true);
  now += 1;
  assertEquals(c.isOpen(k), false);
  c.recordZeroFrameFailure(k); // a failed probe after expiry counts from one again
  assertEquals(c.isOpen(k), false);
  c.recordFirstFrame(k);
  c.recordZeroFrameFailure(k);
  assertEquals(c.isOpen(k), false);
  for (let i = 0; i < 40; i++) c.recordZeroFrameFailure(CircuitBreaker.key(`m${i}`, "d"));
  assertEquals(c.size, CIRCUIT_ENTRIES_MAX);
});

Deno.test("isOverflowBody() accepts only a strict single-field overflow JSON on 400/413", () => {
  const ok = JSON.stringify({ error: "the input length exceeds the context length" });
  assertEquals(isOverflowBody(400, ok), true);
  assertEquals(isOverflowBody(413, ok), true);
  assertEquals(isOverflowBody(500, ok), false);
  assertEquals(isOverflowBody(404, ok), false);
  assertEquals(isOverflowBody(400, "the input length exceeds the context length"), false);
  assertEquals(
    isOverflowBody(
      400,
      JSON.stringify({ error: "the input length exceeds the context length", x: 1 }),
    ),
    false,
  );
  assertEquals(isOverflowBody(400, JSON.stringify({ error: "invalid tool call" })), false);
  assertEquals(isOverflowBody(400, JSON.stringify({ error: 1 })), false);
});

Deno.test("versionAtLeast() compares numerically", () => {
  assertEquals(versionAtLeast("0.12.10", "0.12.6"), true);
  assertEquals(versionAtLeast("0.12.6", "0.12.6"), true);
  assertEquals(versionAtLeast("0.12.5", "0.12.6"), false);
  assertEquals(versionAtLeast("0.9.0", "0.12.6"), false);
  assertEquals(versionAtLeast("1.0.0-rc1", "0.12.6"), true);
  assertEquals(versionAtLeast("garbage", "0.12.6"), false);
});
