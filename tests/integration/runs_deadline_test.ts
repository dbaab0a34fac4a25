/**
 * The Run deadline [SB-8, MB-5] against the real server and a real confined
 * Worker: a Run waiting on an approval has no model stream whose timers could
 * end it, so only the Control Plane's Run deadline can. The deadline is
 * shortened through `AGENT_BUILDER_TEST_RUN_DEADLINE_MS` (tests/helpers/
 * test_server_entry.ts; it can only shorten the 15 min bound). A breach is a Run that
 * outlives its deadline, ends with another code, leaves its approval pending
 * or writes the file.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { RUN_DEADLINE_ENV } from "../helpers/test_server_entry.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

/** Room for a Worker spawn on a loaded 2-core machine before the approval is asked. */
const DEADLINE_MS = 5000;

Deno.test("the Run deadline ends a Run that waits on an approval with model_turn_deadline", async () => {
  const h = await startRunHarness({ env: { [RUN_DEADLINE_ENV]: String(DEADLINE_MS) } });
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{
        name: "file__write",
        arguments: { path: "late.txt", content: "never written\n" },
      }]),
      scenarios.text("never reached"),
    );
    const t0 = Date.now();
    const r = await submit(h, conv, "write late.txt");
    assertEquals(r.status, 202);
    // Nobody decides: the Run must end by itself at its deadline.
    const frames = await readSse(h, r.body.run_id, { timeoutMs: 30_000 });
    const elapsed = Date.now() - t0;
    const kinds = frames.map((f) => f.event);
    assert(kinds.includes("permission.requested"), kinds.join(","));
    const decided = frames.find((f) => f.event === "permission.decided")!;
    assertEquals(decided.data.payload.decision, "expired");
    const last = frames.at(-1)!;
    assertEquals([last.event, last.data.payload.code, last.data.payload.stage], [
      "run.failed",
      "model_turn_deadline",
      "model",
    ]);
    assert(elapsed >= DEADLINE_MS, `ended after ${elapsed} ms, before its deadline`);
    // Generous for a loaded 2-core machine, still far below the 15 min production bound.
    assert(elapsed < DEADLINE_MS + 15_000, `ended after ${elapsed} ms`);
    assertEquals(h.ollama.chats.length, 1, "no model call after the deadline");
    const turn = await waitTurn(h, conv, r.body.run_id);
    assertEquals([turn.state, turn.terminal.code], ["failed", "model_turn_deadline"]);
    const pending = await h.api("GET", `/api/agents/${h.agent}/permissions`);
    assertEquals(pending.body, { pending: [] });
    let written = true;
    try {
      Deno.statSync(`${h.server.home}/data/agents/${h.agent}/workspace/late.txt`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      written = false;
    }
    assertEquals(written, false, "the unapproved write never happened");
  } finally {
    await h.close();
  }
});
