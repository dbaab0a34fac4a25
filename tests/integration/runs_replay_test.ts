/**
 * Replay pages and the durable SSE fallback over HTTP on a journal larger than
 * one page [EV-3, EV-4]: pages hold at most 128 events and chain by cursor;
 * the fallback resumes from a `d<seq>` Last-Event-ID; and once one row in the
 * middle is tampered with, neither replay (any cursor) nor the SSE fallback
 * returns a single event. The journal is written into the real Agent's
 * state.sqlite with the product's own journal writer, because a real Run
 * never reaches 128 durable events (≤ 4 model calls, ≤ 2 tool calls).
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { openAgentState, tamperEvent } from "../helpers/agent_state.ts";
import { newConversation, readSse, startRunHarness } from "../helpers/runs.ts";
import { runStartedPayload } from "../helpers/run_db.ts";
import { appendDurable, genesisDigest, RunJournal } from "../../runtime/events/journal.ts";
import { REPLAY_PAGE_MAX } from "../../runtime/limits.ts";
import { canonicalJson } from "../../runtime/protocol/digest.ts";
import {
  beginTurn,
  finishTurnInTransaction,
  getConversation,
} from "../../runtime/store/agent_state_store.ts";
import { insertRun, setRunTerminal } from "../../runtime/store/run_store.ts";
import type { DatabaseSync } from "../../runtime/store/sqlite.ts";

const DENIED = 300;
const D = `sha256:${"b".repeat(64)}`;

/** A finished Run of `DENIED + 2` valid durable events: run.started, denials, run.failed. */
function seedLongRun(db: DatabaseSync, agentId: string, conversationId: string): string {
  const runId = crypto.randomUUID();
  const turnId = crypto.randomUUID();
  const now = Date.now();
  const conv = getConversation(db, conversationId)!;
  const begun = beginTurn(db, {
    conversationId,
    expectedRevision: conv.revision,
    turnId,
    runId,
    userMessage: "seeded",
    now,
  });
  assertEquals(begun.result, "ok");
  const started = runStartedPayload(turnId, crypto.randomUUID(), D, "qwen3.5:2b");
  insertRun(db, {
    id: runId,
    conversation_id: conversationId,
    turn_id: turnId,
    model_id: "qwen3.5:2b",
    started_summary: canonicalJson(started),
    last_digest: genesisDigest(runId),
    created_at: now,
  });
  const j = new RunJournal({ run_id: runId, agent_id: agentId, conversation_id: conversationId });
  const staged = [j.stage("run.started", started)];
  for (let i = 0; i < DENIED; i++) {
    staged.push(j.stage("permission.denied", {
      call_id: "call-1",
      tool_id: "file/write",
      reason: "policy_deny",
    }, staged.at(-1)));
  }
  staged.push(j.stage("run.failed", {
    code: "tool_denied",
    stage: "tool",
    retryable: false,
    duration_ms: 1,
  }, staged.at(-1)));
  appendDurable(db, j, staged, () => {
    assert(setRunTerminal(db, runId, "failed", "tool_denied", now));
    const code = "tool_denied";
    const done = { state: "failed" as const, code, stage: "tool", retryable: false };
    assert(finishTurnInTransaction(db, turnId, done, now));
  });
  return runId;
}

Deno.test("replay pages and the durable fallback serve a long journal whole, or nothing once tampered", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    const db = openAgentState(h.server.home, h.agent);
    let runId = "";
    try {
      runId = seedLongRun(db, h.agent, conv);
    } finally {
      db.close();
    }
    const total = DENIED + 2;
    const replay = `/api/agents/${h.agent}/runs/${runId}/replay`;

    await t.step(
      `replay pages hold at most ${REPLAY_PAGE_MAX} events and chain by cursor`,
      async () => {
        const seqs: number[] = [];
        let cursor: number | null = 0;
        let pages = 0;
        while (cursor !== null && pages < 10) {
          const p = await h.api("GET", `${replay}?cursor=${cursor}`);
          assertEquals(p.status, 200);
          assert(p.body.events.length <= REPLAY_PAGE_MAX, `page of ${p.body.events.length}`);
          seqs.push(...p.body.events.map((e: { seq: number }) => e.seq));
          cursor = p.body.next_cursor;
          pages++;
        }
        assertEquals(pages, Math.ceil(total / REPLAY_PAGE_MAX));
        assertEquals(seqs, Array.from({ length: total }, (_, i) => i + 1));
        const first = await h.api("GET", replay);
        assertEquals([first.body.events.length, first.body.next_cursor], [
          REPLAY_PAGE_MAX,
          REPLAY_PAGE_MAX,
        ]);
        const past = await h.api("GET", `${replay}?cursor=1000000`);
        assertEquals([past.status, past.body.events, past.body.next_cursor], [200, [], null]);
      },
    );

    await t.step("the durable fallback serves every event and resumes from d<seq>", async () => {
      const all = await readSse(h, runId);
      assertEquals(all[0].event, "stream.gap");
      assertEquals(all[0].data.payload.durable_events, total);
      assertEquals(all.at(-1)!.event, "stream.snapshot");
      assertEquals(all.at(-1)!.data.payload.terminal.payload.code, "tool_denied");
      assertEquals(
        all.slice(1, -1).map((f) => f.id),
        Array.from({ length: total }, (_, i) => `d${i + 1}`),
      );
      const resumed = await readSse(h, runId, { lastEventId: `d${total - 2}` });
      assertEquals(resumed.map((f) => f.id), [null, `d${total - 1}`, `d${total}`, null]);
      assertEquals(resumed[0].data.payload.after_seq, total - 2);
    });

    await t.step("a tampered middle row leaves no page and no stream at any cursor", async () => {
      const w = openAgentState(h.server.home, h.agent);
      try {
        assert(
          tamperEvent(w, runId, 200, (b) => b.replace("policy_deny", "non_interactive_ask")),
        );
      } finally {
        w.close();
      }
      for (const cursor of [0, REPLAY_PAGE_MAX, 2 * REPLAY_PAGE_MAX]) {
        const bad = await h.api("GET", `${replay}?cursor=${cursor}`);
        assertEquals([bad.status, codeOf(bad), bad.body.events], [
          500,
          "journal_corrupt",
          undefined,
        ]);
      }
      const res = await fetch(`${h.server.url}/api/agents/${h.agent}/runs/${runId}/events`, {
        headers: { cookie: h.session.cookie },
      });
      const body = await res.text();
      assertEquals(res.status, 500);
      assert(!body.includes("permission.denied") && !body.includes("run.started"), body);
    });
  } finally {
    await h.close();
  }
});
