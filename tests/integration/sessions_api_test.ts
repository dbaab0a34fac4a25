/**
 * [CV-1..4, §13] Conversation routes over HTTP against the real server:
 * CRUD, the 100-Conversation cap, Turn pages (32 default, limit ≤ 64),
 * cursor attacks (forged, cross-conversation, cross-agent, after rename,
 * after a new Turn, after restart → invalid_session_cursor), cascading
 * delete refused while a Run is active, and continue/branch.
 */
import { CONVERSATION_TITLE_MAX_CHARS, CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { type Api, apiClient, codeOf } from "../helpers/agents_api.ts";
import { addTurn, bulkTurns, openAgentState } from "../helpers/agent_state.ts";
import { login } from "../helpers/login.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";
import type { DatabaseSync } from "../../runtime/store/sqlite.ts";

async function setup(server: ServerHandle): Promise<{ api: Api; agent: string }> {
  const api = apiClient(server, await login(server));
  const agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
  return { api, agent };
}

async function newConv(api: Api, agent: string, title?: string): Promise<string> {
  const r = await api("POST", `/api/agents/${agent}/sessions`, title ? { title } : {});
  assertEquals(r.status, 201);
  return r.body.session.id;
}

function withState<T>(server: ServerHandle, agent: string, fn: (db: DatabaseSync) => T): T {
  const db = openAgentState(server.home, agent);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

Deno.test("conversation routes over HTTP", async (t) => {
  const server = await startTestServer();
  try {
    const { api, agent } = await setup(server);
    const base = `/api/agents/${agent}/sessions`;

    await t.step("create, list, rename and delete a Conversation", async () => {
      const id = await newConv(api, agent, "first");
      const list = (await api("GET", base)).body.sessions;
      assertEquals(list.map((c: { title: string }) => c.title), ["first"]);
      const renamed = await api("PATCH", `${base}/${id}`, { title: "second" });
      assertEquals([renamed.body.session.title, renamed.body.session.revision], ["second", 1]);
      assertEquals((await api("DELETE", `${base}/${id}`)).body, { id, deleted: true });
      assertEquals(codeOf(await api("GET", `${base}/${id}`)), "conversation_not_found");
      assertEquals(
        codeOf(await api("PATCH", `${base}/${id}`, { title: "x" })),
        "conversation_not_found",
      );
      assertEquals(codeOf(await api("GET", `${base}/not-a-uuid`)), "conversation_not_found");
      const bad = await api("POST", base, { title: "x", extra: true });
      assertEquals([bad.status, codeOf(bad)], [422, "schema_violation"]);
      const long = await api("POST", base, { title: "t".repeat(121) });
      assertEquals(codeOf(long), "schema_violation");
      const badMode = await api("POST", `${base}/${crypto.randomUUID()}/continue`, {
        mode: "fork",
      });
      assertEquals(codeOf(badMode), "schema_violation");
    });

    await t.step("a Conversation of one Agent is not found under another Agent", async () => {
      const other = (await api("POST", "/api/agents", { name: "B" })).body.agent.id;
      const id = await newConv(api, agent, "mine");
      const r = await api("GET", `/api/agents/${other}/sessions/${id}`);
      assertEquals([r.status, codeOf(r)], [404, "conversation_not_found"]);
      assertEquals(
        codeOf(await api("DELETE", `/api/agents/${other}/sessions/${id}`)),
        "conversation_not_found",
      );
      await api("DELETE", `${base}/${id}`);
    });

    await t.step(
      "Turn pages: latest 32 by default, limit ≤ 64, cursor walks back to the start",
      async () => {
        const id = await newConv(api, agent, "paged");
        withState(server, agent, (db) => bulkTurns(db, id, 70));
        const p1 = (await api("GET", `${base}/${id}`)).body;
        assertEquals(p1.turns.length, 32);
        assertEquals([p1.turns[0].seq, p1.turns[31].seq], [39, 70]);
        assertEquals(p1.page.has_more, true);
        const p2 = (await api("GET", `${base}/${id}?before=${p1.page.next_before_cursor}`)).body;
        assertEquals([p2.turns[0].seq, p2.turns.at(-1).seq], [7, 38]);
        const p3 = (await api("GET", `${base}/${id}?before=${p2.page.next_before_cursor}`)).body;
        assertEquals(p3.turns.map((x: { seq: number }) => x.seq), [1, 2, 3, 4, 5, 6]);
        assertEquals([p3.page.has_more, p3.page.next_before_cursor], [false, null]);
        const max = (await api("GET", `${base}/${id}?limit=64`)).body;
        assertEquals(max.turns.length, 64);
        for (
          const q of ["limit=65", "limit=0", "limit=-1", "limit=abc", "limit=1&limit=2", "x=1"]
        ) {
          const r = await api("GET", `${base}/${id}?${q}`);
          assertEquals([r.status, codeOf(r)], [422, "schema_violation"], q);
        }
        await api("DELETE", `${base}/${id}`);
      },
    );

    await t.step(
      "forged, cross-conversation, cross-agent and stale cursors are refused",
      async () => {
        const a = await newConv(api, agent, "a");
        const b = await newConv(api, agent, "b");
        withState(server, agent, (db) => {
          bulkTurns(db, a, 40);
          bulkTurns(db, b, 40);
        });
        const cursorA = (await api("GET", `${base}/${a}`)).body.page.next_before_cursor as string;
        const [payload, mac] = cursorA.split(".");
        const flipped = `${payload}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
        const other = (await api("POST", "/api/agents", { name: "C" })).body.agent.id;
        const attacks: [string, string][] = [
          ["forged", `${base}/${a}?before=forged.cursor`],
          ["altered MAC", `${base}/${a}?before=${flipped}`],
          ["oversized", `${base}/${a}?before=${"A".repeat(1000)}`],
          ["cross-conversation", `${base}/${b}?before=${cursorA}`],
          ["cross-agent", `/api/agents/${other}/sessions/${a}?before=${cursorA}`],
        ];
        for (const [name, path] of attacks) {
          const r = await api("GET", path);
          if (name === "cross-agent") {
            // The Conversation does not exist under the other Agent: 404 before any cursor check.
            assertEquals(codeOf(r), "conversation_not_found", name);
            continue;
          }
          assertEquals([r.status, codeOf(r)], [400, "invalid_session_cursor"], name);
        }
        assertEquals((await api("GET", `${base}/${a}?before=${cursorA}`)).status, 200);
        await api("PATCH", `${base}/${a}`, { title: "renamed" });
        const afterRename = await api("GET", `${base}/${a}?before=${cursorA}`);
        assertEquals([afterRename.status, codeOf(afterRename)], [400, "invalid_session_cursor"]);
        const cursorB = (await api("GET", `${base}/${b}`)).body.page.next_before_cursor;
        withState(server, agent, (db) => addTurn(db, b));
        assertEquals(
          codeOf(await api("GET", `${base}/${b}?before=${cursorB}`)),
          "invalid_session_cursor",
        );
        await api("DELETE", `${base}/${a}`);
        await api("DELETE", `${base}/${b}`);
      },
    );

    await t.step("delete is refused while a Run is active and then cascades", async () => {
      const id = await newConv(api, agent, "busy");
      const running = withState(server, agent, (db) => {
        addTurn(db, id);
        return addTurn(db, id, "running");
      });
      for (
        const [method, path, body] of [
          ["DELETE", `${base}/${id}`, undefined],
          ["POST", `${base}/${id}/continue`, { mode: "branch" }],
          ["POST", `${base}/${id}/continue`, { mode: "continue" }],
        ] as const
      ) {
        const r = await api(method, path, body);
        assertEquals([r.status, codeOf(r)], [409, "conversation_busy"], `${method} ${path}`);
      }
      withState(
        server,
        agent,
        (db) => db.prepare("UPDATE turns SET state = 'cancelled' WHERE id = ?").run(running),
      );
      const branch = await api("POST", `${base}/${id}/continue`, { mode: "branch" });
      assertEquals([branch.status, branch.body.copied_turns], [201, 1]);
      const child = branch.body.session.id;
      withState(server, agent, (db) => addTurn(db, child, "running"));
      assertEquals(codeOf(await api("DELETE", `${base}/${id}`)), "conversation_busy");
      withState(
        server,
        agent,
        (db) => db.prepare("UPDATE turns SET state = 'failed' WHERE state = 'running'").run(),
      );
      assertEquals((await api("DELETE", `${base}/${id}`)).status, 200);
      assertEquals(codeOf(await api("GET", `${base}/${child}`)), "conversation_not_found");
      const left = withState(
        server,
        agent,
        (db) => (db.prepare("SELECT count(*) AS n FROM turns").get() as { n: number }).n,
      );
      assertEquals(left, 0);
    });

    await t.step("continue and branch start from the completed head", async () => {
      const id = await newConv(api, agent, "history");
      assertEquals(
        codeOf(await api("POST", `${base}/${id}/continue`, { mode: "continue" })),
        "conversation_no_head",
      );
      const head = withState(server, agent, (db) => {
        const h = addTurn(db, id, "completed", "one");
        addTurn(db, id, "failed", "two");
        return h;
      });
      const cont = await api("POST", `${base}/${id}/continue`, { mode: "continue" });
      assertEquals([cont.status, cont.body.head_turn_id], [200, head]);
      const br = await api("POST", `${base}/${id}/continue`, { mode: "branch" });
      assertEquals(br.body.session.parent_id, id);
      assertEquals(br.body.session.title, "history (branch)");
      const turns = (await api("GET", `${base}/${br.body.session.id}`)).body.turns;
      assertEquals(turns.map((x: { user_message: string }) => x.user_message), ["one"]);
      const src = (await api("GET", `${base}/${id}`)).body.turns;
      assertEquals(src.map((x: { state: string }) => x.state), ["completed", "failed"]);
      assertEquals(src[1].assistant_message, null, "failed Turns carry no assistant text");
      assertEquals(src[1].terminal, {
        code: "model_busy",
        stage: "model",
        retryable: true,
        duration_ms: src[1].terminal.duration_ms,
      });
      await api("DELETE", `${base}/${id}`);
    });

    await t.step(
      "a title of 120 characters is accepted, 121 refused, and a branch title stays within 120",
      async () => {
        // Characters are code points: an emoji (two UTF-16 units) counts once.
        const title = "\u{1F600}".repeat(CONVERSATION_TITLE_MAX_CHARS);
        const over = await api("POST", base, { title: title + "x" });
        assertEquals([over.status, codeOf(over)], [422, "schema_violation"]);
        const id = await newConv(api, agent, title);
        assertEquals((await api("GET", `${base}/${id}`)).body.session.title, title);
        withState(server, agent, (db) => addTurn(db, id));
        const br = await api("POST", `${base}/${id}/continue`, { mode: "branch" });
        const branchTitle = br.body.session.title as string;
        assertEquals(Array.from(branchTitle).length, CONVERSATION_TITLE_MAX_CHARS);
        assert(branchTitle.endsWith("\u{1F600} (branch)"), "no emoji is cut in half");
        const renamed = await api("PATCH", `${base}/${br.body.session.id}`, { title: branchTitle });
        assertEquals(renamed.status, 200, "a branch title is a valid title");
        await api("DELETE", `${base}/${id}`);
      },
    );

    await t.step("the 101st Conversation is refused with conversation_limit", async () => {
      const existing = (await api("GET", base)).body.sessions.length;
      for (let i = existing; i < CONVERSATIONS_PER_AGENT_MAX; i++) await newConv(api, agent);
      const r = await api("POST", base, {});
      assertEquals([r.status, codeOf(r)], [409, "conversation_limit"]);
      assertEquals((await api("GET", base)).body.sessions.length, CONVERSATIONS_PER_AGENT_MAX);
      const any = (await api("GET", base)).body.sessions[0].id;
      withState(server, agent, (db) => addTurn(db, any));
      const br = await api("POST", `${base}/${any}/continue`, { mode: "branch" });
      assertEquals(codeOf(br), "conversation_limit");
    });
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});

Deno.test("a cursor minted before a restart is refused after it", async () => {
  const first = await startTestServer();
  let home = first.home;
  let cursor: string;
  let path: string;
  try {
    const { api, agent } = await setup(first);
    const id = await newConv(api, agent);
    withState(first, agent, (db) => bulkTurns(db, id, 40));
    path = `/api/agents/${agent}/sessions/${id}`;
    cursor = (await api("GET", path)).body.page.next_before_cursor;
    assertEquals((await api("GET", `${path}?before=${cursor}`)).status, 200);
  } finally {
    home = first.home;
    await first.stop();
  }
  const second = await startTestServer({ home });
  try {
    const api = apiClient(second, await login(second));
    const r = await api("GET", `${path}?before=${cursor}`);
    assertEquals([r.status, codeOf(r)], [400, "invalid_session_cursor"]);
    const fresh = (await api("GET", path)).body.page.next_before_cursor;
    assert(fresh !== cursor);
    assertEquals((await api("GET", `${path}?before=${fresh}`)).status, 200);
  } finally {
    await second.stop();
    Deno.removeSync(home, { recursive: true });
  }
});
