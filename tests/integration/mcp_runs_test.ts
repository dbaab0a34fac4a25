/**
 * MCP tools inside real Runs [LC-5, TL-1..3]: a real server (child process)
 * with `--mcp` servers built with the official SDK on loopback, the scripted
 * Ollama asking for `mcp__<server>__<tool>`. Proves: the enabled server's
 * tools reach the model as provider tools (and a disabled server's do not),
 * each call waits for an approval whose preview names server, tool and the
 * full arguments; an approved call's text result reaches the model projected
 * as untrusted; a denied call never reaches the server; a failing server
 * (down) ends the call with its fixed code and the Run continues; the
 * operation ledger records the MCP executor.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import { type Peer, startFriendlyPeer, startHostilePeer } from "../helpers/mcp_peers.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

async function pending(h: RunHarness, runId: string) {
  const frames = await readSse(h, runId, { until: (f) => f.event === "permission.requested" });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  return req.data.payload as { permission_id: string; tool_id: string; preview: string };
}

// deno-lint-ignore no-explicit-any
function toolMessages(body: any): string[] {
  // deno-lint-ignore no-explicit-any
  return body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content);
}

async function ready(h: RunHarness, name: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await h.api("GET", "/api/extensions");
    // deno-lint-ignore no-explicit-any
    const e = r.body.extensions.find((x: any) => x.name === name);
    if (e?.state === "ready") return;
    if (e?.state === "error") throw new Error(`${name}: ${e.code}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} never ready`);
}

Deno.test("MCP tools in a Run: approval with server, tool and full arguments; result reaches the model as untrusted; deny never calls", async (t) => {
  const friendly: Peer = startFriendlyPeer();
  const hostile: Peer = startHostilePeer();
  const h = await startRunHarness({
    args: [
      "--mcp-allow-ip",
      "127.0.0.1",
      "--mcp",
      `friendly=${friendly.url}/mcp`,
      "--mcp",
      `hostile=${hostile.url}/mcp/schemas`,
    ],
  });
  try {
    await ready(h, "friendly");
    await ready(h, "hostile");

    await t.step("no server is enabled by default: the model is offered no mcp tool", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(scenarios.text("Hi."));
      const r = await submit(h, conv, "hello");
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const tools = (h.ollama.chats.at(-1)!.body.tools ?? []) as { function: { name: string } }[];
      assertEquals(tools.filter((x) => x.function.name.startsWith("mcp__")), []);
    });

    await h.api("PUT", `/api/agents/${h.agent}/extensions`, { enabled: ["friendly"] });

    await t.step(
      "an approved call's text result reaches the model, projected as untrusted",
      async () => {
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "mcp__friendly__echo",
            arguments: { text: "hello \u202Eworld" },
          }]),
          scenarios.text("The server said hello."),
        );
        const r = await submit(h, conv, "use echo");
        const p = await pending(h, r.body.run_id);
        const offered = (h.ollama.chats.at(-1)!.body.tools as { function: { name: string } }[])
          .map((x) => x.function.name).filter((n) => n.startsWith("mcp__"));
        assertEquals(offered, [
          "mcp__friendly__add",
          "mcp__friendly__echo",
          "mcp__friendly__picture",
        ]);
        assertEquals(p.tool_id, "mcp/friendly/echo");
        assert(p.preview.includes("MCP server: friendly\nTool: echo\n"), p.preview);
        assert(p.preview.includes('Arguments:\n{\n  "text": "hello \\u{202E}world"\n}'), p.preview);
        assertEquals(friendly.calls.length, 0, "nothing is called before the approval");
        const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
        });
        assertEquals(d.status, 200);
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(friendly.calls, [{ name: "echo", args: { text: "hello \u202Eworld" } }]);
        const seen = toolMessages(h.ollama.chats.at(-1)!.body);
        assertEquals(seen.length, 1);
        assertEquals(JSON.parse(seen[0]), {
          content: "echo: hello \u202Eworld",
          is_error: false,
          server: "friendly",
          tool: "echo",
          trust: "untrusted",
        });
        const audit = await h.api(
          "GET",
          `/api/agents/${h.agent}/runs/${r.body.run_id}/capability-audit`,
        );
        const states = audit.body.entries.map((
          e: { kind: string; tool_id: string; state: string },
        ) => `${e.kind}:${e.tool_id}:${e.state}`);
        assertEquals(states.sort(), [
          "operation:mcp/friendly/echo:succeeded",
          "permission:mcp/friendly/echo:approved",
        ]);
      },
    );

    await t.step("a denied call never reaches the server; the model sees tool_denied", async () => {
      const before = friendly.calls.length;
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "mcp__friendly__add", arguments: { a: 1, b: 2 } }]),
        scenarios.text("Denied."),
      );
      const r = await submit(h, conv, "add");
      const p = await pending(h, r.body.run_id);
      assert(p.preview.includes('"a": 1'), p.preview);
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "deny",
      });
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(friendly.calls.length, before);
      assertEquals(toolMessages(h.ollama.chats.at(-1)!.body), ['{"error":"tool_denied"}']);
    });

    await t.step("a tool of a server the Agent did not enable is not callable", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "mcp__hostile__hostile_result", arguments: {} }]),
      );
      const r = await submit(h, conv, "call hostile");
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.failed");
      assertEquals(frames.at(-1)!.data.payload.code, "model_tool_loop");
      assertEquals(hostile.calls.length, 0);
    });

    await h.api("PUT", `/api/agents/${h.agent}/extensions`, {
      enabled: ["friendly", "hostile"],
    });

    await t.step(
      "a hostile result stays text, marked untrusted; refused schemas are never offered",
      async () => {
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{ name: "mcp__hostile__hostile_result", arguments: {} }]),
          scenarios.text("Noted."),
        );
        const r = await submit(h, conv, "call hostile");
        const p = await pending(h, r.body.run_id);
        const offered = (h.ollama.chats.at(-1)!.body.tools as { function: { name: string } }[])
          .map((x) => x.function.name).filter((n) => n.startsWith("mcp__hostile"));
        assertEquals(offered, [
          "mcp__hostile__big_result",
          "mcp__hostile__hostile_result",
          "mcp__hostile__inject",
        ]);
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
        });
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const seen = JSON.parse(toolMessages(h.ollama.chats.at(-1)!.body)[0]);
        assertEquals(seen.trust, "untrusted");
        assert(!seen.content.includes("root:x:0:0"));
      },
    );

    await t.step("an oversized result is a fixed error and the Run continues", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "mcp__hostile__big_result", arguments: {} }]),
        scenarios.text("Too big."),
      );
      const r = await submit(h, conv, "big");
      const p = await pending(h, r.body.run_id);
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "approve",
      });
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(toolMessages(h.ollama.chats.at(-1)!.body), [
        '{"error":"mcp_response_too_large"}',
      ]);
    });

    await t.step(
      "a server that went down ends the call mcp_unreachable; the Run continues",
      async () => {
        await friendly.close();
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{ name: "mcp__friendly__echo", arguments: { text: "x" } }]),
          scenarios.text("It is down."),
        );
        const r = await submit(h, conv, "echo");
        const p = await pending(h, r.body.run_id);
        await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
          decision: "approve",
        });
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(toolMessages(h.ollama.chats.at(-1)!.body), ['{"error":"mcp_unreachable"}']);
      },
    );
  } finally {
    await h.close();
    await friendly.close().catch(() => {});
    await hostile.close();
  }
});
