/**
 * [AG-1..3, §13] Agent routes over HTTP against the real server: every
 * lifecycle transition, the protected system Agent and its compatibility
 * aliases, strict bodies, and the gateway protections on these routes.
 */
import { SYSTEM_AGENT_ID } from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { apiClient, codeOf } from "../helpers/agents_api.ts";
import { login } from "../helpers/login.ts";
import { startTestServer } from "../helpers/server.ts";
import { exists } from "../helpers/home.ts";

Deno.test("agent routes over HTTP", async (t) => {
  const server = await startTestServer();
  try {
    const session = await login(server);
    const api = apiClient(server, session);

    await t.step(
      "reads need a session and changes need CSRF; refused changes do nothing",
      async () => {
        const anon = await fetch(`${server.url}/api/agents`);
        assertEquals([anon.status, (await anon.json()).error.code], [401, "unauthorized"]);
        const noCsrf = await fetch(`${server.url}/api/agents`, {
          method: "POST",
          headers: { ...session.headers(), "x-csrf-token": "" },
          body: JSON.stringify({ name: "sneaky" }),
        });
        assertEquals(noCsrf.status, 403);
        await noCsrf.body?.cancel();
        const crossOrigin = await fetch(`${server.url}/api/agents/${SYSTEM_AGENT_ID}/sessions`, {
          method: "POST",
          headers: session.headers({ origin: "http://evil.example" }),
          body: "{}",
        });
        assertEquals(crossOrigin.status, 403);
        await crossOrigin.body?.cancel();
        const list = await api("GET", "/api/agents");
        assertEquals(list.body.agents.map((a: { name: string }) => a.name), ["System Agent"]);
        assertEquals(
          (await api("GET", `/api/agents/${SYSTEM_AGENT_ID}/sessions`)).body.sessions,
          [],
        );
      },
    );

    await t.step("create → get → rename → upgrade → delete walks every transition", async () => {
      const created = await api("POST", "/api/agents", { name: "  Research  " });
      assertEquals(created.status, 201);
      const a = created.body.agent;
      assertEquals([a.name, a.state, a.generation, a.is_system], ["Research", "active", 1, false]);
      assert(exists(`${server.home}/data/agents/${a.id}/workspace/agent-builder.md`));
      assert(exists(`${server.home}/data/agents/${a.id}/state.sqlite`));
      assert(exists(`${server.home}/.runtime/agents/${a.id}`));

      assertEquals((await api("GET", `/api/agents/${a.id}`)).body.agent.id, a.id);
      const listed = (await api("GET", "/api/agents")).body.agents;
      assertEquals(listed.map((x: { id: string }) => x.id), [SYSTEM_AGENT_ID, a.id]);

      const renamed = await api("PATCH", `/api/agents/${a.id}`, { name: "Renamed" });
      assertEquals([renamed.status, renamed.body.agent.name, renamed.body.agent.generation], [
        200,
        "Renamed",
        1,
      ]);

      const up = await api("POST", `/api/agents/${a.id}/upgrade`);
      assertEquals([up.status, up.body.agent.state, up.body.agent.generation], [200, "active", 2]);
      const manifest = JSON.parse(
        Deno.readTextFileSync(`${server.home}/data/agents/${a.id}/manifest.json`),
      );
      assertEquals(manifest.generation, 2);

      const del = await api("DELETE", `/api/agents/${a.id}`);
      assertEquals([del.status, del.body], [200, { id: a.id, deleted: true }]);
      assert(!exists(`${server.home}/data/agents/${a.id}`));
      assert(!exists(`${server.home}/.runtime/agents/${a.id}`));
      const gone = await api("GET", `/api/agents/${a.id}`);
      assertEquals([gone.status, codeOf(gone)], [404, "agent_not_found"]);
      assertEquals(codeOf(await api("GET", `/api/agents/${a.id}/sessions`)), "agent_not_found");
      assertEquals(codeOf(await api("DELETE", `/api/agents/${a.id}`)), "agent_not_found");
    });

    await t.step("the system Agent cannot be renamed, upgraded or deleted", async () => {
      for (
        const [method, path, body] of [
          ["PATCH", `/api/agents/${SYSTEM_AGENT_ID}`, { name: "x" }],
          ["POST", `/api/agents/${SYSTEM_AGENT_ID}/upgrade`, undefined],
          ["DELETE", `/api/agents/${SYSTEM_AGENT_ID}`, undefined],
        ] as const
      ) {
        const r = await api(method, path, body);
        assertEquals([r.status, codeOf(r)], [409, "agent_protected"], `${method} ${path}`);
      }
      const sys = (await api("GET", `/api/agents/${SYSTEM_AGENT_ID}`)).body.agent;
      assertEquals([sys.name, sys.generation, sys.state], ["System Agent", 1, "active"]);
    });

    await t.step("compatibility aliases /api/sessions/… act on the system Agent", async () => {
      const c = await api("POST", "/api/sessions", { title: "via alias" });
      assertEquals(c.status, 201);
      const id = c.body.session.id;
      const viaFull = await api("GET", `/api/agents/${SYSTEM_AGENT_ID}/sessions/${id}`);
      assertEquals(viaFull.body.session.title, "via alias");
      assertEquals((await api("PATCH", `/api/sessions/${id}`, { title: "renamed" })).status, 200);
      assertEquals((await api("GET", `/api/sessions/${id}`)).body.session.title, "renamed");
      const cont = await api("POST", `/api/sessions/${id}/continue`, { mode: "continue" });
      assertEquals(codeOf(cont), "conversation_no_head");
      assertEquals((await api("DELETE", `/api/sessions/${id}`)).status, 200);
      assertEquals((await api("GET", "/api/sessions")).body.sessions, []);
    });

    await t.step("bodies are strict and ids are checked", async () => {
      const cases: [string, string, unknown, number, string][] = [
        ["POST", "/api/agents", { name: "" }, 422, "schema_violation"],
        ["POST", "/api/agents", { name: "   " }, 422, "schema_violation"],
        ["POST", "/api/agents", { name: "x".repeat(65) }, 422, "schema_violation"],
        ["POST", "/api/agents", { name: "bad\u0000name" }, 422, "schema_violation"],
        ["POST", "/api/agents", { name: "ok", extra: 1 }, 422, "schema_violation"],
        ["POST", "/api/agents", {}, 422, "schema_violation"],
        ["GET", "/api/agents/not-an-id", undefined, 404, "agent_not_found"],
        ["GET", "/api/agents/..%2F..%2Fetc", undefined, 404, "agent_not_found"],
        ["GET", `/api/agents/${crypto.randomUUID()}`, undefined, 404, "agent_not_found"],
      ];
      for (const [method, path, body, status, code] of cases) {
        const r = await api(method, path, body);
        assertEquals(
          [r.status, codeOf(r)],
          [status, code],
          `${method} ${path} ${JSON.stringify(body)}`,
        );
      }
      assertEquals((await api("POST", "/api/agents", { name: "x".repeat(64) })).status, 201);
    });
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});
