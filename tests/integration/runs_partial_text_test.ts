/**
 * [#18, CV-5] A stopped or failed Turn keeps the text it had shown: the open
 * answer block's visible text, at most PARTIAL_TEXT_MAX_BYTES (cut on a code
 * point), written in the terminal transaction. It is shown, never history: the
 * next model request does not carry it. The operator's own Stop is not
 * retryable. (The 12 KiB bound: tests/unit/run_recorder_partial_test.ts.)
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

/** Submits, waits until the live stream showed `shown` characters of deltas, then Stops. */
async function stopAfter(
  h: Awaited<ReturnType<typeof startRunHarness>>,
  conv: string,
  shownChars: number,
): Promise<any> {
  const r = await submit(h, conv, "go");
  assertEquals(r.status, 202);
  let seen = 0;
  await readSse(h, r.body.run_id, {
    until: (f) =>
      f.event === "assistant.block.delta" && (seen += f.data.payload.text.length) >= shownChars,
  });
  assertEquals(
    (await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`)).status,
    202,
  );
  return await waitTurn(h, conv, r.body.run_id);
}

Deno.test("a stopped Turn keeps the text it showed, is not retryable, and never reaches the model", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.stall());
    const stopped = await stopAfter(h, conv, "Thinking about".length);
    assertEquals(stopped.state, "cancelled");
    // What the stream had shown (the Broker may still hold back the unfinished tail).
    assert(
      stopped.partial_text.startsWith("Thinking about") &&
        "Thinking about it".startsWith(stopped.partial_text),
      stopped.partial_text,
    );
    assertEquals(stopped.assistant_message, null);
    assertEquals(stopped.terminal.retryable, false, "the operator's own Stop is not retryable");

    h.ollama.enqueue(scenarios.text("Fine."));
    const next = await submit(h, conv, "and now?");
    assertEquals(next.status, 202);
    assertEquals((await waitTurn(h, conv, next.body.run_id)).state, "completed");
    const request = JSON.stringify(h.ollama.chats.at(-1)!.body.messages);
    assert(request.includes("and now?"), "the next request was recorded");
    assert(!request.includes("Thinking about"), "the partial text is not model history");
  } finally {
    await h.close();
  }
});

Deno.test("a failed Turn keeps the text streamed before the failure", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.inBandError());
    const r = await submit(h, conv, "go");
    const t = await waitTurn(h, conv, r.body.run_id);
    assertEquals([t.state, t.partial_text, t.assistant_message], ["failed", "Partial", null]);
  } finally {
    await h.close();
  }
});
