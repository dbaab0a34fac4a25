/**
 * [UI-9, §22] Conversation search over HTTP against the real server and a
 * real state.sqlite: titles and Turn text are found (also after a restart),
 * a deleted Conversation's text is not; FTS5 syntax typed by the user is
 * searched as text or refused with `search_query_invalid` (422), never an SQL
 * error; q is bounded at 256 bytes and results at 50.
 */
import { SEARCH_QUERY_MAX_BYTES, SEARCH_RESULTS_MAX } from "../../runtime/limits.ts";
import { SearchResponse } from "../../runtime/protocol/api.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { type Api, apiClient, codeOf } from "../helpers/agents_api.ts";
import { addTurn, bulkTurns, openAgentState } from "../helpers/agent_state.ts";
import { login } from "../helpers/login.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";
import type { DatabaseSync } from "../../runtime/store/sqlite.ts";

function withState<T>(server: ServerHandle, agent: string, fn: (db: DatabaseSync) => T): T {
  const db = openAgentState(server.home, agent);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

async function search(api: Api, agent: string, q: string) {
  const r = await api("GET", `/api/agents/${agent}/search?q=${encodeURIComponent(q)}`);
  if (r.status === 200) SearchResponse.parse(r.body);
  return r;
}

Deno.test("search finds titles and Turn text, survives a restart, forgets deleted Conversations", async () => {
  const first = await startTestServer();
  const home = first.home;
  let agent = "";
  let keep = "", gone = "", keepTurn = "";
  try {
    const api = apiClient(first, await login(first));
    agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
    const base = `/api/agents/${agent}/sessions`;
    keep = (await api("POST", base, { title: "Quarterly pelican report" })).body.session.id;
    gone = (await api("POST", base, { title: "Doomed" })).body.session.id;
    withState(first, agent, (db) => {
      keepTurn = addTurn(db, keep, "completed", "where do the flamingos nest");
      addTurn(db, gone, "completed", "flamingos in the doomed conversation");
      // A failed Turn's user message is visible, its (uncommitted) answer is not indexed.
      addTurn(db, keep, "failed", "unfinished albatross question");
    });

    const byText = (await search(api, agent, "flamingos nest")).body.results;
    assertEquals(byText.length, 1);
    assertEquals([byText[0].conversation_id, byText[0].turn_id], [keep, keepTurn]);
    assertEquals(byText[0].title, "Quarterly pelican report");
    assert(byText[0].snippet.includes("flamingos"));

    // The answer of a completed Turn is indexed; the last term matches as a prefix.
    const answer = (await search(api, agent, "answer to where do the flam")).body.results;
    assertEquals(answer.map((h: { turn_id: string }) => h.turn_id), [keepTurn]);
    assertEquals((await search(api, agent, "albatross")).body.results.length, 1);

    const byTitle = (await search(api, agent, "PELICAN")).body.results;
    assertEquals(byTitle.map((h: { turn_id: string | null }) => h.turn_id), [null]);

    // Rename re-indexes the title in the same transaction.
    await api("PATCH", `${base}/${keep}`, { title: "Heron notes" });
    assertEquals((await search(api, agent, "pelican")).body.results.length, 0);
    assertEquals((await search(api, agent, "heron")).body.results[0].conversation_id, keep);

    assertEquals((await search(api, agent, "flamingos")).body.results.length, 2);
    assertEquals((await api("DELETE", `${base}/${gone}`)).status, 200);
    const after = (await search(api, agent, "flamingos")).body.results;
    assertEquals(after.map((h: { conversation_id: string }) => h.conversation_id), [keep]);
    assertEquals((await search(api, agent, "doomed")).body.results, []);
    withState(first, agent, (db) => {
      const n = db.prepare("SELECT count(*) AS n FROM search_docs WHERE conversation_id = ?")
        .get(gone) as { n: number };
      assertEquals(n.n, 0);
    });

    // Search is per Agent.
    const other = (await api("POST", "/api/agents", { name: "B" })).body.agent.id;
    assertEquals((await search(api, other, "flamingos")).body.results, []);
  } finally {
    await first.stop();
  }
  const second = await startTestServer({ home });
  try {
    const api = apiClient(second, await login(second));
    const r = (await search(api, agent, "flamingos")).body.results;
    assertEquals(r.map((h: { turn_id: string }) => h.turn_id), [keepTurn]);
    assertEquals((await search(api, agent, "doomed")).body.results, []);
  } finally {
    await second.stop();
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("FTS syntax in a query is text or a 422, never an SQL error; q ≤ 256 bytes", async () => {
  const server = await startTestServer();
  try {
    const api = apiClient(server, await login(server));
    const agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
    const conv = (await api("POST", `/api/agents/${agent}/sessions`, { title: "plain" })).body
      .session.id;
    withState(server, agent, (db) => addTurn(db, conv, "completed", 'say "NEAR(x y)" OR -z'));

    const hostile = [
      '"',
      '""',
      '"unbalanced',
      "*",
      "plain*",
      "NEAR(",
      "NEAR(plain say)",
      "-",
      "-plain",
      ":",
      "title:plain",
      "user_message:say",
      "OR",
      "plain OR",
      "AND NOT",
      "(",
      ")",
      "^plain",
      "{title}: plain",
      "'; DROP TABLE turns; --",
      "\\",
    ];
    for (const q of hostile) {
      const r = await search(api, agent, q);
      assert(r.status === 200 || r.status === 422, `${q}: ${r.status}`);
      if (r.status === 422) assertEquals(codeOf(r), "search_query_invalid", q);
      assert(!JSON.stringify(r.body).toLowerCase().includes("sqlite"), q);
    }
    // Operators are searched as text: the quoted words match the message that contains them.
    assertEquals((await search(api, agent, "NEAR(x")).body.results.length, 1);
    assertEquals((await search(api, agent, "OR -z")).body.results.length, 1);
    assertEquals((await search(api, agent, "title:plain")).body.results.length, 0);

    for (const q of ["", "   ", "a\u0000b", "a\u001bb", "x\u202ey", "\u0007"]) {
      const r = await search(api, agent, q);
      assertEquals([r.status, codeOf(r)], [422, "search_query_invalid"], JSON.stringify(q));
    }
    const atLimit = "p".repeat(SEARCH_QUERY_MAX_BYTES);
    assertEquals((await search(api, agent, atLimit)).status, 200);
    const past = await search(api, agent, "p".repeat(SEARCH_QUERY_MAX_BYTES + 1));
    assertEquals([past.status, codeOf(past)], [422, "search_query_invalid"]);
    // Bytes, not characters: 128 two-byte characters fit, 129 do not.
    assertEquals((await search(api, agent, "é".repeat(128))).status, 200);
    assertEquals(codeOf(await search(api, agent, "é".repeat(129))), "search_query_invalid");

    const r = await api("GET", `/api/agents/${agent}/search?q=a&q=b`);
    assertEquals([r.status, codeOf(r)], [422, "schema_violation"]);
    const extra = await api("GET", `/api/agents/${agent}/search?q=a&limit=500`);
    assertEquals([extra.status, codeOf(extra)], [422, "schema_violation"]);
    const none = await api("GET", `/api/agents/${agent}/search`);
    assertEquals([none.status, codeOf(none)], [422, "search_query_invalid"]);
    const unknown = await api("GET", `/api/agents/${crypto.randomUUID()}/search?q=a`);
    assertEquals(unknown.status, 404);
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});

Deno.test("search answers at most 50 hits, best first", async () => {
  const server = await startTestServer();
  try {
    const api = apiClient(server, await login(server));
    const agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
    const conv = (await api("POST", `/api/agents/${agent}/sessions`, { title: "many" })).body
      .session.id;
    // Every bulk-inserted Turn says "message <seq>" (the triggers index each one).
    withState(server, agent, (db) => bulkTurns(db, conv, SEARCH_RESULTS_MAX));
    const exact = await search(api, agent, "message");
    assertEquals(exact.body.results.length, SEARCH_RESULTS_MAX);
    withState(server, agent, (db) => bulkTurns(db, conv, 10));
    const past = await search(api, agent, "message");
    assertEquals(past.body.results.length, SEARCH_RESULTS_MAX);
    const one = (await search(api, agent, "message 57")).body.results;
    assertEquals(one.length, 1);
    assert(one[0].snippet.includes("57"));
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});
