/**
 * The repetition guard end to end [MB-7]: an endless repeating plain answer
 * is cut, the fixed marker appended once, the HTTP response closed at once
 * (the scripted server sees the disconnect), usage marked incomplete; an
 * explicit cancel observed first wins; the tools phase is never guarded.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { REPETITION_MARKER } from "../../runtime/model/repetition_guard.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { pairs, withBroker } from "../helpers/model.ts";

const count = (hay: string, needle: string) => hay.split(needle).length - 1;

Deno.test("an endlessly repeating plain answer completes as repetition_truncated and the connection is closed", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(0));
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.reason, "repetition_truncated");
    assertEquals(out.usage, { inputTokens: 0, outputTokens: 0, complete: false });
    assert(out.content.startsWith("Sure, here is the answer. "));
    assert(out.content.endsWith(REPETITION_MARKER));
    assertEquals(count(out.content, REPETITION_MARKER), 1);
    const body = out.content.slice(0, -REPETITION_MARKER.length);
    assert(
      count(body, sc.REPEATED_SENTENCE) < 12,
      `kept ${count(body, sc.REPEATED_SENTENCE)} copies`,
    );
    assertEquals(rec.deltas.map((d) => d.text).join(""), out.content);
    assertEquals(await ollama.chats[0].closed, "client_closed");
    assertEquals(rec.types(), pairs(1));
    const fin = rec.events.at(-1)!.e as any;
    assertEquals([fin.outcome, fin.errorCode], ["repetition_truncated", null]);
    assertEquals((rec.events[2].e as any).outcome, "repetition_closed");
  }, { timeouts: { firstFrameMs: 10_000, idleMs: 10_000 } }); // no timer under load
});

Deno.test("the repetition cut never retracts text already streamed to the caller", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(2)); // slow enough that deltas flush before the guard fires
    const { req: r, rec } = req();
    const out = await broker.chat(r);
    assert(out.kind === "completed");
    assertEquals(out.reason, "repetition_truncated");
    const streamed = rec.deltas.slice(0, -1).map((d) => d.text).join("");
    assert(out.content.startsWith(streamed));
    assertEquals(rec.deltas.map((d) => d.text).join(""), out.content);
  }, { timeouts: { idleMs: 2000 } });
});

Deno.test("an explicit cancel observed before the guard fires wins: outcome cancelled", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(5));
    const holder: { abort?: AbortController } = {};
    const { req: r, abort } = req({
      onDelta: () => holder.abort?.abort(), // cancel on the very first streamed delta
    });
    holder.abort = abort;
    assertEquals(await broker.chat(r), { kind: "cancelled" });
    assertEquals(await ollama.chats[0].closed, "client_closed");
  }, { timeouts: { idleMs: 2000 } });
});

Deno.test("the tools phase is not guarded: repetition there runs into the ceiling and the stream bounds instead", async () => {
  await withBroker(async ({ ollama, broker, req }) => {
    ollama.enqueue(sc.repetition(0));
    const { req: r, rec } = req({ phase: "tools" });
    const out = await broker.chat(r);
    assert(out.kind === "completed", JSON.stringify(out));
    assertEquals(out.reason, "max_output");
    assertEquals(count(out.content, REPETITION_MARKER), 0);
    assertEquals(out.usage.complete, false);
    assertEquals((rec.events[2].e as any).outcome, "stream_too_large");
    assertEquals(await ollama.chats[0].closed, "client_closed");
  }, { timeouts: { callMs: 20_000, firstFrameMs: 10_000, idleMs: 10_000 } }); // a loaded CI never stalls it
});
