/**
 * [SB-5] "Worker errors never override the Broker's error code", against the
 * real server, a real confined Worker and the scripted model: the Worker is
 * SIGKILLed while its model call is in flight, then the model fails with an
 * in-band error. The Turn must end with the Broker's `model_provider_error`;
 * a breach is `worker_crashed` (the dead Worker's broken pipe winning).
 * And a Worker the supervisor kills for its Run-tree bound [SB-6] ends the
 * Turn with `worker_resource_limit`, the bound it broke, not `worker_crashed`.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { RUN_TREE_ENTRIES_MAX } from "../../runtime/limits.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { contentFrame } from "../../tools/fake_ollama/frames.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import type { ScriptSource } from "../../tools/fake_ollama/server.ts";

/** Time the model takes, after its first frame, to report its error. */
const ERROR_AFTER_MS = 4000;
/** How long the tree-watch test gives the watch before the model answers. */
const TREE_WATCH_WAIT_MS = 15_000;

/** Direct children of `pid` (all threads), read from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    const c = readProcText(`/proc/${pid}/task/${t.name}/children`) ?? "";
    for (const x of c.trim().split(/\s+/)) if (x) out.push(Number(x));
  }
  return out;
}

/** True once `pid` has exited (zombie or reaped): its pipe ends are closed. */
function exited(pid: number): boolean {
  const st = readProcText(`/proc/${pid}/status`);
  return st === null || /^State:\s+[ZX]/m.test(st);
}

const lateInBandError: ScriptSource = (c) => ({
  kind: "stream",
  steps: [
    { frame: contentFrame(c.model, "Partial") },
    { delayMs: ERROR_AFTER_MS },
    { frame: { error: "an error was encountered while running the model: unexpected EOF" } },
  ],
});

Deno.test("a Worker killed during its model call never overrides the Broker's error code", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(lateInBandError);
    const r = await submit(h, conv, "fail while the worker dies");
    assertEquals(r.status, 202);
    await readSse(h, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
    const t0 = Date.now();
    const workers = childrenOf(h.server.child.pid);
    assertEquals(workers.length, 1, `children: ${workers}`);
    Deno.kill(workers[0], "SIGKILL");
    while (!exited(workers[0]) && Date.now() - t0 < ERROR_AFTER_MS) {
      await new Promise((res) => setTimeout(res, 10));
    }
    assert(exited(workers[0]), "the Worker died before the model's error arrived");
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

Deno.test("a Worker killed for its Run-tree bound ends the Turn with worker_resource_limit", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    // The answer comes only after the Worker is gone: the tree watch ticks once a
    // second, and a loaded host may need several ticks to walk the tree, so the
    // model waits far longer than that. (Until a dead Worker cuts its model call
    // [OP-5], the Run's terminal still waits for this answer.)
    h.ollama.enqueue(scenarios.text("too late", { firstFrameDelayMs: TREE_WATCH_WAIT_MS }));
    const r = await submit(h, conv, "grow the run tree");
    assertEquals(r.status, 202);
    await readSse(h, r.body.run_id, { until: (f) => f.event === "model.request.started" });
    const workers = childrenOf(h.server.child.pid);
    assertEquals(workers.length, 1, `children: ${workers}`);
    // Files in the Run root count against it exactly as the Worker's own would.
    const root = `${h.server.home}/.runtime/agents/${h.agent}/runs/${r.body.run_id}`;
    for (let i = 0; i <= RUN_TREE_ENTRIES_MAX; i++) {
      Deno.writeFileSync(`${root}/f${i}`, new Uint8Array(0));
    }
    const t0 = Date.now();
    while (!exited(workers[0]) && Date.now() - t0 < TREE_WATCH_WAIT_MS) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert(exited(workers[0]), "the tree watch killed the Worker before the model answered");
    const frames = await readSse(h, r.body.run_id, { timeoutMs: TREE_WATCH_WAIT_MS + 20_000 });
    const last = frames.at(-1)!;
    assertEquals([last.event, last.data.payload.code, last.data.payload.stage], [
      "run.failed",
      "worker_resource_limit",
      "worker",
    ]);
  } finally {
    await h.close();
  }
});
