/**
 * A scripted ACP agent built with the official SDK (`@agentclientprotocol/sdk`),
 * so the product's own ACP client is tested against an implementation we did
 * not write [LC-6]. Started by the server as a registered `--acp-runner`; the
 * first word of the prompt's last line picks the scenario:
 *
 * - `stream`     thought, text in chunks, a plan, end_turn
 * - `permission` a tool call that asks permission (allow_once / reject_once) and reports
 * - `readwrite`  fs/read_text_file + fs/write_text_file of `notes.txt`, then a path outside
 * - `gateway`    the scoped MCP gateway with the official MCP client: list, read, escape
 * - `hold`       writes its gateway token, then waits for session/cancel
 * - `crash`      a chunk, then exits mid-prompt
 * - `burst N`    exactly N session/update notifications (one "." each), then end_turn
 * - `read P`     fs/read_text_file of the workspace path P, reporting content or refusal
 * - `long N`     an answer of exactly N bytes ("a"), in chunks of 1000
 * - `malformed`  a line that is not JSON-RPC on stdout
 * - `silent`     never answers the prompt
 * - `pid`        answers with its process id (process reuse)
 * - `terminal`   asks for a terminal (not offered)
 *
 * Started with `--never-initialize`, it never answers `initialize`.
 *
 * When `ACP_TEST_OUT` names a directory, it records there what it saw: `env.json`
 * (its environment and argv) and `gateway-<n>.json` (the MCP server it was given).
 */
import * as acp from "@agentclientprotocol/sdk";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="../../node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.d.ts"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const out = Deno.env.get("ACP_TEST_OUT");
if (out) {
  Deno.writeTextFileSync(
    `${out}/env-${Deno.pid}.json`,
    JSON.stringify({ env: Deno.env.toObject(), args: Deno.args, cwd: Deno.cwd() }),
  );
}

interface Session {
  cwd: string;
  mcp: { url: string; headers: { name: string; value: string }[] } | null;
  cancelled: PromiseWithResolvers<void>;
}
const sessions = new Map<string, Session>();
let sessionNo = 0;

function text(t: string) {
  return {
    sessionUpdate: "agent_message_chunk" as const,
    content: { type: "text" as const, text: t },
  };
}

async function gatewayClient(s: Session): Promise<Client> {
  const c = new Client({ name: "acp-test-agent", version: "1.0.0" });
  const headers: Record<string, string> = {};
  for (const h of s.mcp!.headers) headers[h.name] = h.value;
  await c.connect(
    new StreamableHTTPClientTransport(new URL(s.mcp!.url), { requestInit: { headers } }),
  );
  return c;
}

const app = acp.agent({ name: "acp-test-agent" })
  .onRequest(acp.methods.agent.initialize, async () => {
    if (Deno.args.includes("--never-initialize")) await new Promise(() => undefined);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { mcpCapabilities: { http: true } },
      agentInfo: { name: "acp-test-agent", version: "1.0.0" },
    };
  })
  .onRequest(acp.methods.agent.session.new, (ctx) => {
    const id = `s-${++sessionNo}`;
    // deno-lint-ignore no-explicit-any
    const http = (ctx.params.mcpServers as any[]).find((m) => m.type === "http") ?? null;
    sessions.set(id, {
      cwd: ctx.params.cwd,
      mcp: http ? { url: http.url, headers: http.headers } : null,
      cancelled: Promise.withResolvers<void>(),
    });
    if (out && http) {
      Deno.writeTextFileSync(
        `${out}/gateway-${Deno.pid}-${sessionNo}.json`,
        JSON.stringify({ url: http.url, headers: http.headers, cwd: ctx.params.cwd }),
      );
    }
    return { sessionId: id };
  })
  .onNotification(acp.methods.agent.session.cancel, (ctx) => {
    sessions.get(ctx.params.sessionId)?.cancelled.resolve();
  })
  .onRequest(acp.methods.agent.session.prompt, async (ctx) => {
    const sid = ctx.params.sessionId;
    const s = sessions.get(sid)!;
    const first = ctx.params.prompt[0];
    const all = first.type === "text" ? first.text : "";
    const lastLine = all.trimEnd().split("\n").at(-1) ?? "";
    const scenario = lastLine.split(" ")[0];
    const update = (u: acp.SessionUpdate) =>
      ctx.client.notify(acp.methods.client.session.update, { sessionId: sid, update: u });
    switch (scenario) {
      case "stream": {
        await update({
          sessionUpdate: "agent_thought_chunk",
          content: { type: "text", text: "Thinking about it." },
        });
        await update({
          sessionUpdate: "plan",
          entries: [
            { content: "Say hello", priority: "high", status: "in_progress" },
            { content: "Stop", priority: "low", status: "pending" },
          ],
        });
        for (const t of ["Hello ", "from ", "the runner."]) await update(text(t));
        if (all.includes("Earlier in this conversation")) await update(text(" (history seen)"));
        return { stopReason: "end_turn" };
      }
      case "permission": {
        await update({
          sessionUpdate: "tool_call",
          toolCallId: "t1",
          title: "Run the test suite",
          kind: "execute",
          status: "pending",
          rawInput: { command: "npm test" },
        });
        const r = await ctx.client.request(acp.methods.client.session.requestPermission, {
          sessionId: sid,
          toolCall: { toolCallId: "t1", title: "Run the test suite", kind: "execute" },
          options: [
            { optionId: "yes", name: "Allow once", kind: "allow_once" },
            { optionId: "no", name: "Reject", kind: "reject_once" },
          ],
        });
        const chosen = r.outcome.outcome === "selected" ? r.outcome.optionId : "cancelled";
        await update({
          sessionUpdate: "tool_call_update",
          toolCallId: "t1",
          status: chosen === "yes" ? "completed" : "failed",
          content: [{ type: "content", content: { type: "text", text: `outcome ${chosen}` } }],
        });
        await update(text(`Permission outcome: ${chosen}.`));
        return { stopReason: "end_turn" };
      }
      case "readwrite": {
        const report: string[] = [];
        const path = `${s.cwd}/notes.txt`;
        const before = await ctx.client.request(acp.methods.client.fs.readTextFile, {
          sessionId: sid,
          path,
        });
        report.push(`read ${JSON.stringify(before.content)}`);
        try {
          await ctx.client.request(acp.methods.client.fs.writeTextFile, {
            sessionId: sid,
            path,
            content: before.content + "edited by the runner\n",
          });
          report.push("write ok");
        } catch (err) {
          report.push(`write refused ${(err as acp.RequestError).message}`);
        }
        for (const p of ["/etc/hostname", `${s.cwd}/../escape.txt`, `${s.cwd}/link.txt`]) {
          try {
            await ctx.client.request(acp.methods.client.fs.readTextFile, {
              sessionId: sid,
              path: p,
            });
            report.push(`outside read ok ${p}`);
          } catch (err) {
            report.push(`outside refused ${(err as acp.RequestError).message}`);
          }
        }
        await update(text(report.join("; ")));
        return { stopReason: "end_turn" };
      }
      case "gateway": {
        const c = await gatewayClient(s);
        const tools = (await c.listTools()).tools.map((t) => t.name).sort();
        const read = await c.callTool({ name: "file_read_text", arguments: { path: "notes.txt" } });
        const escape = await c.callTool({
          name: "file_read_text",
          arguments: { path: "../../secrets/web-bootstrap-token" },
        });
        const write = await c.callTool({
          name: "file_write",
          arguments: { path: "x.txt", content: "no" },
        });
        await c.close();
        // deno-lint-ignore no-explicit-any
        const first = (r: any) => r.content[0].text as string;
        await update(text(JSON.stringify({
          tools,
          read: JSON.parse(first(read)).text,
          escape: [escape.isError, first(escape)],
          write: [write.isError, first(write)],
        })));
        return { stopReason: "end_turn" };
      }
      case "hold": {
        await update(text("holding"));
        await s.cancelled.promise;
        return { stopReason: "cancelled" };
      }
      case "crash": {
        await update(text("about to crash"));
        Deno.exit(3);
        break;
      }
      case "burst": {
        const n = Number(lastLine.split(" ")[1]);
        for (let i = 0; i < n; i++) await update(text("."));
        return { stopReason: "end_turn" };
      }
      case "read": {
        const rel = lastLine.split(" ")[1];
        try {
          const r = await ctx.client.request(acp.methods.client.fs.readTextFile, {
            sessionId: sid,
            path: `${s.cwd}/${rel}`,
          });
          await update(text(`content ${JSON.stringify(r.content)}`));
        } catch (err) {
          await update(text(`refused ${(err as acp.RequestError).message}`));
        }
        return { stopReason: "end_turn" };
      }
      case "long": {
        let left = Number(lastLine.split(" ")[1]);
        while (left > 0) {
          const n = Math.min(1000, left);
          await update(text("a".repeat(n)));
          left -= n;
        }
        return { stopReason: "end_turn" };
      }
      case "malformed": {
        await update(text("then garbage"));
        await Deno.stdout.write(new TextEncoder().encode("{this is not json\n"));
        await new Promise(() => undefined);
        break;
      }
      case "silent": {
        await new Promise(() => undefined);
        break;
      }
      case "pid": {
        await update(text(`pid ${Deno.pid}`));
        return { stopReason: "end_turn" };
      }
      case "terminal": {
        try {
          await ctx.client.request(acp.methods.client.terminal.create, {
            sessionId: sid,
            command: "id",
          });
          await update(text("terminal granted"));
        } catch (err) {
          await update(text(`terminal refused ${(err as acp.RequestError).code}`));
        }
        return { stopReason: "end_turn" };
      }
    }
    await update(text(`unknown scenario ${scenario}`));
    return { stopReason: "end_turn" };
  });

const toWeb = acp.ndJsonStream(Deno.stdout.writable, Deno.stdin.readable);
const conn = app.connect(toWeb);
await conn.closed;
