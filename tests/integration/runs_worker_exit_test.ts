/**
 * [OP-5] A Worker that dies ends its model call at once: against the real
 * server, real confined Workers and the scripted model, two Runs hold both
 * Broker slots with models that never answer; one Run's Worker is SIGKILLed.
 * That Run must end with `worker_crashed` (no model answer can end it before
 * its 240 s deadline), the scripted server must see its connection closed,
 * and a third Run must get the freed slot while the other Run still streams.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { MODEL_STREAMS_MAX } from "../../runtime/limits.ts";
import { exited, waitFor, workerOfRun } from "../helpers/worker_procs.ts";

Deno.test("a Worker killed during its model call ends the Run with worker_crashed, cuts the stream and frees the Broker slot", async () => {
  assertEquals(MODEL_STREAMS_MAX, 2);
  const h = await startRunHarness();
  try {
    const hang = { kind: "stream" as const, steps: [{ hang: true as const }] };
    h.ollama.enqueue(hang, hang, hang);
    const convs = [await newConversation(h), await newConversation(h), await newConversation(h)];
    const a = await submit(h, convs[0], "never answered, worker dies");
    const b = await submit(h, convs[1], "never answered, holds the other slot");
    assertEquals([a.status, b.status], [202, 202]);
    const chats = [await h.ollama.waitForChat(0), await h.ollama.waitForChat(1)];
    await readSse(h, a.body.run_id, { until: (f) => f.event === "model.request.started" });
    const chatA = chats.find((c) => c.body.messages.at(-1).content.includes("worker dies"))!;
    const chatB = chats.find((c) => c !== chatA)!;
    let w: number | null = null;
    await waitFor(
      "Run A's Worker",
      () => (w = workerOfRun(h.server.child.pid, a.body.run_id)) !== null,
    );
    Deno.kill(w!, "SIGKILL");
    const frames = await readSse(h, a.body.run_id);
    const last = frames.at(-1)!;
    assertEquals([last.event, last.data.payload.code, last.data.payload.stage], [
      "run.failed",
      "worker_crashed",
      "worker",
    ]);
    assert(exited(w!), "Run A's Worker is gone");
    assertEquals(await chatA.closed, "client_closed");
    const turn = await waitTurn(h, convs[0], a.body.run_id);
    assertEquals([turn.state, turn.terminal.code], ["failed", "worker_crashed"]);
    // Run B still holds its slot; the slot Run A's dead Worker held serves Run C.
    const c = await submit(h, convs[2], "gets the freed slot");
    assertEquals(c.status, 202);
    const chatC = await h.ollama.waitForChat(2);
    assert(chatC.body.messages.at(-1).content.includes("freed slot"));
    assertEquals(chatB.end, null, "Run B's stream is still open");
    for (const run of [b, c]) {
      const r = await h.api("POST", `/api/agents/${h.agent}/runs/${run.body.run_id}/cancel`);
      assert(r.status < 300, `cancel: ${r.status}`);
    }
    assertEquals(await chatB.closed, "client_closed");
    assertEquals(await chatC.closed, "client_closed");
  } finally {
    await h.close();
  }
});
