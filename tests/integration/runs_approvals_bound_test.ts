/**
 * [TL-2] The pending-approval bound (PERMISSIONS_PENDING_MAX = 32 per Agent)
 * through the real Run service: with 31 pending rows a Run's file/write still
 * becomes the 32nd pending approval; with 32 pending the next one is refused
 * with the fixed code `tool_denied`, no `permission.requested` is journaled
 * and no row is added. Live Runs alone cannot reach 32 (≤ 4 active Runs, one
 * approval each at a time), so the other pending rows are seeded into the
 * Agent's real state database next to the running server.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { addTurn, openAgentState } from "../helpers/agent_state.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { PERMISSIONS_PENDING_MAX } from "../../runtime/limits.ts";
import { genesisDigest } from "../../runtime/events/journal.ts";
import { insertPermission, insertRun, setRunTerminal } from "../../runtime/store/run_store.ts";
import type { DatabaseSync } from "../../runtime/store/sqlite.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

function pendingCount(db: DatabaseSync): number {
  return (db.prepare("SELECT count(*) AS n FROM permissions WHERE state = 'pending'").get() as {
    n: number;
  }).n;
}

Deno.test("pending approvals are bounded at 32 per Agent", async (t) => {
  const h = await startRunHarness();
  const db = openAgentState(h.server.home, h.agent);
  try {
    // A finished Run of another Conversation owns the seeded pending rows.
    const seedConv = await newConversation(h);
    const seedTurn = addTurn(db, seedConv, "completed", "seed");
    const seedRun = crypto.randomUUID();
    insertRun(db, {
      id: seedRun,
      conversation_id: seedConv,
      turn_id: seedTurn,
      model_id: "seed",
      started_summary: "{}",
      last_digest: genesisDigest(seedRun),
      created_at: 1,
    });
    setRunTerminal(db, seedRun, "failed", "internal_error", 2);
    const seed = (n: number) => {
      for (let i = 0; i < n; i++) {
        insertPermission(db, {
          id: crypto.randomUUID(),
          runId: seedRun,
          callId: `call-${i}`,
          toolId: "file/write",
          preview: "seed",
          now: i,
        });
      }
    };
    const conv = await newConversation(h);

    await t.step("with 31 pending, a Run's approval becomes the 32nd", async () => {
      seed(PERMISSIONS_PENDING_MAX - 1);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "file__write", arguments: { path: "a.txt", content: "a" } }]),
      );
      const r = await submit(h, conv, "create a.txt");
      const frames = await readSse(h, r.body.run_id, {
        until: (f) => f.event === "permission.requested",
      });
      assertEquals(frames.at(-1)!.event, "permission.requested");
      assertEquals(pendingCount(db), PERMISSIONS_PENDING_MAX);
      const list = await h.api("GET", `/api/agents/${h.agent}/permissions`);
      assertEquals(list.body.pending.length, PERMISSIONS_PENDING_MAX);
      await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      assertEquals((await waitTurn(h, conv, r.body.run_id)).state, "cancelled");
      // The cancelled Run's approval expired with it.
      assertEquals(pendingCount(db), PERMISSIONS_PENDING_MAX - 1);
    });

    await t.step("with 32 pending, the next approval is refused with tool_denied", async () => {
      seed(1);
      assertEquals(pendingCount(db), PERMISSIONS_PENDING_MAX);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "file__write", arguments: { path: "b.txt", content: "b" } }]),
        scenarios.text("Could not write."),
      );
      const r = await submit(h, conv, "create b.txt");
      const frames = await readSse(h, r.body.run_id);
      assert(!frames.some((f) => f.event === "permission.requested"));
      const done = frames.find((f) => f.event === "tool.call.completed")!;
      assertEquals(done.data.payload.code, "tool_denied");
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(pendingCount(db), PERMISSIONS_PENDING_MAX);
      let exists = true;
      try {
        Deno.statSync(`${h.server.home}/data/agents/${h.agent}/workspace/b.txt`);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
        exists = false;
      }
      assertEquals(exists, false);
    });
  } finally {
    db.close();
    await h.close();
  }
});
