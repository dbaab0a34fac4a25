/**
 * [EV-5] against the real server: the journal write of a Run's tool result
 * fails mid-Run (armed through `AGENT_BUILDER_TEST_JOURNAL_FAULT`, which makes
 * that write's SQLite transaction really roll back — tests/helpers/
 * test_server_entry.ts). The attached live stream must end with `journal_unavailable`,
 * the Turn must be failed and the Run's partial events pruned to a tombstone
 * in one transaction, and the Conversation must accept the next Turn.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { openAgentState } from "../helpers/agent_state.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import { JOURNAL_FAULT_ENV } from "../helpers/test_server_entry.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

Deno.test("a journal that cannot be appended mid-Run ends the stream and tombstones the Run", async (t) => {
  const h = await startRunHarness({ env: { [JOURNAL_FAULT_ENV]: "tool.call.completed" } });
  try {
    const conv = await newConversation(h);
    Deno.writeTextFileSync(`${workspace(h)}/notes.txt`, "alpha\n", { mode: 0o600 });
    let runId = "";

    await t.step(
      "the attached live stream ends with journal_unavailable after the partial events",
      async () => {
        h.ollama.enqueue(
          scenarios.toolCall([{ name: "file__read_text", arguments: { path: "notes.txt" } }]),
          scenarios.text("never reached"),
        );
        let attached!: () => void;
        const opened = new Promise<void>((r) => (attached = r));
        const r = await submit(h, conv, "read notes.txt");
        assertEquals(r.status, 202);
        runId = r.body.run_id;
        const reading = readSse(h, runId, { opened: attached });
        await opened;
        const frames = await reading;
        const kinds = frames.map((f) => f.event);
        assertEquals(kinds[0], "run.started");
        assert(kinds.includes("tool.call.requested"), kinds.join(","));
        // The failed write never reached the browser, and no terminal was faked.
        assert(!kinds.includes("tool.call.completed"), kinds.join(","));
        assert(!kinds.some((k) => k.startsWith("run.") && k !== "run.started"), kinds.join(","));
        assertEquals(frames.at(-1)!.event, "stream.error");
        assertEquals(frames.at(-1)!.data, {
          kind: "stream.error",
          payload: { code: "journal_unavailable" },
        });
        // Only the one model call before the tool ran.
        assertEquals(h.ollama.chats.length, 1);
      },
    );

    await t.step("the Turn is failed and the journal is a tombstone, atomically", async () => {
      const turn = await waitTurn(h, conv, runId);
      assertEquals(turn.state, "failed");
      assertEquals(turn.terminal.code, "journal_unavailable");
      assertEquals(turn.terminal.stage, "journal");
      const db = openAgentState(h.server.home, h.agent);
      try {
        const run = db.prepare(
          "SELECT state, terminal_code, journal, event_count, durable_bytes, snapshot FROM runs WHERE id = ?",
        ).get(runId) as Record<string, unknown>;
        assertEquals(
          [run.state, run.terminal_code, run.journal, run.event_count, run.durable_bytes],
          ["failed", "journal_unavailable", "tombstone", 0, 0],
        );
        // Canonical JSON: keys sorted.
        assertEquals(JSON.parse(run.snapshot as string), {
          code: "journal_unavailable",
          run_id: runId,
          state: "failed",
          v: 1,
        });
        const events = db.prepare("SELECT count(*) AS n FROM run_events WHERE run_id = ?")
          .get(runId) as { n: number };
        assertEquals(events.n, 0);
        const usage = db.prepare("SELECT state FROM usage_ledger WHERE run_id = ? ORDER BY call")
          .all(runId) as { state: string }[];
        assert(usage.length >= 1 && usage.every((u) => u.state !== "started"));
        const ops = db.prepare("SELECT state FROM operations WHERE run_id = ?")
          .all(runId) as { state: string }[];
        assertEquals(ops.map((o) => o.state), ["outcome_unknown"]);
      } finally {
        db.close();
      }
      const replay = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/replay`);
      assertEquals([replay.status, replay.body.journal, replay.body.events], [
        200,
        "tombstone",
        [],
      ]);
    });

    await t.step("the Conversation accepts the next Turn", async () => {
      h.ollama.enqueue(scenarios.text("fine again"));
      const r = await submit(h, conv, "hello");
      assertEquals(r.status, 202);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      // The failed Turn never reaches the model [CV-5].
      const sent = JSON.stringify(h.ollama.chats.at(-1)!.body.messages);
      assert(!sent.includes("read notes.txt"), sent);
    });
  } finally {
    await h.close();
  }
});
