/**
 * `/compact` round trip over HTTP with the scripted Ollama [CX-9]: the model
 * summarizes every completed Turn but the latest; the summary is pending
 * (unused) until kept; kept, the next Run's context is summary + later Turns
 * and the projection says so; the transcript never changes; undo restores the
 * full history; drop changes nothing. A failed call or an answer over 8 KiB
 * stores nothing and says why; a stale decision is 409.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { openAgentState } from "../helpers/agent_state.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { COMPACT_INSTRUCTIONS } from "../../runtime/context/compaction.ts";
import { COMPACT_SUMMARY_MAX_BYTES } from "../../runtime/limits.ts";

const SUMMARY = "The operator asked about apples and pears; the assistant listed both.";

/** Non-repetitive ASCII text of exactly `n` bytes (the broker cuts repetitive answers). */
function prose(n: number): string {
  let x = 12345;
  let s = "";
  while (s.length < n) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += x.toString(36) + " ";
  }
  return s.slice(0, n - 1) + ".";
}

Deno.test("/compact: the model's summary is kept, used as history, undone and dropped; the transcript never changes", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    const base = `/api/agents/${h.agent}/sessions/${conv}`;
    const compact = () => h.api("POST", `${base}/compactions`, {});
    const decide = (id: string, verb: string) =>
      h.api("POST", `${base}/compactions/${id}/${verb}`, {});
    const preview = async () => (await h.api("GET", `${base}/context-preview`)).body;
    const rows = () => {
      const db = openAgentState(h.server.home, h.agent);
      try {
        return (db.prepare("SELECT count(*) AS n FROM compactions").get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    const turn = async (message: string, answer: string) => {
      h.ollama.enqueue(scenarios.text(answer));
      const r = await submit(h, conv, message);
      assertEquals(r.status, 202);
      await readSse(h, r.body.run_id);
    };
    const transcript = async () =>
      (await h.api("GET", base)).body.turns.map((x: Record<string, unknown>) => [
        x.user_message,
        x.assistant_message,
      ]);

    await t.step(
      "with no older Turn there is nothing to summarize (409), nothing stored",
      async () => {
        const r = await compact();
        assertEquals([r.status, codeOf(r)], [409, "compact_nothing_to_summarize"]);
        await turn("APPLES-1 tell me about apples", "Apples are red.");
        const one = await compact();
        assertEquals(codeOf(one), "compact_nothing_to_summarize", "the latest Turn always stays");
        assertEquals(rows(), 0);
      },
    );

    let before: unknown[] = [];
    let id = "";
    await t.step("the summary covers every Turn but the latest and stays pending", async () => {
      await turn("PEARS-2 and pears?", "Pears are green.");
      await turn("PLUMS-3 and plums?", "Plums are purple.");
      before = await transcript();
      const p0 = await preview();
      const chats = h.ollama.chats.length;
      h.ollama.enqueue(scenarios.text(SUMMARY));
      const r = await compact();
      assertEquals(r.status, 201, JSON.stringify(r.body));
      const c = r.body.compaction;
      assertEquals([c.state, c.summary, c.turns, c.bytes], ["pending", SUMMARY, 2, SUMMARY.length]);
      id = c.id;
      const req = h.ollama.chats[chats];
      const msgs = req.body.messages as { role: string; content: string }[];
      assertEquals(msgs[0], { role: "system", content: COMPACT_INSTRUCTIONS });
      assert(msgs[1].content.includes("APPLES-1") && msgs[1].content.includes("PEARS-2"));
      assert(!msgs[1].content.includes("PLUMS-3"), "the latest Turn is not summarized");
      const p1 = await preview();
      assertEquals(p1.breakdown.history_turns, p0.breakdown.history_turns, "pending is unused");
      assertEquals(await transcript(), before);
    });

    await t.step(
      "kept: history = summary + later Turns; the next Run sees exactly that",
      async () => {
        const k = await decide(id, "keep");
        assertEquals([k.status, k.body.compaction.state], [200, "active"]);
        const again = await decide(id, "keep");
        assertEquals([again.status, codeOf(again)], [409, "compaction_decided"]);
        const p = await preview();
        assertEquals(p.breakdown.history_turns.summarized, 2);
        assertEquals(p.breakdown.history_turns.kept, 1);
        const used = p.breakdown.parts.filter((x: { name: string }) =>
          !["output_reserve", "free"].includes(x.name)
        ).reduce((a: number, x: { tokens: number }) => a + x.tokens, 0);
        assertEquals(used, p.meter.used_tokens, "the breakdown still adds up");
        const chats = h.ollama.chats.length;
        await turn("KIWI-4 and kiwis?", "Kiwis are brown.");
        const msgs = h.ollama.chats[chats].body.messages as { role: string; content: string }[];
        assert(msgs[0].content.includes("[agent-builder history summary]"));
        assert(msgs[0].content.includes(SUMMARY));
        const text = JSON.stringify(msgs);
        assert(!text.includes("APPLES-1") && !text.includes("PEARS-2"), "summarized Turns left");
        assert(text.includes("PLUMS-3"), "the Turn after the summary stays verbatim");
        assertEquals((await transcript()).slice(0, 3), before, "the transcript never changes");
      },
    );

    await t.step("undo restores the full history", async () => {
      const u = await decide(id, "undo");
      assertEquals([u.status, u.body.compaction.state], [200, "undone"]);
      const p = await preview();
      assertEquals(p.breakdown.history_turns.summarized, 0);
      assertEquals(p.breakdown.history_turns.kept, 4);
      const chats = h.ollama.chats.length;
      await turn("FIG-5 and figs?", "Figs are sweet.");
      const text = JSON.stringify(h.ollama.chats[chats].body.messages);
      assert(text.includes("APPLES-1") && !text.includes("[agent-builder history summary]"));
      const twice = await decide(id, "undo");
      assertEquals(codeOf(twice), "compaction_decided");
    });

    await t.step("drop: nothing changes", async () => {
      h.ollama.enqueue(scenarios.text(SUMMARY));
      const r = await compact();
      const d = await decide(r.body.compaction.id, "drop");
      assertEquals(d.body.compaction.state, "dropped");
      assertEquals((await preview()).breakdown.history_turns.summarized, 0);
      assertEquals(codeOf(await decide(r.body.compaction.id, "keep")), "compaction_decided");
      const foreign = await decide(crypto.randomUUID(), "keep");
      assertEquals([foreign.status, codeOf(foreign)], [404, "compaction_not_found"]);
    });

    await t.step(
      "a summary of exactly 8 KiB is stored; one byte more is refused, nothing stored",
      async () => {
        h.ollama.enqueue(scenarios.text(prose(COMPACT_SUMMARY_MAX_BYTES)));
        const at = await compact();
        assertEquals([at.status, at.body.compaction.bytes], [201, COMPACT_SUMMARY_MAX_BYTES]);
        await decide(at.body.compaction.id, "drop");
        const n = rows();
        h.ollama.enqueue(scenarios.text(prose(COMPACT_SUMMARY_MAX_BYTES + 1)));
        const over = await compact();
        assertEquals([over.status, codeOf(over)], [502, "compact_summary_too_large"]);
        assertEquals(rows(), n);
      },
    );

    await t.step("a failed summary call stores nothing and says so", async () => {
      const n = rows();
      h.ollama.enqueue(scenarios.serverError(500));
      h.ollama.enqueue(scenarios.serverError(500));
      const r = await compact();
      assertEquals([r.status, codeOf(r)], [502, "compact_summary_failed"]);
      assertEquals(rows(), n);
      assertEquals((await transcript()).length, 5);
    });
  } finally {
    await h.close();
  }
});
