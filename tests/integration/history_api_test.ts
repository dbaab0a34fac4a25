/**
 * [UI-9, §22] Export and import over HTTP against the real server, the
 * scripted Ollama and a real state.sqlite: Markdown and JSON exports (JSON with
 * each Run's durable events), export → import round-trips the visible
 * content into a NEW Conversation (fresh ids, no Runs, nothing from the file in
 * the journal), and tampered, malformed or oversized files are refused with a
 * fixed code (422 / 413 / 415) and create nothing. The 8 MiB bound is hit at
 * the limit and one byte past it.
 */
import {
  CONVERSATION_EXPORT_MAX_BYTES,
  CONVERSATION_EXPORT_TURNS_MAX,
  CONVERSATIONS_PER_AGENT_MAX,
} from "../../runtime/limits.ts";
import { ConversationExportSchema } from "../../runtime/protocol/api.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { apiClient, codeOf } from "../helpers/agents_api.ts";
import { addTurn, bulkTurns, openAgentState } from "../helpers/agent_state.ts";
import { login } from "../helpers/login.ts";
import { startTestServer } from "../helpers/server.ts";

Deno.test("export → import round-trips a Conversation's visible content; bad files create nothing", async () => {
  const ollama = await startFakeOllama({ defaultScript: text("Flamingos nest on mud mounds.") });
  const server = await startTestServer({ args: ["--ollama", ollama.url] });
  try {
    const session = await login(server);
    const api = apiClient(server, session);
    const agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
    const base = `/api/agents/${agent}/sessions`;
    const conv = (await api("POST", base, { title: "Bird survey" })).body.session.id;
    const ask = async (message: string) => {
      const r = await api("POST", `${base}/${conv}/runs`, { message });
      assertEquals(r.status, 202, JSON.stringify(r.body));
      for (let tries = 0; tries < 600; tries++) {
        const d = await api("GET", `${base}/${conv}?limit=1`);
        if (d.body.turns[0]?.state === "completed") return;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error("turn did not complete");
    };
    await ask("where do flamingos nest?");
    await ask("and in winter?");
    const db = openAgentState(server.home, agent);
    try {
      addTurn(db, conv, "failed", "a question that failed");
    } finally {
      db.close();
    }

    const raw = (path: string, init: RequestInit = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        headers: { ...session.headers(), ...init.headers },
      });

    // JSON export: the schema, every Turn, and each Run's durable events.
    const ej = await raw(`${base}/${conv}/export?format=json`);
    assertEquals(ej.status, 200);
    assert(ej.headers.get("content-type")!.startsWith("application/json"));
    assert(ej.headers.get("content-disposition")!.startsWith("attachment;"));
    const exportText = await ej.text();
    const doc = ConversationExportSchema.parse(JSON.parse(exportText));
    assertEquals(doc.conversation.title, "Bird survey");
    assertEquals(doc.turns.map((t) => t.state), ["completed", "completed", "failed"]);
    assertEquals(doc.turns[0].assistant_message, "Flamingos nest on mud mounds.");
    assertEquals(doc.turns[2].assistant_message, null);
    const events = doc.turns[0].run!.events;
    assert(events.length >= 2, "the Run's durable events are exported");
    assertEquals(events.map((e) => e.seq), events.map((_, i) => i + 1));
    assertEquals(doc.turns[2].run, null);

    // Markdown export: the visible transcript.
    const em = await raw(`${base}/${conv}/export?format=md`);
    assertEquals(em.status, 200);
    assert(em.headers.get("content-type")!.startsWith("text/markdown"));
    const md = await em.text();
    for (
      const s of ["# Bird survey", "where do flamingos nest?", "Flamingos nest on mud mounds."]
    ) {
      assert(md.includes(s), s);
    }
    assert(md.includes("_The turn ended failed (model_busy)._"), md);

    const count = async () => (await api("GET", base)).body.sessions.length;
    const before = await count();
    const post = (body: BodyInit, type = "application/json") =>
      raw(`${base}/import`, { method: "POST", body, headers: { "content-type": type } });

    // Import: a new Conversation with the same visible content and fresh identities.
    const imp = await post(exportText);
    assertEquals(imp.status, 201);
    const created = await imp.json();
    assertEquals(created.imported_turns, 3);
    const newId = created.session.id;
    assert(newId !== conv);
    assertEquals(await count(), before + 1);
    const a = (await api("GET", `${base}/${conv}`)).body;
    const b = (await api("GET", `${base}/${newId}`)).body;
    assertEquals(b.session.title, a.session.title);
    const visible = (t: { state: string; user_message: string; assistant_message: string }) => [
      t.state,
      t.user_message,
      t.assistant_message,
    ];
    assertEquals(b.turns.map(visible), a.turns.map(visible));
    for (const t of b.turns) {
      assertEquals(t.run_id, null);
      assert(!a.turns.some((x: { id: string }) => x.id === t.id), "turn ids are minted");
    }
    assertEquals(b.turns[2].terminal.code, "imported");
    // Imported Runs' events are not in the journal: the new Conversation has no Runs.
    const check = openAgentState(server.home, agent);
    try {
      const n = check.prepare("SELECT count(*) AS n FROM runs WHERE conversation_id = ?")
        .get(newId) as { n: number };
      assertEquals(n.n, 0);
    } finally {
      check.close();
    }
    // …and it is searchable at once (the index is written in the import transaction).
    const hits = (await api("GET", `/api/agents/${agent}/search?q=winter`)).body.results;
    assertEquals(
      hits.map((h: { conversation_id: string }) => h.conversation_id).sort(),
      [conv, newId].sort(),
    );

    // An id in the file naming an existing Conversation changes nothing of it.
    const clash = structuredClone(doc);
    clash.conversation.id = conv;
    clash.conversation.title = "Clash";
    const c = await post(JSON.stringify(clash));
    assertEquals(c.status, 201);
    assert((await c.json()).session.id !== conv);
    assertEquals((await api("GET", `${base}/${conv}`)).body.session.title, "Bird survey");
    const afterOk = await count();

    // Tampered or malformed files: 422 import_invalid, nothing created.
    const tamper = (fn: (d: Record<string, any>) => void) => {
      const d = structuredClone(doc) as Record<string, any>;
      fn(d);
      return JSON.stringify(d);
    };
    const bad: [string, BodyInit][] = [
      ["not json", "{"],
      ["invalid utf-8", new Uint8Array([0x7b, 0xff, 0x7d])],
      ["wrong format", tamper((d) => (d.format = "other/1"))],
      ["unknown key", tamper((d) => (d.extra = 1))],
      ["unknown turn key", tamper((d) => (d.turns[0].digest = "sha256:x"))],
      ["bad state", tamper((d) => (d.turns[0].state = "approved"))],
      ["user message over 8192 bytes", tamper((d) => (d.turns[0].user_message = "x".repeat(8193)))],
      ["title with a control char", tamper((d) => (d.conversation.title = "a\u001bb"))],
      ["empty title", tamper((d) => (d.conversation.title = " "))],
      ["too many turns", tamper((d) => (d.turns = Array(1025).fill(d.turns[2])))],
      ["event seq out of range", tamper((d) => (d.turns[0].run.events[0].seq = 0))],
      ["an array", "[]"],
    ];
    for (const [what, body] of bad) {
      const r = await post(body);
      assertEquals([r.status, codeOf({ status: r.status, body: await r.json() })], [
        422,
        "import_invalid",
      ], what);
    }
    const notJson = await post(exportText, "text/plain");
    assertEquals(notJson.status, 415);
    await notJson.body?.cancel();
    assertEquals(await count(), afterOk);

    // The 8 MiB bound: exactly at it is accepted, one byte past is 413 with nothing created.
    const pad = (n: number) =>
      exportText + " ".repeat(n - new TextEncoder().encode(exportText).length);
    const atLimit = await post(pad(CONVERSATION_EXPORT_MAX_BYTES));
    assertEquals(atLimit.status, 201);
    await atLimit.body?.cancel();
    const past = await post(pad(CONVERSATION_EXPORT_MAX_BYTES + 1));
    assertEquals([past.status, (await past.json()).error.code], [413, "body_too_large"]);
    assertEquals(await count(), afterOk + 1);

    // Export refusals.
    const unknown = await raw(`${base}/${crypto.randomUUID()}/export?format=json`);
    assertEquals([unknown.status, (await unknown.json()).error.code], [
      404,
      "conversation_not_found",
    ]);
    const fmt = await raw(`${base}/${conv}/export?format=pdf`);
    assertEquals([fmt.status, (await fmt.json()).error.code], [422, "schema_violation"]);
  } finally {
    await server.stop();
    await ollama.close();
    Deno.removeSync(server.home, { recursive: true });
  }
});

Deno.test("export refuses more than 1024 Turns whole; import at the Conversation cap creates nothing", async () => {
  const server = await startTestServer();
  try {
    const session = await login(server);
    const api = apiClient(server, session);
    const agent = (await api("POST", "/api/agents", { name: "A" })).body.agent.id;
    const base = `/api/agents/${agent}/sessions`;
    const conv = (await api("POST", base, { title: "long" })).body.session.id;
    const db = openAgentState(server.home, agent);
    try {
      bulkTurns(db, conv, CONVERSATION_EXPORT_TURNS_MAX);
    } finally {
      db.close();
    }
    const get = (format: string) =>
      fetch(`${server.url}${base}/${conv}/export?format=${format}`, { headers: session.headers() });
    const atLimit = await get("json");
    assertEquals(atLimit.status, 200);
    const doc = await atLimit.text();
    assertEquals(JSON.parse(doc).turns.length, CONVERSATION_EXPORT_TURNS_MAX);
    const db2 = openAgentState(server.home, agent);
    try {
      bulkTurns(db2, conv, 1);
    } finally {
      db2.close();
    }
    for (const format of ["json", "md"]) {
      const past = await get(format);
      assertEquals([past.status, (await past.json()).error.code], [413, "export_too_large"]);
    }

    // Fill the Agent to its cap of Conversations: the import is refused and adds nothing.
    for (
      let n = (await api("GET", base)).body.sessions.length;
      n < CONVERSATIONS_PER_AGENT_MAX;
      n++
    ) {
      assertEquals((await api("POST", base, {})).status, 201);
    }
    const r = await fetch(`${server.url}${base}/import`, {
      method: "POST",
      headers: session.headers(),
      body: doc,
    });
    assertEquals([r.status, (await r.json()).error.code], [409, "conversation_limit"]);
    assertEquals((await api("GET", base)).body.sessions.length, CONVERSATIONS_PER_AGENT_MAX);
    const db3 = openAgentState(server.home, agent);
    try {
      const n = db3.prepare("SELECT count(*) AS n FROM turns").get() as { n: number };
      assertEquals(n.n, CONVERSATION_EXPORT_TURNS_MAX + 1);
    } finally {
      db3.close();
    }
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});
