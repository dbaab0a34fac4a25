/**
 * The scoped asset gateway of external runners [LC-6]: the scripted ACP
 * agent (official ACP SDK) calls the product's loopback MCP endpoint with the
 * official MCP client (`@modelcontextprotocol/sdk`). Proves: only this Run's
 * authorised read tools are listed; a read works through [TL-4]; a path
 * outside the workspace and a mutation tool are refused; every call is an
 * audit-lite row; the token dies at the Run's terminal; another Run's token
 * is refused (and audited on the Run it was aimed at); a browser (Origin) is
 * refused before any token check.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, submit, waitTurn } from "../helpers/runs.ts";
import { type AcpHarness, recorded, startAcpHarness } from "../helpers/acp.ts";
import { agentDataRel } from "../../runtime/home.ts";
import { ACP_GATEWAY_BODY_MAX_BYTES } from "../../runtime/limits.ts";

interface Grant {
  url: string;
  headers: { name: string; value: string }[];
}

function grantOf(h: AcpHarness, runId: string): Grant {
  const g = (recorded(h.out, "gateway-") as Grant[]).find((x) => x.url.endsWith(`/${runId}`));
  if (!g) throw new Error(`no gateway grant recorded for ${runId}`);
  return g;
}

async function mcp(url: string, token: string | null, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { "content-type": "application/json", ...extra };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  return { status: res.status, body: await res.json() };
}

const tokenOf = (g: Grant) => g.headers.find((x) => x.name === "Authorization")!.value.slice(7);

async function runnerAccess(h: AcpHarness, runId: string) {
  const a = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/capability-audit`);
  return (a.body.runner_access ?? []) as {
    method: string;
    resource: string;
    decision: string;
    code: string | null;
  }[];
}

Deno.test("ACP gateway: run-scoped MCP tools, refusals, token dead at the terminal, another Run's token refused", async (t) => {
  const h = await startAcpHarness();
  try {
    const r = await h.api("PATCH", `/api/agents/${h.agent}`, { runner: "scripted" });
    assertEquals(r.status, 200);
    Deno.writeTextFileSync(
      `${h.server.home}/${agentDataRel(h.agent)}/workspace/notes.txt`,
      "gateway text\n",
    );

    let finished = "";
    await t.step(
      "the official MCP client sees only the Run's read tools; reads; escapes and writes are refused",
      async () => {
        const conv = await newConversation(h);
        const s = await submit(h, conv, "gateway");
        const frames = await readSse(h, s.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const turn = await waitTurn(h, conv, s.body.run_id);
        const seen = JSON.parse(turn.assistant_message);
        assertEquals(seen.tools, ["file_glob", "file_grep", "file_read_text", "file_stat"]);
        assertEquals(seen.read, "gateway text\n");
        assertEquals(seen.escape, [true, '{"error":"path_invalid"}']);
        assertEquals(seen.write, [true, '{"error":"tool_denied"}']);
        const rows = await runnerAccess(h, s.body.run_id);
        assertEquals(rows.map((x) => [x.method, x.resource, x.decision, x.code]), [
          ["mcp/tools/call", "file_read_text notes.txt", "allowed", null],
          [
            "mcp/tools/call",
            "file_read_text ../../secrets/web-bootstrap-token",
            "refused",
            "path_invalid",
          ],
          ["mcp/tools/call", "file_write x.txt", "refused", "tool_denied"],
        ]);
        finished = s.body.run_id;
      },
    );

    await t.step("the token is dead once its Run reached the terminal", async () => {
      const g = grantOf(h, finished);
      const res = await mcp(g.url, tokenOf(g));
      assertEquals(res.status, 401);
      assertEquals(res.body, { error: "runner_token_refused" });
    });

    await t.step(
      "another Run's live token is refused and audited on the Run it was aimed at; its own works",
      async () => {
        const c1 = await newConversation(h);
        const c2 = await newConversation(h);
        const a = await submit(h, c1, "hold");
        const b = await submit(h, c2, "hold");
        await readSse(h, a.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
        await readSse(h, b.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
        const ga = grantOf(h, a.body.run_id);
        const gb = grantOf(h, b.body.run_id);
        assert(tokenOf(ga) !== tokenOf(gb));
        const own = await mcp(ga.url, tokenOf(ga));
        assertEquals(own.status, 200);
        assertEquals(own.body.result.tools.length, 4);
        // The body bound: exactly ACP_GATEWAY_BODY_MAX_BYTES is read; one byte more is 413.
        const ping = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" });
        for (const [extra, status] of [[0, 200], [1, 413]] as const) {
          const body = ping + " ".repeat(ACP_GATEWAY_BODY_MAX_BYTES - ping.length + extra);
          const res = await fetch(ga.url, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${tokenOf(ga)}` },
            body,
          });
          assertEquals(res.status, status);
          await res.body?.cancel();
        }
        const cross = await mcp(gb.url, tokenOf(ga));
        assertEquals(cross.status, 401);
        assertEquals((await mcp(gb.url, null)).status, 401, "no token");
        assertEquals((await mcp(gb.url, "x".repeat(43))).status, 401, "a guessed token");
        const browser = await mcp(gb.url, tokenOf(gb), { origin: "http://127.0.0.1" });
        assertEquals(browser.status, 403, "a browser is refused even with the right token");
        for (const id of [a.body.run_id, b.body.run_id]) {
          const c = await h.api("POST", `/api/agents/${h.agent}/runs/${id}/cancel`);
          assertEquals(c.status, 202);
          const end = await readSse(h, id);
          assertEquals(end.at(-1)!.event, "run.cancelled");
        }
        assertEquals((await mcp(ga.url, tokenOf(ga))).status, 401, "revoked at the terminal");
        const rows = await runnerAccess(h, b.body.run_id);
        assertEquals(rows.map((x) => [x.method, x.decision, x.code]), [
          ["mcp/auth", "refused", "runner_token_refused"],
          ["mcp/auth", "refused", "runner_token_refused"],
          ["mcp/auth", "refused", "runner_token_refused"],
        ]);
      },
    );
  } finally {
    await h.close();
  }
});
