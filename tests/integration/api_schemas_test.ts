/**
 * Every API response of a real server matches the shared schema of its route
 * (runtime/protocol/api.ts — the module the UI bundle parses with), checked
 * here on the client side, independently of the server's own `reply()` check.
 * One walk visits every JSON route of the product's route table (the system
 * Agent aliases share their targets' schemas); every error answer on the way
 * must be the fixed error envelope. A route the walk does not visit fails the
 * test, so a new route arrives with its schema and its place in this walk.
 */
import { sha256Hex, skillArchive } from "../helpers/skill_archive.ts";
import { SkillResponse } from "../../runtime/protocol/api.ts";
import type { z } from "zod";
import { createApp } from "../../runtime/app.ts";
import { resolveHome } from "../../runtime/home.ts";
import { createRouter, type ProductRoute } from "../../runtime/http/router.ts";
import {
  AttachmentResponse,
  ErrorResponse,
  StreamFrameSchema,
} from "../../runtime/protocol/api.ts";
import { parseEnvelope } from "../../runtime/protocol/events.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { login } from "../helpers/login.ts";
import { memoryLogger } from "../helpers/model.ts";
import { newConversation, readSse, startRunHarness, waitTurn } from "../helpers/runs.ts";

/** The product's route table, read from a real App on a scratch home. */
async function productRoutes(): Promise<ProductRoute[]> {
  const dir = makeTempHome();
  const app = createApp({
    home: resolveHome(dir),
    log: memoryLogger(),
    ollamaUrl: "http://127.0.0.1:9",
  });
  try {
    return app.routes;
  } finally {
    await app.close();
    Deno.removeSync(dir, { recursive: true });
  }
}

function check(schema: z.ZodType, value: unknown, what: string): void {
  const r = schema.safeParse(value);
  assert(r.success, `${what}: ${r.success ? "" : JSON.stringify(r.error.issues)}`);
}

const isAlias = (r: ProductRoute) =>
  r.path.startsWith("/api/sessions") || r.path.startsWith("/api/runs/");

Deno.test("every API response of a real server matches its route's shared schema", async () => {
  const routes = await productRoutes();
  const match = createRouter(routes);
  const visited = new Set<string>();
  const h = await startRunHarness();
  const A = `/api/agents/${h.agent}`;

  /** One request; the body is checked against the schema the route declares. */
  async function call(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    path: string,
    body?: unknown,
    // deno-lint-ignore no-explicit-any
  ): Promise<{ status: number; body: any }> {
    const m = match(method, new URL(path, h.server.url).pathname);
    assert(m.kind === "found", `${method} ${path} is not a route`);
    const route = m.match.route as ProductRoute;
    visited.add(`${route.method} ${route.path}`);
    const r = path === "/health" || path === "/api/login"
      ? await raw(method, path, body)
      : await h.api(method, path, body);
    if (r.status >= 400) check(ErrorResponse, r.body, `${method} ${path} ${r.status}`);
    else {
      assert(route.response, `${method} ${route.path} declares no response schema`);
      check(route.response, r.body, `${method} ${path} ${r.status}`);
    }
    return r;
  }

  async function raw(method: string, path: string, body?: unknown) {
    const res = await fetch(`${h.server.url}${path}`, {
      method,
      headers: { "content-type": "application/json", origin: h.server.origin },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  try {
    // health, login and session
    assertEquals((await call("GET", "/health")).status, 200);
    assertEquals((await call("POST", "/api/login", { token: "wrong" })).status, 401);
    assertEquals((await call("GET", "/api/session")).status, 200);
    assertEquals((await call("GET", "/api/models")).status, 200);

    // Agents
    assertEquals((await call("GET", "/api/agents")).status, 200);
    const created = await call("POST", "/api/agents", { name: "walker" });
    assertEquals(created.status, 201);
    const other = `/api/agents/${created.body.agent.id}`;
    assertEquals((await call("GET", other)).status, 200);
    assertEquals((await call("PATCH", other, { name: "walker 2" })).status, 200);
    assertEquals((await call("POST", `${other}/upgrade`)).status, 200);
    assertEquals((await call("GET", `${other}/sessions/not-an-id`)).status, 404);
    assertEquals((await call("DELETE", other)).status, 200);

    // extensions (no MCP server here: the success shapes of add/refresh are the LC-5 tests')
    assertEquals((await call("GET", "/api/extensions")).status, 200);
    assert((await call("POST", "/api/extensions", { name: "x", url: "ftp://x" })).status >= 400);
    assertEquals((await call("POST", "/api/extensions/nope/refresh")).status, 404);
    assertEquals((await call("DELETE", "/api/extensions/nope")).status, 404);
    assertEquals((await call("GET", `${A}/extensions`)).status, 200);
    assertEquals((await call("PUT", `${A}/extensions`, { enabled: [] })).status, 200);
    // external ACP runners [LC-6] (none registered here)
    assertEquals((await call("GET", "/api/runners")).status, 200);

    // skills [LC-3]: a refused install (the error envelope), then a real one checked by hand
    assertEquals((await call("POST", `${A}/skills`, {})).status, 422);
    const archive = skillArchive({ name: "walker" }, "console.log(1);\n");
    const installed = await fetch(`${h.server.url}${A}/skills`, {
      method: "POST",
      headers: h.session.headers({ "x-skill-sha256": await sha256Hex(archive) }),
      body: archive as BodyInit,
    });
    assertEquals(installed.status, 201);
    check(SkillResponse, await installed.json(), "POST skills 201");
    assertEquals((await call("GET", `${A}/skills`)).status, 200);
    assertEquals((await call("GET", `${A}/skills/walker`)).status, 200);
    assertEquals((await call("DELETE", `${A}/skills/walker`)).status, 200);

    // per-Agent policy [TL-9]
    assertEquals((await call("GET", `${A}/policy`)).status, 200);
    const rules = [{ tool: "file/write", decision: "allow", path_prefix: "docs" }];
    assertEquals((await call("PUT", `${A}/policy`, { rules })).body.rules, rules);
    assertEquals((await call("PUT", `${A}/policy`, { rules: [...rules, ...rules] })).status, 422);
    assertEquals((await call("PUT", `${A}/policy`, { rules: [] })).status, 200);

    // the operator's workspace view and instruction file
    assertEquals((await call("GET", `${A}/workspace/list?path=.`)).status, 200);
    const instr = await call("GET", `${A}/instructions`);
    assertEquals(instr.status, 200);
    assertEquals((await call("GET", `${A}/workspace/file?path=agent-builder.md`)).status, 200);
    assertEquals((await call("GET", `${A}/workspace/file?path=a&bogus=1`)).status, 422);
    const dry = { text: "# Notes\n", base_digest: instr.body.digest, dry_run: true };
    assertEquals((await call("POST", `${A}/instructions`, dry)).status, 200);

    // Conversations and commands
    assertEquals((await call("POST", `${A}/sessions`, {})).status, 201);
    const conv = await newConversation(h);
    const C = `${A}/sessions/${conv}`;
    assertEquals((await call("GET", `${A}/sessions`)).status, 200);
    assertEquals((await call("GET", "/api/sessions")).status, 200);
    assertEquals((await call("PATCH", C, { title: "renamed" })).status, 200);
    assertEquals((await call("GET", `${A}/search?q=renamed`)).status, 200);
    assertEquals((await call("GET", `${A}/search?q=`)).status, 422);
    const imported = await call("POST", `${A}/sessions/import`, {
      format: "agent-builder.conversation/1",
      exported_at: new Date().toISOString(),
      conversation: { id: "x", title: "Imported", created_at: new Date().toISOString() },
      turns: [],
    });
    assertEquals(imported.status, 201);
    assertEquals(
      (await call("DELETE", `${A}/sessions/${imported.body.session.id}`)).status,
      200,
    );
    assertEquals((await call("GET", `${A}/commands`)).status, 200);
    assertEquals((await call("POST", `${C}/commands`, { input: "/status" })).status, 200);
    assertEquals((await call("POST", `${C}/commands`, { input: "/context" })).status, 200);
    assertEquals((await call("POST", `${C}/commands`, { input: "/help" })).status, 404);
    assertEquals(
      (await call("POST", `${C}/commands`, { input: "/model nope" })).status >= 200,
      true,
    );
    assertEquals((await call("GET", `${C}/context-preview`)).status, 200);
    assertEquals((await call("GET", `${C}/context-preview?model_id=unknown-model`)).status, 200);
    assertEquals((await call("GET", `${C}/context-preview?bogus=1`)).status, 422);
    assertEquals((await call("GET", `${C}/preparation`)).status, 200);
    // an attachment [LC-4]: a raw body named by X-Filename (no name: the error envelope)
    assertEquals((await call("POST", `${C}/attachments`, { not: "named" })).status, 422);
    const att = await fetch(`${h.server.url}${C}/attachments`, {
      method: "POST",
      headers: { ...h.session.headers(), "x-filename": "walk%20notes.txt" },
      body: "attached\n",
    });
    assertEquals(att.status, 201);
    check(AttachmentResponse, await att.json(), "POST attachments 201");
    const nop = { operation_id: crypto.randomUUID() };
    assertEquals((await call("POST", `${C}/preparation/cancel`, nop)).status, 404);
    // /compact [CX-9] (its success shapes: tests/integration/compact_test.ts)
    assert((await call("POST", `${C}/compactions`, {})).status >= 400);
    for (const verb of ["keep", "drop", "undo"]) {
      const r = await call("POST", `${C}/compactions/${crypto.randomUUID()}/${verb}`, {});
      assertEquals(r.status, 404);
    }

    // a Run that asks for approval
    Deno.writeTextFileSync(
      `${h.server.home}/data/agents/${h.agent}/workspace/walk.txt`,
      "old\n",
      { mode: 0o600 },
    );
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "file__read_text", arguments: { path: "walk.txt" } }]),
      scenarios.toolCall([{
        name: "file__write",
        arguments: { path: "walk.txt", content: "new\n" },
      }]),
      scenarios.text("Done."),
    );
    const submitted = await call("POST", `${C}/runs`, { message: "rewrite walk.txt" });
    assertEquals(submitted.status, 202);
    const run = submitted.body.run_id;
    const R = `${A}/runs/${run}`;
    const frames = await readSse(h, run, { until: (f) => f.event === "permission.requested" });
    visited.add("GET /api/agents/:agent/runs/:run/events");
    for (const f of frames) {
      check(StreamFrameSchema, f.data, `event ${f.event}`);
      assert(parseEnvelope(f.data) !== null, `payload of ${f.event}`);
    }
    assertEquals((await call("GET", `${C}/preparation`)).body.state, "running");
    assertEquals((await call("GET", `${R}/context`)).body.source, "memory");
    const pending = await call("GET", `${A}/permissions`);
    assertEquals(pending.body.pending.length, 1);
    const full = await call("GET", `${A}/permissions/${pending.body.pending[0].id}/diff`);
    assertEquals(full.status, 200);
    const decided = await call("POST", `${A}/permissions/${pending.body.pending[0].id}`, {
      decision: "approve",
    });
    assertEquals(decided.status, 200);
    const turn = await waitTurn(h, conv, run);
    assertEquals(turn.state, "completed");
    assertEquals((await call("GET", C)).status, 200);
    assertEquals((await call("GET", `${C}?limit=1`)).body.turns.length, 1);
    assertEquals((await call("GET", `${C}?limit=0`)).status, 422);
    assertEquals((await call("GET", `${R}/context`)).status, 200);
    const replay = await call("GET", `${R}/replay`);
    assert(replay.body.events.length > 0);
    for (const e of replay.body.events) assert(parseEnvelope(e) !== null, `replayed ${e.kind}`);
    assertEquals((await call("GET", `${R}/replay?cursor=1`)).status, 200);
    assertEquals((await call("GET", `${R}/capability-audit`)).status, 200);
    // A Run without a command has no change set (the shapes are proven by the exec tests).
    assertEquals((await call("GET", `${R}/changes`)).status, 404);
    assertEquals((await call("GET", `${R}/changes/diff?path=a.txt`)).status, 404);
    assertEquals((await call("GET", `${R}/changes?bogus=1`)).status, 422);
    assertEquals((await call("POST", `${R}/cancel`)).status, 409);
    // Background Tasks [EX-6] (a Task's own shape is proven by tests/integration/tasks_test.ts).
    assertEquals((await call("GET", `${A}/tasks`)).status, 200);
    const noTask = `${A}/tasks/99999999-9999-4999-8999-999999999999`;
    assertEquals((await call("GET", noTask)).status, 404);
    assertEquals((await call("POST", `${noTask}/cancel`)).status, 404);
    assertEquals((await call("GET", `/api/runs/${run}/replay`)).status, 200);
    // [LC-2] The delegations of an Agent (the subagent tests prove rows with a mailbox).
    assertEquals((await call("GET", `${A}/delegations`)).status, 200);

    // continue, branch, delete and logout
    assertEquals((await call("POST", `${C}/continue`, { mode: "continue" })).status, 200);
    const branched = await call("POST", `${C}/continue`, { mode: "branch" });
    assertEquals(branched.status, 201);
    // rewind plan, confirmed rewind (a branch before the Turn) and the alternatives [TL-11, UI-8]
    assertEquals((await call("POST", `${C}/rewind`, { turn_id: turn.id })).status, 200);
    const rewound = await call("POST", `${C}/rewind`, { turn_id: turn.id, confirm: true });
    assertEquals(rewound.status, 201);
    assertEquals((await call("GET", `${C}/branches`)).status, 200);
    assertEquals((await call("DELETE", `${A}/sessions/${rewound.body.session.id}`)).status, 200);
    assertEquals((await call("DELETE", `${A}/sessions/${branched.body.session.id}`)).status, 200);
    // models: refresh, a pull followed to its end, cancel of a finished pull, delete
    assertEquals((await call("POST", "/api/models/refresh")).status, 200);
    assertEquals((await call("GET", "/api/models/endpoint")).status, 200);
    const pull = await call("POST", "/api/models/pull", { name: "phi4-mini:3.8b" });
    assertEquals(pull.status, 202);
    const P = `/api/models/pulls/${pull.body.pull_id}`;
    while ((await call("GET", P)).body.pull.state === "running") {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert((await call("POST", `${P}/cancel`)).status < 500);
    assertEquals((await call("DELETE", "/api/models/none:1b")).status, 422);
    const models = (await call("GET", "/api/models")).body.models;
    assertEquals(
      (await call("DELETE", `/api/models/${encodeURIComponent(models[0].id)}`)).status,
      200,
    );

    const fresh = await login(h.server);
    const out = await fetch(`${h.server.url}/api/logout`, {
      method: "POST",
      headers: fresh.headers(),
    });
    visited.add("POST /api/logout");
    check((routes.find((r) => r.path === "/api/logout")!).response!, await out.json(), "logout");

    const missing = routes
      .filter((r) => r.response !== null && !isAlias(r))
      .map((r) => `${r.method} ${r.path}`)
      .filter((k) => !visited.has(k));
    assertEquals(missing, [], "routes this walk does not visit");
    const events = routes.find((r) => r.path.endsWith("/runs/:run/events") && !isAlias(r));
    assert(events && visited.has(`GET ${events.path}`));
  } finally {
    await h.close();
  }
});
