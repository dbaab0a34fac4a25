/**
 * External runners over the Agent Client Protocol [LC-6], end to end: a real
 * server (child process) registers the scripted ACP agent written with the
 * official SDK (tests/helpers/acp_agent.ts) as `--acp-runner scripted=…`;
 * an Agent bound to it runs its Turns there. Proves the registry and binding
 * routes, the mapping of every `session/update` kind to canonical events, the
 * permission card, the file accesses through [TL-4]/[TL-6] with their
 * refusals, the audit-lite rows, and the runner's minimal environment.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, type SseFrame, submit, waitTurn } from "../helpers/runs.ts";
import { agentDataRel } from "../../runtime/home.ts";
import { type AcpHarness, recorded, startAcpHarness } from "../helpers/acp.ts";

const kinds = (frames: SseFrame[]) =>
  frames.map((f) => f.event).filter((k) => !k.endsWith(".delta"));

/** The Agent's workspace directory in the server's home. */
const ws = (h: AcpHarness) => `${h.server.home}/${agentDataRel(h.agent)}/workspace`;

async function bind(h: AcpHarness, runner: string | null) {
  const r = await h.api("PATCH", `/api/agents/${h.agent}`, { runner });
  assertEquals(r.status, 200, JSON.stringify(r.body));
  return r.body.agent;
}

async function permission(h: AcpHarness, runId: string) {
  const frames = await readSse(h, runId, { until: (f) => f.event === "permission.requested" });
  const p = frames.at(-1)!;
  assertEquals(p.event, "permission.requested");
  return p.data.payload as {
    permission_id: string;
    tool_id: string;
    preview: string;
    call_id: string;
  };
}

async function audit(h: AcpHarness, runId: string) {
  const a = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/capability-audit`);
  assertEquals(a.status, 200);
  return (a.body.runner_access ?? []) as {
    method: string;
    resource: string;
    decision: string;
    code: string | null;
  }[];
}

Deno.test("ACP runner: registry, binding, and each session/update kind mapped to canonical events", async (t) => {
  const h = await startAcpHarness();
  try {
    await t.step(
      "GET /api/runners lists the runner with the NAMES of its environment",
      async () => {
        const r = await h.api("GET", "/api/runners");
        assertEquals(r.status, 200);
        assertEquals(r.body.runners.length, 1);
        assertEquals(r.body.runners[0].name, "scripted");
        assertEquals(r.body.runners[0].env, ["ACP_TEST_OUT", "HOME", "PATH"]);
      },
    );

    await t.step("PATCH {runner} refuses an unknown name and binds a registered one", async () => {
      const bad = await h.api("PATCH", `/api/agents/${h.agent}`, { runner: "nope" });
      assertEquals(bad.status, 422);
      assertEquals(bad.body.error.code, "runner_unknown");
      const agent = await bind(h, "scripted");
      assertEquals(agent.runner, "scripted");
    });

    await t.step(
      "thought, plan and streamed text become reasoning, a plan tool card and the answer",
      async () => {
        const conv = await newConversation(h);
        const before = h.ollama.chats.length;
        const r = await submit(h, conv, "stream");
        assertEquals(r.status, 202, JSON.stringify(r.body));
        const frames = await readSse(h, r.body.run_id);
        assertEquals(kinds(frames), [
          "run.started",
          "model.request.started",
          "model.response.finished",
          "assistant.reasoning.completed",
          "tool.call.requested",
          "tool.call.completed",
          "model.request.started",
          "assistant.block.started",
          "model.response.finished",
          "assistant.block.completed",
          "run.completed",
        ]);
        assertEquals(frames[0].data.payload.model_id, "acp:scripted", "the runner answered");
        const plan = frames.find((f) => f.event === "tool.call.requested")!.data.payload;
        assertEquals(plan.tool_id, "acp/plan");
        assertEquals(plan.args.entries, ["[in_progress] Say hello", "[pending] Stop"]);
        const deltas = frames.filter((f) => f.event === "assistant.block.delta").map((f) =>
          f.data.payload.text
        );
        assertEquals(deltas.join(""), "Hello from the runner.");
        const thought = frames.find((f) => f.event === "assistant.reasoning.completed")!;
        assertEquals(thought.data.payload.text, "Thinking about it.");
        const turn = await waitTurn(h, conv, r.body.run_id);
        assertEquals(turn.state, "completed");
        assertEquals(turn.assistant_message, "Hello from the runner.");
        assertEquals(h.ollama.chats.length, before, "the model is never called for a runner Turn");
      },
    );

    await t.step(
      "an answer of 16 KiB is whole; one byte more is cut there and ends max_output",
      async () => {
        for (const [n, reason] of [[16384, "stop"], [16385, "max_output"]] as const) {
          const conv = await newConversation(h);
          const r = await submit(h, conv, `long ${n}`);
          const frames = await readSse(h, r.body.run_id);
          assertEquals(frames.at(-1)!.event, "run.completed");
          assertEquals(frames.at(-1)!.data.payload.reason, reason);
          const turn = await waitTurn(h, conv, r.body.run_id);
          assertEquals(turn.assistant_message, "a".repeat(16384));
        }
      },
    );

    await t.step(
      "a second Turn in the Conversation reuses the process and sends the history",
      async () => {
        const conv = await newConversation(h);
        const a = await submit(h, conv, "pid");
        await readSse(h, a.body.run_id);
        const first = (await waitTurn(h, conv, a.body.run_id)).assistant_message;
        const b = await submit(h, conv, "pid");
        await readSse(h, b.body.run_id);
        assertEquals((await waitTurn(h, conv, b.body.run_id)).assistant_message, first);
        const c = await submit(h, conv, "stream");
        await readSse(h, c.body.run_id);
        const turn = await waitTurn(h, conv, c.body.run_id);
        assertEquals(turn.assistant_message, "Hello from the runner. (history seen)");
      },
    );

    await t.step(
      "request_permission becomes an approval card; approve selects allow_once",
      async () => {
        const conv = await newConversation(h);
        const r = await submit(h, conv, "permission");
        const p = await permission(h, r.body.run_id);
        assertEquals(p.tool_id, "acp/execute");
        assert(
          p.preview.includes("Runner: scripted (operator-owned execution, not sandboxed"),
          p.preview,
        );
        assert(p.preview.includes("Tool: Run the test suite"), p.preview);
        assert(p.preview.includes('Input: {"command":"npm test"}'), p.preview);
        const pending = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(pending.body.pending.map((x: { id: string }) => x.id), [p.permission_id]);
        const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
        });
        assertEquals(d.status, 200);
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const done = frames.find((f) => f.event === "tool.call.completed")!.data.payload;
        assertEquals([done.tool_id, done.outcome], ["acp/execute", "ok"]);
        const turn = await waitTurn(h, conv, r.body.run_id);
        assertEquals(turn.assistant_message, "Permission outcome: yes.");
        const rows = await audit(h, r.body.run_id);
        assertEquals(rows.map((x) => [x.method, x.resource, x.decision]), [
          ["session/request_permission", "Run the test suite", "approved"],
        ]);
      },
    );

    await t.step(
      "deny selects reject_once; the runner's tool call ends runner_tool_failed",
      async () => {
        const conv = await newConversation(h);
        const r = await submit(h, conv, "permission");
        const p = await permission(h, r.body.run_id);
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "deny",
        });
        const frames = await readSse(h, r.body.run_id);
        const done = frames.find((f) => f.event === "tool.call.completed")!.data.payload;
        assertEquals([done.outcome, done.code], ["error", "runner_tool_failed"]);
        assertEquals(
          (await waitTurn(h, conv, r.body.run_id)).assistant_message,
          "Permission outcome: no.",
        );
        assertEquals((await audit(h, r.body.run_id))[0].decision, "denied");
      },
    );

    await t.step(
      "fs read and write go through the workspace tools with receipt, approval and refusals",
      async () => {
        Deno.writeTextFileSync(`${ws(h)}/notes.txt`, "first line\n");
        // A link inside the workspace that points out of it.
        Deno.symlinkSync("/etc/hostname", `${ws(h)}/link.txt`);
        const conv = await newConversation(h);
        const r = await submit(h, conv, "readwrite");
        const p = await permission(h, r.body.run_id);
        assertEquals(p.tool_id, "file/write");
        assert(p.preview.includes("+edited by the runner"), p.preview);
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
        });
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const tools = frames.filter((f) => f.event === "tool.call.requested").map((f) =>
          f.data.payload.tool_id
        );
        // A path refused by its shape is an audit row only; the link is refused by the reader.
        assertEquals(tools, ["file/read_text", "file/write", "file/read_text"]);
        const turn = await waitTurn(h, conv, r.body.run_id);
        assertEquals(
          turn.assistant_message,
          'read "first line\\n"; write ok; outside refused runner_path_refused; ' +
            "outside refused runner_path_refused; outside refused path_symlink",
        );
        assertEquals(
          Deno.readTextFileSync(`${ws(h)}/notes.txt`),
          "first line\nedited by the runner\n",
        );
        const rows = await audit(h, r.body.run_id);
        assertEquals(rows.map((x) => [x.method, x.resource, x.decision, x.code]), [
          ["fs/read_text_file", "notes.txt", "allowed", null],
          ["fs/write_text_file", "notes.txt", "approved", null],
          ["fs/read_text_file", "/etc/hostname", "refused", "runner_path_refused"],
          ["fs/read_text_file", `${ws(h)}/../escape.txt`, "refused", "runner_path_refused"],
          ["fs/read_text_file", "link.txt", "refused", "path_symlink"],
        ]);
      },
    );

    await t.step(
      "the Agent's policy decides: file/write allowed writes without a card; a denied path is refused",
      async () => {
        const put = await h.api("PUT", `/api/agents/${h.agent}/policy`, {
          rules: [
            { tool: "file/write", decision: "allow" },
            { tool: "file/read_text", decision: "deny", path_prefix: "private" },
          ],
        });
        assertEquals(put.status, 200, JSON.stringify(put.body));
        Deno.writeTextFileSync(`${ws(h)}/notes.txt`, "first line\n");
        Deno.mkdirSync(`${ws(h)}/private`, { recursive: true });
        Deno.writeTextFileSync(`${ws(h)}/private/key.txt`, "secret\n");
        const conv = await newConversation(h);
        const r = await submit(h, conv, "readwrite");
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(frames.filter((f) => f.event === "permission.requested"), []);
        assertEquals(
          Deno.readTextFileSync(`${ws(h)}/notes.txt`),
          "first line\nedited by the runner\n",
        );
        const rows = await audit(h, r.body.run_id);
        assertEquals(rows[1].method, "fs/write_text_file");
        assertEquals(rows[1].decision, "allowed");
        const denied = await submit(h, conv, "read private/key.txt");
        await readSse(h, denied.body.run_id);
        assertEquals(
          (await waitTurn(h, conv, denied.body.run_id)).assistant_message,
          "refused tool_denied",
        );
        assertEquals((await audit(h, denied.body.run_id)).map((x) => [x.resource, x.decision]), [
          ["private/key.txt", "refused"],
        ]);
        const reset = await h.api("PUT", `/api/agents/${h.agent}/policy`, { rules: [] });
        assertEquals(reset.status, 200);
      },
    );

    await t.step(
      "terminals are not offered: terminal/create is method-not-found and audited",
      async () => {
        const conv = await newConversation(h);
        const r = await submit(h, conv, "terminal");
        await readSse(h, r.body.run_id);
        assertEquals(
          (await waitTurn(h, conv, r.body.run_id)).assistant_message,
          "terminal refused -32601",
        );
        const rows = await audit(h, r.body.run_id);
        assertEquals(rows.map((x) => [x.method, x.decision]), [["terminal/create", "refused"]]);
      },
    );

    await t.step(
      "the runner's environment is PATH, HOME and the named variable only; no product secret",
      () => {
        const token = Deno.readTextFileSync(`${h.server.home}/.runtime/secrets/web-bootstrap-token`)
          .trim();
        const seen = recorded(h.out, "env-") as { env: Record<string, string>; args: string[] }[];
        assert(seen.length >= 1);
        for (const s of seen) {
          assertEquals(Object.keys(s.env).sort(), ["ACP_TEST_OUT", "HOME", "PATH"]);
          assert(
            !JSON.stringify(s).includes(token),
            "the bootstrap token never reaches the runner",
          );
          assert(!JSON.stringify(s).includes(h.session.cookie.split("=")[1].split(";")[0]));
        }
      },
    );
  } finally {
    await h.close();
  }
});
