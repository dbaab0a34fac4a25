/**
 * Operator configuration of MCP servers through the real server [LC-5, §22]:
 * `serve --mcp NAME=URL` and `--mcp-allow-ip`, `GET/POST /api/extensions`,
 * `DELETE /api/extensions/<name>`, `PUT /api/agents/<agent>/extensions`;
 * discovery against servers built with the official SDK; the ≤ 8 servers
 * bound; persistence across a restart; usage errors exit 2.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { apiClient, codeOf } from "../helpers/agents_api.ts";
import { login } from "../helpers/login.ts";
import { makeCerts, startFriendlyPeer, startHostilePeer } from "../helpers/mcp_peers.ts";
import { DENO, REPO, RUN_FLAGS, startTestServer } from "../helpers/server.ts";
import { makeTempHome } from "../helpers/home.ts";
import { SYSTEM_AGENT_ID } from "../../runtime/limits.ts";

/** Polls GET /api/extensions until `name` left `discovering`. */
async function settled(
  api: ReturnType<typeof apiClient>,
  name: string,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const r = await api("GET", "/api/extensions");
    // deno-lint-ignore no-explicit-any
    const e = r.body.extensions.find((x: any) => x.name === name);
    if (e && e.state !== "discovering") return e;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${name} never settled`);
}

Deno.test("serve --mcp discovers the SDK server's tools; none are enabled by default; PUT enables and persists", async () => {
  const friendly = startFriendlyPeer();
  const hostile = startHostilePeer();
  const home = makeTempHome();
  const args = [
    "--ollama",
    "http://127.0.0.1:9",
    "--mcp-allow-ip",
    "127.0.0.1",
    "--mcp",
    `friendly=${friendly.url}/mcp`,
    "--mcp",
    `hostile=${hostile.url}/mcp/schemas`,
  ];
  let server = await startTestServer({ home, args });
  try {
    let api = apiClient(server, await login(server));
    const f = await settled(api, "friendly");
    assertEquals(f.state, "ready");
    assertEquals(f.source, "cli");
    assertEquals(f.address, "127.0.0.1");
    // deno-lint-ignore no-explicit-any
    assertEquals(f.tools.map((t: any) => [t.id, t.policy]), [
      ["mcp/friendly/echo", "ask"],
      ["mcp/friendly/add", "ask"],
      ["mcp/friendly/picture", "ask"],
    ]);
    const h = await settled(api, "hostile");
    // deno-lint-ignore no-explicit-any
    assertEquals(h.refused.map((r: any) => r.reason), [
      "schema_ref",
      "schema_combinator",
      "schema_unbounded_array",
      "schema_nested",
      "name_invalid",
    ]);
    // deno-lint-ignore no-explicit-any
    const inject = h.tools.find((t: any) => t.name === "inject");
    assert(inject.description.includes("\\u{202E}"), "bidi override escaped");

    const path = `/api/agents/${SYSTEM_AGENT_ID}/extensions`;
    assertEquals((await api("GET", path)).body, { enabled: [] });
    const put = await api("PUT", path, { enabled: ["friendly"] });
    assertEquals([put.status, put.body], [200, { enabled: ["friendly"] }]);
    assertEquals(codeOf(await api("PUT", path, { enabled: ["nosuch"] })), "extension_not_found");
    assertEquals(codeOf(await api("PUT", path, { enabled: ["Bad Name"] })), "schema_violation");
    assertEquals(
      codeOf(
        await api("PUT", `/api/agents/00000000-0000-4000-8000-00000000dead/extensions`, {
          enabled: [],
        }),
      ),
      "agent_not_found",
    );
    // Restart: the enablement persists.
    await server.stop();
    server = await startTestServer({ home, args });
    api = apiClient(server, await login(server));
    assertEquals((await api("GET", path)).body, { enabled: ["friendly"] });
  } finally {
    await server.stop();
    await friendly.close();
    await hostile.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("POST /api/extensions adds, refuses by rule, stops at 8 servers; DELETE removes; API servers persist", async () => {
  const friendly = startFriendlyPeer({ json: true });
  const home = makeTempHome();
  const args = ["--ollama", "http://127.0.0.1:9", "--mcp-allow-ip", "127.0.0.1"];
  let server = await startTestServer({ home, args });
  try {
    let api = apiClient(server, await login(server));
    assertEquals((await api("GET", "/api/extensions")).body, { extensions: [] });
    const url = `${friendly.url}/mcp`;
    const add = await api("POST", "/api/extensions", { name: "s0", url });
    assertEquals(add.status, 201);
    assertEquals(add.body.extension.state, "ready");
    assertEquals(add.body.extension.tools.length, 3);
    const refused = async (body: unknown) => codeOf(await api("POST", "/api/extensions", body));
    assertEquals(await refused({ name: "s0", url }), "extension_exists");
    assertEquals(await refused({ name: "x", url: "http://10.0.0.1/mcp" }), "mcp_scheme_refused");
    assertEquals(
      await refused({ name: "x", url: "https://169.254.169.254/mcp" }),
      "mcp_address_refused",
    );
    assertEquals(await refused({ name: "x", url: "not a url" }), "mcp_url_invalid");
    assertEquals(await refused({ name: "UPPER", url }), "schema_violation");
    assertEquals(await refused({ name: "x", url, extra: 1 }), "schema_violation");
    // A server that is down is added and shows its fixed code.
    const down = await api("POST", "/api/extensions", {
      name: "s1",
      url: "http://127.0.0.1:9/mcp",
    });
    assertEquals([down.status, down.body.extension.state, down.body.extension.code], [
      201,
      "error",
      "mcp_unreachable",
    ]);
    for (let i = 2; i < 8; i++) {
      assertEquals((await api("POST", "/api/extensions", { name: `s${i}`, url })).status, 201);
    }
    assertEquals(await refused({ name: "s8", url }), "extension_limit");
    assertEquals((await api("GET", "/api/extensions")).body.extensions.length, 8);
    const del = await api("DELETE", "/api/extensions/s7");
    assertEquals([del.status, del.body], [200, { name: "s7", deleted: true }]);
    assertEquals(codeOf(await api("DELETE", "/api/extensions/s7")), "extension_not_found");
    await server.stop();
    server = await startTestServer({ home, args });
    api = apiClient(server, await login(server));
    const after = await settled(api, "s0");
    assertEquals([after.source, after.state], ["api", "ready"]);
    assertEquals((await api("GET", "/api/extensions")).body.extensions.length, 7);
  } finally {
    await server.stop();
    await friendly.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("serve refuses a bad --mcp or --mcp-allow-ip with exit 2 before anything opens", async () => {
  const home = makeTempHome();
  try {
    const code = async (extra: string[]) => {
      const o = await new Deno.Command(DENO, {
        args: [...RUN_FLAGS, `${REPO}/main.ts`, "serve", "--home", home, "--port", "0", ...extra],
        stdout: "null",
        stderr: "piped",
      }).output();
      return o.code;
    };
    assertEquals(await code(["--mcp", "x=http://127.0.0.1:1/mcp"]), 2);
    assertEquals(await code(["--mcp", "noequals"]), 2);
    assertEquals(await code(["--mcp-allow-ip", "localhost"]), 2);
    assertEquals(await code(["--mcp-ca", "x=/nonexistent"]), 2);
    assertEquals(
      await code(["--mcp", "x=https://example.com/mcp", "--mcp-ca", "x=/nonexistent"]),
      2,
    );
    const nine = Array.from({ length: 9 }, (_, i) => ["--mcp", `s${i}=https://example.com/${i}`])
      .flat();
    assertEquals(await code(nine), 2);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("serve --mcp-ca NAME=FILE lets that server's TLS chain to the given CA; without it the certificate is refused", async () => {
  const dir = await Deno.makeTempDir();
  const home = makeTempHome();
  const c = await makeCerts(dir, "127.0.0.1");
  await Deno.writeTextFile(`${dir}/ca.pem`, c.ca);
  const peer = startFriendlyPeer({ tls: { cert: c.cert, key: c.key } });
  const url = `https://127.0.0.1:${peer.port}/mcp`;
  const server = await startTestServer({
    home,
    args: [
      "--ollama",
      "http://127.0.0.1:9",
      "--mcp-allow-ip",
      "127.0.0.1",
      "--mcp",
      `withca=${url}`,
      "--mcp",
      `noca=${url}`,
      "--mcp-ca",
      `withca=${dir}/ca.pem`,
    ],
  });
  try {
    const api = apiClient(server, await login(server));
    const w = await settled(api, "withca");
    assertEquals([w.state, w.code, w.tools.length], ["ready", null, 3]);
    const n = await settled(api, "noca");
    assertEquals([n.state, n.code], ["error", "mcp_tls_failed"]);
  } finally {
    await server.stop();
    await peer.close();
    await Deno.remove(home, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});
