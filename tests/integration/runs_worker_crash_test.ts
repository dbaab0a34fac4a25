/**
 * [SB-5] "Worker errors never override the Broker's error code", against the
 * real server, a real confined Worker and the scripted model: the model fails
 * with an in-band error while the Worker is stopped, the Control Plane answers
 * it, and only then is the Worker SIGKILLed. The Turn must end with the
 * Broker's `model_provider_error`; a breach is `worker_crashed`.
 * And a Worker the supervisor kills for its Run-tree bound [SB-6] while its
 * model call hangs ends the Turn with `worker_resource_limit`, the bound it
 * broke, not `worker_crashed` — at once, the model stream cut [OP-5].
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { RUN_TREE_ENTRIES_MAX } from "../../runtime/limits.ts";
import {
  childrenOf,
  exited,
  STATE_WAIT_MS,
  stdinPending,
  stopped,
  waitFor,
} from "../helpers/worker_procs.ts";
import { contentFrame } from "../../tools/fake_ollama/frames.ts";
import type { ScriptSource, Step } from "../../tools/fake_ollama/server.ts";

Deno.test("a Worker killed after the Broker's error never overrides the Broker's error code", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    let release = false;
    // The error is held back (as a state, not a time) until the Worker is stopped.
    const gatedError: ScriptSource = (c) => ({
      kind: "stream",
      steps: (function* (): Generator<Step> {
        yield { frame: contentFrame(c.model, "Partial") };
        while (!release) yield { delayMs: 10 };
        yield {
          frame: { error: "an error was encountered while running the model: unexpected EOF" },
        };
      })(),
    });
    h.ollama.enqueue(gatedError);
    const r = await submit(h, conv, "fail, then the worker dies");
    assertEquals(r.status, 202);
    await readSse(h, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
    const workers = childrenOf(h.server.child.pid);
    assertEquals(workers.length, 1, `children: ${workers}`);
    const w = workers[0];
    Deno.kill(w, "SIGSTOP");
    await waitFor("the Worker is stopped", () => stopped(w));
    assertEquals(stdinPending(w), 0);
    release = true;
    assertEquals(await h.ollama.chats[0].closed, "completed");
    // The Control Plane took the Broker's error: its reply waits in the stopped Worker's stdin.
    await waitFor("the model.result reply is sent", () => stdinPending(w) > 0);
    Deno.kill(w, "SIGKILL");
    const frames = await readSse(h, r.body.run_id);
    const last = frames.at(-1)!;
    assertEquals([last.event, last.data.payload.code, last.data.payload.stage], [
      "run.failed",
      "model_provider_error",
      "model",
    ]);
    const turn = await waitTurn(h, conv, r.body.run_id);
    assertEquals([turn.state, turn.terminal.code], ["failed", "model_provider_error"]);
  } finally {
    await h.close();
  }
});

Deno.test("a Worker killed for its Run-tree bound ends the Turn with worker_resource_limit and cuts its model stream", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    // The model never answers: only the Worker's end [OP-5] can end this Turn before its deadline.
    h.ollama.enqueue({ kind: "stream", steps: [{ hang: true }] });
    const r = await submit(h, conv, "grow the run tree");
    assertEquals(r.status, 202);
    await readSse(h, r.body.run_id, { until: (f) => f.event === "model.request.started" });
    const chat = await h.ollama.waitForChat(0);
    const workers = childrenOf(h.server.child.pid);
    assertEquals(workers.length, 1, `children: ${workers}`);
    // Files in the Run root count against it exactly as the Worker's own would.
    const root = `${h.server.home}/.runtime/agents/${h.agent}/runs/${r.body.run_id}`;
    for (let i = 0; i <= RUN_TREE_ENTRIES_MAX; i++) {
      Deno.writeFileSync(`${root}/f${i}`, new Uint8Array(0));
    }
    const frames = await readSse(h, r.body.run_id, { timeoutMs: STATE_WAIT_MS + 20_000 });
    const last = frames.at(-1)!;
    assertEquals([last.event, last.data.payload.code, last.data.payload.stage], [
      "run.failed",
      "worker_resource_limit",
      "worker",
    ]);
    assert(exited(workers[0]), "the tree watch killed the Worker");
    assertEquals(await chat.closed, "client_closed");
  } finally {
    await h.close();
  }
});
