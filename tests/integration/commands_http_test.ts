/**
 * Slash commands over HTTP against the real server [SC-1, §13]: the help
 * schema, every refusal code at its bound, results that never create a Turn
 * (the Conversation's Turn list is unchanged), effects only for /model,
 * /compact and /clear, and the system-Agent compatibility alias.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login, type LoginSession } from "../helpers/login.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";
import { COMMAND_ARG_MAX_BYTES, COMMAND_INPUT_MAX_BYTES } from "../../runtime/limits.ts";

const SYS = "00000000-0000-4000-8000-000000000001";

async function call(
  server: ServerHandle,
  s: LoginSession,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: headers ?? s.headers(),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

Deno.test("slash commands over HTTP: schema, bounds, codes and no turns", async (t) => {
  const server = await startTestServer();
  try {
    const s = await login(server);
    const conv = (await call(server, s, "POST", `/api/agents/${SYS}/sessions`, {})).body.session.id;
    const cmd = (input: string, path = `/api/agents/${SYS}/sessions/${conv}/commands`) =>
      call(server, s, "POST", path, { input });

    await t.step("GET …/commands lists the seven commands with usage and aliases", async () => {
      const r = await call(server, s, "GET", `/api/agents/${SYS}/commands`);
      assertEquals(r.status, 200);
      assertEquals(
        r.body.commands.map((c: { usage: string }) => c.usage),
        [
          "/status",
          "/context [run_id]",
          "/model [model_id]",
          "/compact",
          "/permissions",
          "/cancel [run_id]",
          "/clear",
        ],
      );
      assertEquals(
        r.body.commands.flatMap((c: { aliases: string[] }) => c.aliases),
        ["ctx", "perms", "stop"],
      );
      const unknown = await call(server, s, "GET", `/api/agents/${crypto.randomUUID()}/commands`);
      assertEquals([unknown.status, unknown.body.error.code], [404, "agent_not_found"]);
    });

    await t.step(
      "every command answers without invoking the model or creating a turn",
      async () => {
        for (
          const input of [
            "/status",
            "/context",
            "/ctx",
            "/model",
            "/compact",
            "/permissions",
            "/perms",
            "/cancel",
            "/stop",
            "/clear",
          ]
        ) {
          const r = await cmd(input);
          assertEquals(r.status, 200, input);
          assertEquals([r.body.model_invoked, r.body.turn_created], [false, false], input);
        }
        const detail = await call(server, s, "GET", `/api/agents/${SYS}/sessions/${conv}`);
        assertEquals(detail.body.turns, []);
        const list = await call(server, s, "GET", `/api/agents/${SYS}/sessions`);
        assertEquals(list.body.sessions.length, 1, "/clear did not create a conversation itself");
      },
    );

    await t.step(
      "effects: /model picks a catalog model, /compact and /clear are UI effects",
      async () => {
        const models = await call(server, s, "GET", "/api/models");
        const id = models.body.models[0].id;
        assertEquals((await cmd(`/model ${id}`)).body.effect, { type: "set_model", model_id: id });
        assertEquals((await cmd("/compact")).body.effect, { type: "compact_summary" });
        assertEquals((await cmd("/clear")).body.effect, { type: "new_conversation" });
        assertEquals((await cmd("/status")).body.effect, null);
        const missing = await cmd("/model not-a-model");
        assertEquals([missing.status, missing.body.error.code], [404, "model_not_found"]);
        const none = await cmd("/cancel");
        assertEquals(none.body.lines, [{ label: "Active run", value: "none" }]);
        const noRun = await cmd(`/cancel ${crypto.randomUUID()}`);
        assertEquals([noRun.status, noRun.body.error.code], [404, "run_not_found"]);
      },
    );

    await t.step("malformed input is refused with fixed codes at each bound", async () => {
      const cases: [string, number, string][] = [
        ["/status\n", 422, "command_invalid"],
        ["/status\u0000", 422, "command_invalid"],
        ["/model\tx", 422, "command_invalid"],
        ["/status ", 422, "command_invalid"],
        ["/model  x", 422, "command_invalid"],
        ["/status a b c d e", 422, "command_invalid"],
        [`/context ${"r".repeat(COMMAND_ARG_MAX_BYTES + 1)}`, 422, "command_invalid"],
        [`/x ${"€".repeat(Math.ceil(COMMAND_INPUT_MAX_BYTES / 3))}`, 422, "command_invalid"],
        ["/nope", 404, "command_unknown"],
        ["/st", 404, "command_unknown"],
        ["status", 422, "command_invalid"],
      ];
      for (const [input, status, code] of cases) {
        const r = await cmd(input);
        assertEquals(
          [r.status, r.body.error?.code],
          [status, code],
          JSON.stringify(input).slice(0, 40),
        );
      }
      const long = await cmd(`/x ${"a".repeat(COMMAND_INPUT_MAX_BYTES)}`);
      assertEquals([long.status, long.body.error.code], [422, "command_invalid"], "over the bound");
      const extra = await call(server, s, "POST", `/api/agents/${SYS}/sessions/${conv}/commands`, {
        input: "/status",
        turn: true,
      });
      assertEquals([extra.status, extra.body.error.code], [422, "schema_violation"]);
    });

    await t.step("unknown conversations are 404 and CSRF is required", async () => {
      const r = await cmd("/status", `/api/agents/${SYS}/sessions/${crypto.randomUUID()}/commands`);
      assertEquals([r.status, r.body.error.code], [404, "conversation_not_found"]);
      const noCsrf = await call(
        server,
        s,
        "POST",
        `/api/agents/${SYS}/sessions/${conv}/commands`,
        { input: "/status" },
        { cookie: s.cookie, origin: s.origin, "content-type": "application/json" },
      );
      assertEquals(noCsrf.status, 403);
    });

    await t.step("the system-Agent alias serves the same command endpoint", async () => {
      const r = await cmd("/status", `/api/sessions/${conv}/commands`);
      assertEquals(r.status, 200);
      assert(r.body.lines.some((l: { label: string }) => l.label === "Conversation"));
    });
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});
