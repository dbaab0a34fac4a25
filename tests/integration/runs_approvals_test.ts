/**
 * Approvals of `ask` tools inside a Run [TL-2, TL-6]: the model asks for
 * file/write; the Run journals `permission.requested` with the exact diff
 * preview and waits; only the browser's decision on that pending id (CSRF)
 * lets the Control Plane commit, bound to the Run's read receipt. A denied or
 * cancelled approval leaves the workspace untouched.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

async function pendingId(h: RunHarness, runId: string): Promise<string> {
  const frames = await readSse(h, runId, { until: (f) => f.event === "permission.requested" });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  return req.data.payload.permission_id;
}

Deno.test("approvals gate file/write inside a Run", async (t) => {
  const h = await startRunHarness();
  try {
    await t.step("an approved replace commits after a read receipt of the same Run", async () => {
      Deno.writeTextFileSync(`${workspace(h)}/tasks.txt`, "old line\n", { mode: 0o600 });
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "file__read_text", arguments: { path: "tasks.txt" } }]),
        scenarios.toolCall([{
          name: "file__write",
          arguments: { path: "tasks.txt", content: "new line\n" },
        }]),
        scenarios.text("Updated."),
      );
      const r = await submit(h, conv, "rewrite tasks.txt");
      const id = await pendingId(h, r.body.run_id);
      const list = await h.api("GET", `/api/agents/${h.agent}/permissions`);
      assertEquals(list.body.pending.map((p: { id: string }) => p.id), [id]);
      assert(list.body.pending[0].preview.includes("+new line"), list.body.pending[0].preview);
      assertEquals(Deno.readTextFileSync(`${workspace(h)}/tasks.txt`), "old line\n");
      const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, {
        decision: "approve",
      });
      assertEquals(d.body, { id, state: "approved" });
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(Deno.readTextFileSync(`${workspace(h)}/tasks.txt`), "new line\n");
      const again = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, {
        decision: "deny",
      });
      assertEquals(codeOf(again), "permission_not_found");
      const audit = await h.api(
        "GET",
        `/api/agents/${h.agent}/runs/${r.body.run_id}/capability-audit`,
      );
      const states = audit.body.entries.map((e: { kind: string; tool_id: string; state: string }) =>
        `${e.kind}:${e.tool_id}:${e.state}`
      );
      assertEquals(states.sort(), [
        "operation:file/read_text:succeeded",
        "operation:file/write:succeeded",
        "permission:file/write:approved",
      ]);
    });

    await t.step(
      "a denied create leaves the workspace untouched and the model sees the denial",
      async () => {
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "file__write",
            arguments: { path: "new.txt", content: "x" },
          }]),
          scenarios.text("Understood."),
        );
        const r = await submit(h, conv, "create new.txt");
        const id = await pendingId(h, r.body.run_id);
        const before = h.ollama.chats.length;
        await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, { decision: "deny" });
        const frames = await readSse(h, r.body.run_id);
        const done = frames.find((f) => f.event === "tool.call.completed")!;
        assertEquals(done.data.payload.code, "tool_denied");
        assertEquals(frames.at(-1)!.event, "run.completed");
        let exists = true;
        try {
          Deno.statSync(`${workspace(h)}/new.txt`);
        } catch (err) {
          if (!(err instanceof Deno.errors.NotFound)) throw err;
          exists = false;
        }
        assertEquals(exists, false);
        const tool = h.ollama.chats[before].body.messages.find((m: { role: string }) =>
          m.role === "tool"
        );
        assert(tool.content.includes("tool_denied"), tool.content);
      },
    );

    await t.step("a replace without a read receipt is refused before any approval", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{
          name: "file__write",
          arguments: { path: "tasks.txt", content: "z" },
        }]),
        scenarios.text("OK."),
      );
      const r = await submit(h, conv, "overwrite tasks.txt blindly");
      const frames = await readSse(h, r.body.run_id);
      assert(!frames.some((f) => f.event === "permission.requested"));
      const done = frames.find((f) => f.event === "tool.call.completed")!;
      assertEquals(done.data.payload.code, "receipt_required");
      assertEquals(Deno.readTextFileSync(`${workspace(h)}/tasks.txt`), "new line\n");
    });

    await t.step("cancelling a Run that waits on an approval expires it", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{
          name: "file__write",
          arguments: { path: "later.txt", content: "y" },
        }]),
      );
      const r = await submit(h, conv, "create later.txt");
      const id = await pendingId(h, r.body.run_id);
      await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.cancelled");
      const decided = frames.find((f) => f.event === "permission.decided")!;
      assertEquals(decided.data.payload.decision, "expired");
      assertEquals((await waitTurn(h, conv, r.body.run_id)).state, "cancelled");
      const late = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, {
        decision: "approve",
      });
      assertEquals(codeOf(late), "permission_not_found");
      assertEquals((await h.api("GET", `/api/agents/${h.agent}/permissions`)).body.pending, []);
    });
  } finally {
    await h.close();
  }
});
