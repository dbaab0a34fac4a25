/**
 * §13 Run routes over HTTP: message bound, the 4-active-Runs bound,
 * `Last-Event-ID` resume, context inspection without bodies, the
 * NextTurnProjection, the capability audit, approvals and the usage ledger
 * [GW-4, CV-2, EV-3, CX-4, CX-5, TL-2, MB-9].
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { bulkTurns, openAgentState } from "../helpers/agent_state.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { ACTIVE_RUNS_TOTAL_MAX, USER_MESSAGE_MAX_BYTES } from "../../runtime/limits.ts";
import { HISTORY_TURNS_READ_MAX } from "../../runtime/limits.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";

Deno.test("Run routes over HTTP", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);

    await t.step("a message over 8192 UTF-8 bytes is 413; exactly 8192 is accepted", async () => {
      const over = await submit(h, conv, "é".repeat(4096) + "x");
      assertEquals([over.status, codeOf(over)], [413, "message_too_large"]);
      // One byte over in ASCII is the same bound and the same code, not a schema error.
      const ascii = await submit(h, conv, "x".repeat(USER_MESSAGE_MAX_BYTES + 1));
      assertEquals([ascii.status, codeOf(ascii)], [413, "message_too_large"]);
      const extra = await h.api("POST", `/api/agents/${h.agent}/sessions/${conv}/runs`, {
        message: "hi",
        temperature: 2,
      });
      assertEquals([extra.status, codeOf(extra)], [422, "schema_violation"]);
      h.ollama.enqueue(scenarios.text("ok"));
      const exact = await submit(h, conv, "é".repeat(USER_MESSAGE_MAX_BYTES / 2));
      assertEquals(exact.status, 202);
      await readSse(h, exact.body.run_id);
    });

    await t.step(
      "slash input is never admitted as a Turn nor sent to the model [SC-1]",
      async () => {
        const chats = h.ollama.chats.length;
        const before = (await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`)).body.turns;
        for (const message of ["/status", "/model qwen3.5:2b", "/no-such-command please"]) {
          const r = await submit(h, conv, message);
          assertEquals([r.status, codeOf(r)], [422, "command_invalid"], message);
        }
        const after = (await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`)).body.turns;
        assertEquals(after.length, before.length, "no Turn was created");
        assertEquals(h.ollama.chats.length, chats, "the model was never called");
      },
    );

    await t.step("Last-Event-ID resumes the live stream after the given event", async () => {
      h.ollama.enqueue(scenarios.text("one two three four five six", { frameDelayMs: 40 }));
      const r = await submit(h, conv, "count");
      const head = await readSse(h, r.body.run_id, { until: (f) => f.id === "4" });
      assertEquals(head.map((f) => f.id), ["1", "2", "3", "4"]);
      const rest = await readSse(h, r.body.run_id, { lastEventId: "4" });
      assertEquals(rest[0].id, "5");
      const ids = rest.map((f) => Number(f.id));
      assertEquals(ids, ids.map((_, i) => 5 + i));
      assertEquals(rest.at(-1)!.event, "run.completed");
    });

    await t.step("context inspection returns metadata and never a body", async () => {
      h.ollama.enqueue(scenarios.text("fine"));
      const r = await submit(h, conv, "UNIQUE-MARKER-7781");
      await readSse(h, r.body.run_id);
      const c = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/context`);
      assertEquals(c.status, 200);
      assertEquals(c.body.source, "memory");
      assert(!JSON.stringify(c.body).includes("UNIQUE-MARKER"));
      assertEquals(
        c.body.sections.map((s: { name: string }) => s.name).includes("user_message"),
        true,
      );
      const q = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/context?x=1`);
      assertEquals(codeOf(q), "schema_violation");
      const unknown = await h.api(
        "GET",
        `/api/agents/${h.agent}/runs/${crypto.randomUUID()}/context`,
      );
      assertEquals(codeOf(unknown), "run_not_found");
    });

    await t.step(
      "the NextTurnProjection reports the window and calibrates from usage",
      async () => {
        const p = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}/context-preview`);
        assertEquals(p.status, 200);
        assertEquals([p.body.available, p.body.window, p.body.budget], [true, 32768, 28672]);
        assert(p.body.history_tokens > 0);
        assert(p.body.calibration.samples >= 1, JSON.stringify(p.body.calibration));
        const db = openAgentState(h.server.home, h.agent);
        try {
          const rows = db.prepare("SELECT state, count(*) AS n FROM usage_ledger GROUP BY state")
            .all() as { state: string; n: number }[];
          assertEquals(rows.map((r) => r.state), ["complete"]);
        } finally {
          db.close();
        }
      },
    );

    await t.step(
      "history beyond the latest 256 Turns leaves a receipt that inspection shows",
      async () => {
        const long = await newConversation(h);
        const db = openAgentState(h.server.home, h.agent);
        try {
          bulkTurns(db, long, HISTORY_TURNS_READ_MAX + 2);
        } finally {
          db.close();
        }
        h.ollama.enqueue(scenarios.text("long memory"));
        const r = await submit(h, long, "what do you remember?");
        assertEquals(r.status, 202);
        await readSse(h, r.body.run_id);
        const c = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/context`);
        assertEquals(c.body.history.bundles, HISTORY_TURNS_READ_MAX);
        assertEquals(c.body.history.omitted.count, 2);
        assert(/^hmac-sha256:[0-9a-f]{64}$/.test(c.body.history.omitted.receipt));
        const sent = h.ollama.chats.at(-1)!.body.messages as { role: string; content: string }[];
        assert(sent[0].content.includes("2 older completed turn(s)"), sent[0].content);
        const users = sent.filter((m) => m.role === "user").map((m) => m.content);
        assertEquals([users.includes("message 2"), users.includes("message 3")], [false, true]);
      },
    );

    await t.step("the capability audit lists the operation ledger of a tool call", async () => {
      const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
      Deno.writeTextFileSync(`${ws}/x.txt`, "x\n", { mode: 0o600 });
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "file__stat", arguments: { path: "x.txt" } }]),
        scenarios.text("done"),
      );
      const r = await submit(h, conv, "stat x.txt");
      await readSse(h, r.body.run_id);
      const a = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/capability-audit`);
      assertEquals(a.status, 200);
      assertEquals(a.body.entries.length, 1);
      const e = a.body.entries[0];
      assertEquals([e.kind, e.tool_id, e.state, e.executor], [
        "operation",
        "file/stat",
        "succeeded",
        "control-plane/file_stat/v1",
      ]);
    });

    await t.step("approvals: none pending, an unknown id is 404, CSRF is required", async () => {
      const p = await h.api("GET", `/api/agents/${h.agent}/permissions`);
      assertEquals(p.body, { pending: [] });
      const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${crypto.randomUUID()}`, {
        decision: "approve",
      });
      assertEquals([d.status, codeOf(d)], [404, "permission_not_found"]);
      const noCsrf = await fetch(
        `${h.server.url}/api/agents/${h.agent}/permissions/${crypto.randomUUID()}`,
        {
          method: "POST",
          headers: {
            cookie: h.session.cookie,
            origin: h.server.origin,
            "content-type": "application/json",
          },
          body: JSON.stringify({ decision: "approve" }),
        },
      );
      assertEquals(noCsrf.status, 403);
      await noCsrf.body?.cancel();
    });

    await t.step("a Run is invisible under another Agent (404 on every run route)", async () => {
      h.ollama.enqueue(scenarios.text("mine"));
      const r = await submit(h, conv, "whose run?");
      await readSse(h, r.body.run_id);
      const other = (await h.api("POST", "/api/agents", { name: "other" })).body.agent.id;
      const base = `/api/agents/${other}/runs/${r.body.run_id}`;
      for (
        const [method, path] of [
          ["GET", `${base}/events`],
          ["GET", `${base}/replay`],
          ["GET", `${base}/context`],
          ["GET", `${base}/capability-audit`],
          ["POST", `${base}/cancel`],
        ]
      ) {
        const res = await h.api(method, path);
        assertEquals([res.status, codeOf(res)], [404, "run_not_found"], `${method} ${path}`);
      }
    });

    await t.step(`at most ${ACTIVE_RUNS_TOTAL_MAX} Runs are active at once`, async () => {
      const runs: { conv: string; run: string }[] = [];
      for (let i = 0; i < ACTIVE_RUNS_TOTAL_MAX; i++) {
        const c = await newConversation(h);
        h.ollama.enqueue(scenarios.stall());
        const r = await submit(h, c, `stall ${i}`);
        assertEquals(r.status, 202);
        runs.push({ conv: c, run: r.body.run_id });
      }
      const extra = await newConversation(h);
      const busy = await submit(h, extra, "one too many");
      assertEquals([busy.status, codeOf(busy)], [503, "runs_busy"]);
      // A second submit to a busy Conversation is 409 even when all slots are taken [CV-2].
      const second = await submit(h, runs[0].conv, "second in a busy conversation");
      assertEquals([second.status, codeOf(second)], [409, "conversation_busy"]);
      for (const r of runs) {
        const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.run}/cancel`);
        assertEquals(c.status, 202);
      }
      for (const r of runs) assertEquals((await waitTurn(h, r.conv, r.run)).state, "cancelled");
      const again = await h.api("POST", `/api/agents/${h.agent}/runs/${runs[0].run}/cancel`);
      assertEquals([again.status, codeOf(again)], [409, "run_not_active"]);
    });
  } finally {
    await h.close();
  }
});

Deno.test("deleting an Agent cancels its active Run first", async () => {
  const h = await startRunHarness();
  try {
    const created = await h.api("POST", "/api/agents", { name: "doomed" });
    assertEquals(created.status, 201);
    const agent = created.body.agent.id;
    const conv = (await h.api("POST", `/api/agents/${agent}/sessions`, {})).body.session.id;
    h.ollama.enqueue(scenarios.stall());
    const r = await h.api("POST", `/api/agents/${agent}/sessions/${conv}/runs`, { message: "hi" });
    assertEquals(r.status, 202);
    const other = { ...h, agent };
    await readSse(other, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
    // The stream is attached before the DELETE fences the Agent (which then
    // refuses new streams with agent_busy).
    let attached!: () => void;
    const opened = new Promise<void>((resolve) => attached = resolve);
    const stream = readSse(other, r.body.run_id, { opened: attached });
    await opened;
    const del = await h.api("DELETE", `/api/agents/${agent}`);
    assertEquals(del.status, 200);
    const frames = await stream;
    assertEquals(frames.at(-1)!.event, "run.cancelled");
    assertEquals(frames.at(-1)!.data.payload.reason, "agent_delete");
    assertEquals(codeOf(await h.api("GET", `/api/agents/${agent}`)), "agent_not_found");
  } finally {
    await h.close();
  }
});

Deno.test("a first call over the model's input budget is refused with 413 model_context_limit", async () => {
  // window 16384 - output reserve 4096 (window / 4) = 12288-token input budget [MB-10]. (An 8K
  // window no longer holds the release-0.2 tool schemas under the upper-bound count.)
  const ollama = await startFakeOllama({
    models: {
      "qwen3.5:2b": { arch: "qwen35", contextLength: 16384, capabilities: ["completion", "tools"] },
    },
  });
  const h = await startRunHarness({ ollama });
  try {
    const conv = await newConversation(h);
    // The preview says how many tokens a message may have; one message just past that is refused.
    const p = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}/context-preview`);
    assertEquals([p.body.available, p.body.window, p.body.budget], [true, 16384, 12288]);
    const over = p.body.safe_user_tokens + 64;
    assert(over <= USER_MESSAGE_MAX_BYTES, `a message of ${over} bytes passes the gateway bound`);
    const big = await submit(h, conv, "m".repeat(over));
    assertEquals([big.status, codeOf(big)], [413, "model_context_limit"]);
    assertEquals(ollama.chats.length, 0);
    const detail = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    assertEquals(detail.body.turns, [], "a refused submission creates no Turn");
  } finally {
    await h.close();
    await ollama.close();
  }
});
