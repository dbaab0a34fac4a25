/**
 * Per-Agent policy on exec/command programs and MCP extension tools [TL-9,
 * TL-10, LC-5, EX-2] in real Runs: "Always allow" on an exec/command adds
 * exactly `exec/command:<argv0>`, after which that program runs without a
 * card and another program still asks; `mcp/<server>/*` rules decide every
 * tool of a real MCP server (built with the official SDK): allow calls it
 * without an approval, deny leaves the server's tools out of the offer and
 * never calls it; an MCP approval offers the tool itself; an exec/apply whose
 * change set touches .git is refused by the platform without asking.
 */
import { waitFor } from "../helpers/worker_procs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import { type Peer, startFriendlyPeer } from "../helpers/mcp_peers.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function putPolicy(h: RunHarness, rules: unknown[]): Promise<void> {
  const r = await h.api("PUT", `/api/agents/${h.agent}/policy`, { rules });
  assertEquals(r.status, 200, JSON.stringify(r.body));
}

async function finished(h: RunHarness, runId: string): Promise<SseFrame[]> {
  const frames = await readSse(h, runId, {
    until: (f) => f.event.startsWith("run.") && f.event !== "run.started",
    timeoutMs: 120_000,
  });
  assertEquals(frames.at(-1)!.event, "run.completed");
  return frames;
}

async function pending(h: RunHarness, runId: string): Promise<Json> {
  const frames = await readSse(h, runId, {
    until: (f) => f.event === "permission.requested",
    timeoutMs: 60_000,
  });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  return req.data.payload;
}

const completions = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "tool.call.completed").map((f) =>
    `${f.data.payload.tool_id}:${f.data.payload.code ?? "ok"}`
  );
const asked = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "permission.requested").length;

async function runCalls(
  h: RunHarness,
  calls: { name: string; arguments: Record<string, unknown> }[],
) {
  const conv = await newConversation(h);
  h.ollama.enqueue(...calls.map((c) => scenarios.toolCall([c])), scenarios.text("Done."));
  const r = await submit(h, conv, "go");
  assertEquals(r.status, 202, JSON.stringify(r.body));
  return r.body.run_id as string;
}

async function ready(h: RunHarness, name: string): Promise<void> {
  await waitFor(`${name} ready`, async () => {
    const r = await h.api("GET", "/api/extensions");
    const e = r.body.extensions.find((x: Json) => x.name === name);
    if (e?.state === "error") throw new Error(`${name}: ${e.code}`);
    return e?.state === "ready";
  }, 30_000);
}

const cmd = (argv: string[]) => ({ name: "exec__command", arguments: { argv } });

Deno.test("Always allow on exec/command adds exactly the program rule; another program still asks", async () => {
  const h = await startRunHarness();
  try {
    const run = await runCalls(h, [cmd(["true"]), cmd(["true", "again"]), cmd(["false"])]);
    const p = await pending(h, run);
    assertEquals(p.tool_id, "exec/command");
    assertEquals(p.always_allow, { tool: "exec/command:true", decision: "allow" });
    const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
      decision: "approve",
      always_allow: true,
    });
    assertEquals(d.body.rule_added, { tool: "exec/command:true", decision: "allow" });
    // The second `true` runs unasked; `false` asks.
    const q = await readSse(h, run, {
      until: (f) =>
        f.event === "permission.requested" && f.data.payload.permission_id !== p.permission_id,
      timeoutMs: 120_000,
    });
    const second = q.at(-1)!.data.payload;
    assertEquals(second.always_allow, { tool: "exec/command:false", decision: "allow" });
    await h.api("POST", `/api/agents/${h.agent}/permissions/${second.permission_id}`, {
      decision: "deny",
    });
    const frames = await finished(h, run);
    assertEquals(asked(frames), 2);
    assertEquals(completions(frames), [
      "exec/command:ok",
      "exec/command:ok",
      "exec/command:tool_denied",
    ]);
    const v = (await h.api("GET", `/api/agents/${h.agent}/policy`)).body;
    assertEquals(v.rules, [{ tool: "exec/command:true", decision: "allow" }]);
    const row = v.tools.find((t: Json) => t.tool === "exec/command:true");
    assertEquals([row.kind, row.decision, row.reason], ["command", "allow", "Agent rule"]);
    assertEquals(v.audit[0].source, "always_allow");
  } finally {
    await h.close();
  }
});

Deno.test("exec/apply of a change set that touches .git is refused by the platform, unasked; the rest applies", async () => {
  const h = await startRunHarness();
  const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
  try {
    const run = await runCalls(h, [
      cmd([
        "sh",
        "-c",
        "mkdir -p .git/hooks && printf x > .git/hooks/pre-commit && printf y > ok.txt",
      ]),
      { name: "exec__apply", arguments: {} },
      { name: "exec__apply", arguments: { paths: ["ok.txt"] } },
    ]);
    const p1 = await pending(h, run);
    assertEquals(p1.tool_id, "exec/command");
    await h.api("POST", `/api/agents/${h.agent}/permissions/${p1.permission_id}`, {
      decision: "approve",
    });
    const q = await readSse(h, run, {
      until: (f) =>
        f.event === "permission.requested" && f.data.payload.permission_id !== p1.permission_id,
      timeoutMs: 120_000,
    });
    const p2 = q.at(-1)!.data.payload;
    assertEquals(p2.tool_id, "exec/apply");
    assertEquals(p2.always_allow, null);
    await h.api("POST", `/api/agents/${h.agent}/permissions/${p2.permission_id}`, {
      decision: "approve",
    });
    const frames = await finished(h, run);
    assertEquals(asked(frames), 2);
    assertEquals(completions(frames), [
      "exec/command:ok",
      "exec/apply:tool_denied",
      "exec/apply:ok",
    ]);
    assertEquals(Deno.readTextFileSync(`${ws}/ok.txt`), "y");
    let hook = true;
    try {
      Deno.statSync(`${ws}/.git/hooks/pre-commit`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      hook = false;
    }
    assertEquals(hook, false);
  } finally {
    await h.close();
  }
});

Deno.test("mcp/<server>/* rules decide every tool of a real MCP server", async (t) => {
  const friendly: Peer = startFriendlyPeer();
  const h = await startRunHarness({
    args: ["--mcp-allow-ip", "127.0.0.1", "--mcp", `friendly=${friendly.url}/mcp`],
  });
  try {
    await ready(h, "friendly");
    await h.api("PUT", `/api/agents/${h.agent}/extensions`, { enabled: ["friendly"] });

    await t.step("an approval of an MCP tool offers that tool alone", async () => {
      const run = await runCalls(h, [{ name: "mcp__friendly__echo", arguments: { text: "a" } }]);
      const p = await pending(h, run);
      assertEquals(p.always_allow, { tool: "mcp/friendly/echo", decision: "allow" });
      await h.api("POST", `/api/agents/${h.agent}/permissions/${p.permission_id}`, {
        decision: "deny",
      });
      await finished(h, run);
      assertEquals(friendly.calls.length, 0);
    });

    await t.step("mcp/friendly/* allow calls the server without an approval", async () => {
      await putPolicy(h, [{ tool: "mcp/friendly/*", decision: "allow" }]);
      const run = await runCalls(h, [
        { name: "mcp__friendly__echo", arguments: { text: "hi" } },
        { name: "mcp__friendly__add", arguments: { a: 1, b: 2 } },
      ]);
      const frames = await finished(h, run);
      assertEquals(asked(frames), 0);
      assertEquals(completions(frames), ["mcp/friendly/echo:ok", "mcp/friendly/add:ok"]);
      assertEquals(friendly.calls.map((c) => c.name), ["echo", "add"]);
      const v = (await h.api("GET", `/api/agents/${h.agent}/policy`)).body;
      const echo = v.tools.find((x: Json) => x.tool === "mcp/friendly/echo");
      assertEquals([echo.decision, echo.reason, echo.why], [
        "allow",
        "Agent rule",
        "rule: mcp/friendly/*",
      ]);
      const server = v.tools.find((x: Json) => x.tool === "mcp/friendly/*");
      assertEquals(server.kind, "mcp_server");
    });

    await t.step("a narrower deny of one tool wins over the server's allow", async () => {
      await putPolicy(h, [
        { tool: "mcp/friendly/*", decision: "allow" },
        { tool: "mcp/friendly/add", decision: "deny" },
      ]);
      const before = friendly.calls.length;
      const chats = h.ollama.chats.length;
      const run = await runCalls(h, [{ name: "mcp__friendly__echo", arguments: { text: "x" } }]);
      const frames = await finished(h, run);
      assertEquals(completions(frames), ["mcp/friendly/echo:ok"]);
      const offered = (h.ollama.chats[chats].body.tools as { function: { name: string } }[])
        .map((x) => x.function.name).filter((n) => n.startsWith("mcp__"));
      assertEquals(offered, ["mcp__friendly__echo", "mcp__friendly__picture"]);
      assertEquals(friendly.calls.length, before + 1);
    });

    await t.step("mcp/friendly/* deny leaves every tool of it out and never calls it", async () => {
      await putPolicy(h, [{ tool: "mcp/friendly/*", decision: "deny" }]);
      const before = friendly.calls.length;
      const chats = h.ollama.chats.length;
      const conv = await newConversation(h);
      h.ollama.enqueue(scenarios.text("No tools."));
      const r = await submit(h, conv, "hello");
      await finished(h, r.body.run_id);
      const offered = ((h.ollama.chats[chats].body.tools ?? []) as { function: { name: string } }[])
        .map((x) => x.function.name);
      assert(offered.includes("file__read_text"));
      assertEquals(offered.filter((n) => n.startsWith("mcp__")), []);
      assertEquals(friendly.calls.length, before);
    });
  } finally {
    await h.close();
    await friendly.close();
  }
});
