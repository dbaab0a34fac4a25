/**
 * Runs end to end [CV-2, CV-5, EV-1..4, SB-5, TL-1, CX-3]: the real server as a
 * child process, a real confined Worker per Run, and the scripted Ollama
 * server; assertions are made on what the browser receives over HTTP/SSE and
 * on what the scripted model server received.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { openAgentState } from "../helpers/agent_state.ts";
import {
  isTerminal,
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

const utf8 = (s: string) => new TextEncoder().encode(s).length;

function userContents(body: { messages: { role: string; content: string }[] }): string[] {
  return body.messages.filter((m) => m.role !== "system").map((m) => `${m.role}:${m.content}`);
}

Deno.test("Runs end to end against a confined Worker and the scripted model", async (t) => {
  const h: RunHarness = await startRunHarness();
  try {
    const conv = await newConversation(h);

    await t.step("a submitted message streams deltas and completes the Turn", async () => {
      h.ollama.enqueue(scenarios.text("Hello from the scripted model.", { frameDelayMs: 5 }));
      const r = await submit(h, conv, "first question");
      assertEquals(r.status, 202);
      const frames = await readSse(h, r.body.run_id);
      const kinds = frames.map((f) => f.event);
      assertEquals(kinds[0], "run.started");
      assert(kinds.includes("assistant.block.delta"), kinds.join(","));
      assertEquals(kinds.at(-1), "run.completed");
      const text = frames.filter((f) => f.event === "assistant.block.delta")
        .map((f) => f.data.payload.text).join("");
      assertEquals(text, "Hello from the scripted model.");
      const done = frames.find((f) => f.event === "assistant.block.completed")!;
      assertEquals(done.data.payload.text, "Hello from the scripted model.");
      const turn = await waitTurn(h, conv, r.body.run_id);
      assertEquals([turn.state, turn.assistant_message], [
        "completed",
        "Hello from the scripted model.",
      ]);
      // The Run root is removed once the Worker is reaped [SB-6]; waited for (≤ 5 s), not sampled.
      const root = `${h.server.home}/.runtime/agents/${h.agent}/runs/${r.body.run_id}`;
      let gone = false;
      for (let i = 0; i < 250 && !gone; i++) {
        try {
          Deno.statSync(root);
          await new Promise((res) => setTimeout(res, 20));
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
          gone = true;
        }
      }
      assert(gone, "run root removed");
    });

    await t.step("the second Turn's model request carries the first Turn's exchange", async () => {
      h.ollama.enqueue(scenarios.text("Second answer."));
      const before = h.ollama.chats.length;
      const r = await submit(h, conv, "second question");
      assertEquals(r.status, 202);
      await readSse(h, r.body.run_id);
      const chat = h.ollama.chats[before];
      assertEquals(userContents(chat.body), [
        "user:first question",
        "assistant:Hello from the scripted model.",
        "user:second question",
      ]);
    });

    await t.step("a failed Turn never reaches the next model request", async () => {
      h.ollama.enqueue(scenarios.inBandError());
      const r = await submit(h, conv, "this one fails");
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.failed");
      const turn = await waitTurn(h, conv, r.body.run_id);
      assertEquals(turn.state, "failed");
      assertEquals(turn.assistant_message, null);
      h.ollama.enqueue(scenarios.text("Third."));
      const before = h.ollama.chats.length;
      const r2 = await submit(h, conv, "after the failure");
      await readSse(h, r2.body.run_id);
      const sent = userContents(h.ollama.chats[before].body);
      assert(!sent.some((m) => m.includes("this one fails")), sent.join("|"));
      assertEquals(sent.at(-1), "user:after the failure");
    });

    await t.step("a provider context overflow retries once with only the latest Turn", async () => {
      h.ollama.enqueue(scenarios.contextOverflow(400), scenarios.text("Recovered."));
      const before = h.ollama.chats.length;
      const r = await submit(h, conv, "overflow please");
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const starts = frames.filter((f) => f.event === "model.request.started");
      assertEquals(starts.map((f) => f.data.payload.recovery), [0, 1]);
      // Three completed Turns precede it; the recovery call keeps only the latest one.
      assertEquals(starts.map((f) => f.data.payload.collapsed_bundles), [0, 2]);
      const db = openAgentState(h.server.home, h.agent);
      try {
        const est = db.prepare(
          "SELECT token_estimate AS n FROM usage_ledger WHERE run_id = ? ORDER BY call",
        ).all(r.body.run_id).map((x) => (x as { n: number }).n);
        assertEquals(est.length, 2);
        // Each usage row carries the CX-3 estimate of the request it sent: the two differ by
        // exactly the role + content bytes of the two message lists (same tools, same reserve).
        const bytes = (i: number) =>
          (h.ollama.chats[before + i].body.messages as { role: string; content: string }[])
            .reduce((n, m) => n + utf8(m.role) + utf8(m.content), 0);
        assertEquals(est[1] - est[0], bytes(1) - bytes(0), `estimates ${est}`);
      } finally {
        db.close();
      }
      const retry = userContents(h.ollama.chats[before + 1].body);
      assertEquals(retry.length, 3, retry.join("|"));
      assertEquals(retry.at(-1), "user:overflow please");
      assert(!retry.some((m) => m.includes("first question")), "older bundles dropped");
    });

    await t.step("a tool round-trip reads a workspace file and the model sees it", async () => {
      const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
      Deno.writeTextFileSync(`${ws}/notes.txt`, "The secret number is 42.\n", { mode: 0o600 });
      const fresh = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{
          id: "c1",
          name: "file__read_text",
          arguments: { path: "notes.txt" },
        }]),
        scenarios.text("The number is 42."),
      );
      const before = h.ollama.chats.length;
      const r = await submit(h, fresh, "what is the number?");
      const frames = await readSse(h, r.body.run_id);
      const kinds = frames.map((f) => f.event);
      assert(kinds.includes("tool.call.requested"), kinds.join(","));
      const completed = frames.find((f) => f.event === "tool.call.completed")!;
      assertEquals(completed.data.payload.outcome, "ok");
      assert(completed.data.payload.result.includes("The secret number is 42."));
      assertEquals(kinds.at(-1), "run.completed");
      const second = h.ollama.chats[before + 1].body;
      const tool = second.messages.find((m: { role: string }) => m.role === "tool");
      assert(tool.content.includes("The secret number is 42."), tool.content);
      assertEquals(
        second.tools.length,
        13,
        "4 read tools + file/edit + file/write + exec/run, exec/command, exec/apply, agent/delegate (ask) + task/status, task/output, document/extract_text",
      );
    });

    await t.step("tool calls arriving in the final done frame are executed", async () => {
      const fresh = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCallInDone([{ name: "file__stat", arguments: { path: "notes.txt" } }]),
        scenarios.text("It exists."),
      );
      const r = await submit(h, fresh, "does notes.txt exist?");
      const frames = await readSse(h, r.body.run_id);
      const req = frames.find((f) => f.event === "tool.call.requested")!;
      assertEquals(req.data.payload.tool_id, "file/stat");
      assertEquals(frames.at(-1)!.event, "run.completed");
    });

    await t.step("a second submit while a Run is active is 409 conversation_busy", async () => {
      const fresh = await newConversation(h);
      h.ollama.enqueue(scenarios.text("slow answer here", { firstFrameDelayMs: 800 }));
      const r = await submit(h, fresh, "slow");
      assertEquals(r.status, 202);
      const again = await submit(h, fresh, "again");
      assertEquals([again.status, codeOf(again)], [409, "conversation_busy"]);
      const frames = await readSse(h, r.body.run_id);
      assert(isTerminal(frames.at(-1)!));
    });

    await t.step("cancel mid-stream stops the Worker and the model stream", async () => {
      const fresh = await newConversation(h);
      h.ollama.enqueue(scenarios.text("word ".repeat(200), { frameDelayMs: 30 }));
      const before = h.ollama.chats.length;
      const r = await submit(h, fresh, "long answer please");
      const first = await readSse(h, r.body.run_id, {
        until: (f) => f.event === "assistant.block.delta",
      });
      assertEquals(first.at(-1)!.event, "assistant.block.delta");
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      assertEquals(c.status, 202);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.cancelled");
      assertEquals(await h.ollama.chats[before].closed, "client_closed");
      const turn = await waitTurn(h, fresh, r.body.run_id);
      assertEquals([turn.state, turn.assistant_message], ["cancelled", null]);
    });

    await t.step("cancel right after submit (while the Worker starts) ends the Run", async () => {
      const fresh = await newConversation(h);
      // No script queued: if the cancel lands after the spawn, the default slow answer is cut.
      const r = await submit(h, fresh, "cancel me at once");
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      assertEquals(c.status, 202);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.cancelled");
      assertEquals((await waitTurn(h, fresh, r.body.run_id)).state, "cancelled");
    });
  } finally {
    await h.close();
  }
});
