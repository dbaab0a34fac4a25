/**
 * Attack: hostile request bodies, replay/audit/page cursors and SSE resume
 * ids against the real server [GW-4, CV-3, EV-3, EV-4]. Bodies one byte over
 * 16 KiB (declared or streamed), lying chunked framing, request smuggling
 * (Content-Length + Transfer-Encoding), deep JSON, prototype keys, invalid
 * UTF-8, and messages of exactly 8192/8193 UTF-8 bytes built from multi-byte
 * characters. Cursors beyond 1,000,000, negative, non-numeric, repeated, or
 * minted for another Conversation. SSE without a session, and garbage
 * `Last-Event-ID` values. Each refusal is its fixed code and creates nothing.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { rawRequest, type RawResponse } from "../helpers/raw_http.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import { JSON_BODY_MAX_BYTES, REPLAY_CURSOR_MAX } from "../../runtime/limits.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

function code(r: RawResponse): string | null {
  return JSON.parse(r.body)?.error?.code ?? null;
}

function authed(h: RunHarness, extra: [string, string][] = []): [string, string][] {
  return [
    ["cookie", h.session.cookie],
    ["x-csrf-token", h.session.csrf],
    ["origin", h.server.origin],
    ["content-type", "application/json"],
    ...extra,
  ];
}

async function agentCount(h: RunHarness): Promise<number> {
  return (await h.api("GET", "/api/agents")).body.agents.length;
}

/** A `{"name": …}` body of exactly `n` bytes. */
function nameBody(n: number): string {
  const shell = JSON.stringify({ name: "" });
  return JSON.stringify({ name: "n".repeat(n - shell.length) });
}

Deno.test("hostile bodies, cursors and resume ids are refused with fixed codes", async (t) => {
  const h = await startRunHarness();
  try {
    const agents = await agentCount(h);
    const post = (body: Uint8Array | string, extra: [string, string][] = []) =>
      rawRequest(h.server.port, {
        method: "POST",
        path: "/api/agents",
        headers: authed(h, extra),
        body,
        timeoutMs: 2_000,
      });

    await t.step("a body of 16 KiB + 1 is 413 declared or streamed in chunks", async () => {
      const big = nameBody(JSON_BODY_MAX_BYTES + 1);
      const declared = await post(big, [["content-length", String(big.length)]]);
      assertEquals([declared.status, code(declared)], [413, "body_too_large"]);
      const half = big.length >> 1;
      const chunked = [big.slice(0, half), big.slice(half)]
        .map((c) => `${c.length.toString(16)}\r\n${c}\r\n`).join("") + "0\r\n\r\n";
      const streamed = await post(chunked, [["transfer-encoding", "chunked"]]);
      assertEquals([streamed.status, code(streamed)], [413, "body_too_large"]);
      // Exactly 16 KiB passes the size bound (and then fails the 64-character name rule).
      const exact = nameBody(JSON_BODY_MAX_BYTES);
      const atBound = await post(exact, [["content-length", String(exact.length)]]);
      assertEquals([atBound.status, code(atBound)], [422, "schema_violation"]);
    });

    await t.step("lying framing and smuggling never create anything", async () => {
      const ok = JSON.stringify({ name: "smuggled" });
      // Chunk size larger than the data, then the socket half-waits: refused or timed out.
      const short = await post(`ff\r\n${ok}\r\n0\r\n\r\n`, [["transfer-encoding", "chunked"]])
        .catch(() => null);
      assert(short === null || short.status >= 400, `short chunk: ${short?.status}`);
      // Content-Length shorter than the body: only the declared prefix is read.
      const prefix = await post(ok, [["content-length", "5"]]);
      assertEquals([prefix.status, code(prefix)], [422, "invalid_json"]);
      // Both framings at once (request smuggling) are refused by the parser.
      const both = await post(`${ok.length.toString(16)}\r\n${ok}\r\n0\r\n\r\n`, [
        ["content-length", "4"],
        ["transfer-encoding", "chunked"],
      ]).catch(() => null);
      assert(both === null || both.status >= 400, `CL+TE: ${both?.status}`);
      const bogusCl = await post(ok, [["content-length", "-1"]]).catch(() => null);
      assert(bogusCl === null || bogusCl.status >= 400, `negative CL: ${bogusCl?.status}`);
      assertEquals(await agentCount(h), agents);
    });

    await t.step("deep JSON, prototype keys and invalid UTF-8 are refused", async () => {
      const deep = `${"[".repeat(4096)}${"]".repeat(4096)}`;
      const cases: [string | Uint8Array, number, string][] = [
        [`{"name":"x","x":${deep}}`, 422, "schema_violation"],
        ['{"name":"x","__proto__":{"admin":true}}', 422, "schema_violation"],
        ['{"__proto__":{"name":"x"}}', 422, "schema_violation"],
        ['{"name":"x","constructor":{"prototype":{"a":1}}}', 422, "schema_violation"],
        [
          new Uint8Array([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
          422,
          "invalid_json",
        ],
        ['{"name":"\\u0000"}', 422, "schema_violation"],
        // A lone surrogate would be stored as U+FFFD: refused rather than altered.
        ['{"name":"a\\ud800b"}', 422, "schema_violation"],
        ["", 422, "invalid_json"],
      ];
      for (const [body, status, c] of cases) {
        const len = typeof body === "string" ? new TextEncoder().encode(body).length : body.length;
        const r = await post(body, [["content-length", String(len)]]);
        assertEquals([r.status, code(r)], [status, c], String(body).slice(0, 40));
      }
      const title = await h.api("POST", `/api/agents/${h.agent}/sessions`, { title: "t\ud800" });
      assertEquals([title.status, codeOf(title)], [422, "schema_violation"]);
      assertEquals(await agentCount(h), agents);
    });

    await t.step(
      "messages of exactly 8192 UTF-8 bytes pass; 8193 are 413, whatever the characters",
      async () => {
        const exact = ["€".repeat(2730) + "é", "😀".repeat(2048), "é".repeat(4096)];
        for (const message of exact) {
          assertEquals(new TextEncoder().encode(message).length, 8192);
          const conv = await newConversation(h);
          const ok = await submit(h, conv, message);
          assertEquals(ok.status, 202, codeOf(ok) ?? "");
          await waitTurn(h, conv, ok.body.run_id);
          const over = await submit(h, conv, message + "a");
          assertEquals([over.status, codeOf(over)], [413, "message_too_large"]);
        }
      },
    );

    await t.step("a model id outside the catalog is refused and never reaches Ollama", async () => {
      const c = await newConversation(h);
      const before = h.ollama.requests.length;
      for (const model_id of ["evil:latest", "qwen3.5:2b-extra", "QWEN", "../x", "a".repeat(65)]) {
        const r = await h.api("POST", `/api/agents/${h.agent}/sessions/${c}/runs`, {
          message: "hi",
          model_id,
        });
        // Unknown or malformed alike: 422 model_unknown, nothing written [MB-14].
        assertEquals([r.status, codeOf(r)], [422, "model_unknown"], model_id);
      }
      assertEquals(h.ollama.requests.slice(before), []);
    });

    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.text("first"));
    const run1 = (await submit(h, conv, "one")).body.run_id as string;
    await waitTurn(h, conv, run1);
    h.ollama.enqueue(scenarios.text("second"));
    const run2 = (await submit(h, conv, "two")).body.run_id as string;
    await waitTurn(h, conv, run2);

    await t.step("replay and audit cursors outside the bounds or malformed are 422", async () => {
      const base = `/api/agents/${h.agent}/runs/${run1}`;
      const bad = [
        `cursor=${REPLAY_CURSOR_MAX + 1}`,
        "cursor=-1",
        "cursor=abc",
        "cursor=1e3",
        "cursor=0x10",
        "cursor=%201",
        "cursor=",
        "cursor=1&cursor=2",
        "cursor=99999999999999999999",
        "cursor=1&other=1",
      ];
      for (const q of bad) {
        const r = await h.api("GET", `${base}/replay?${q}`);
        assertEquals([r.status, codeOf(r)], [422, "schema_violation"], q);
      }
      const edge = await h.api("GET", `${base}/replay?cursor=${REPLAY_CURSOR_MAX}`);
      assertEquals([edge.status, edge.body.events.length, edge.body.next_cursor], [200, 0, null]);
      for (const q of ["offset=-1", "offset=x", "offset=1&offset=2", "offset=999999"]) {
        const r = await h.api("GET", `${base}/capability-audit?${q}`);
        assertEquals([r.status, codeOf(r)], [422, "schema_violation"], q);
      }
    });

    await t.step("a page cursor works only on the Conversation it was minted for", async () => {
      const page = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}?limit=1`);
      const cursor = page.body.page.next_before_cursor as string;
      assert(typeof cursor === "string" && cursor.length > 0, JSON.stringify(page.body.page));
      const ok = await h.api(
        "GET",
        `/api/agents/${h.agent}/sessions/${conv}?limit=1&before=${cursor}`,
      );
      assertEquals(ok.status, 200);
      const other = await newConversation(h);
      const cross = await h.api("GET", `/api/agents/${h.agent}/sessions/${other}?before=${cursor}`);
      assertEquals([cross.status, codeOf(cross)], [400, "invalid_session_cursor"]);
      const b = (await h.api("POST", "/api/agents", { name: "cursor b" })).body.agent.id;
      const bConv = (await h.api("POST", `/api/agents/${b}/sessions`, {})).body.session.id;
      const crossAgent = await h.api("GET", `/api/agents/${b}/sessions/${bConv}?before=${cursor}`);
      assertEquals([crossAgent.status, codeOf(crossAgent)], [400, "invalid_session_cursor"]);
      const [p, mac] = cursor.split(".");
      const flipped = `${p}.${mac[0] === "A" ? "B" : "A"}${mac.slice(1)}`;
      const forged = await h.api(
        "GET",
        `/api/agents/${h.agent}/sessions/${conv}?before=${flipped}`,
      );
      assertEquals([forged.status, codeOf(forged)], [400, "invalid_session_cursor"]);
      for (const q of ["limit=0", "limit=65", "limit=-1", "limit=1e1", "limit=1&limit=2", "x=1"]) {
        const r = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}?${q}`);
        assertEquals([r.status, codeOf(r)], [422, "schema_violation"], q);
      }
    });

    await t.step(
      "the event stream needs a session; garbage Last-Event-ID values still serve a whole stream",
      async () => {
        const path = `/api/agents/${h.agent}/runs/${run1}/events`;
        for (const cookie of [null, `${h.session.cookie.split("=")[0]}=${"A".repeat(43)}`]) {
          const r = await rawRequest(h.server.port, {
            method: "GET",
            path,
            headers: cookie ? [["cookie", cookie]] : [],
          });
          assertEquals([r.status, code(r)], [401, "unauthorized"]);
        }
        for (
          const id of [
            "abc",
            "-1",
            "99999999999999999999",
            "d99999",
            "d-1",
            "9".repeat(4000),
            "d0x1",
          ]
        ) {
          const frames = await readSse(h, run1, { lastEventId: id });
          // Unparsable ids resume from the start: the whole stream, through its terminal.
          const last = frames.at(-1)!;
          const end = last.event === "stream.snapshot"
            ? last.data.payload.terminal.kind
            : last.event;
          assertEquals(end, "run.completed", id.slice(0, 20));
          assertEquals(frames.filter((f) => f.event === "run.started").length, 1, id.slice(0, 20));
        }
        // Well-formed ids past the end close at once: nothing is invented or repeated.
        const beyond = await readSse(h, run1, { lastEventId: "9999999", timeoutMs: 3000 });
        assertEquals(beyond, []);
        const durable = await readSse(h, run1, { lastEventId: "d9999", timeoutMs: 3000 });
        assertEquals(durable.map((f) => f.event), ["stream.gap", "stream.snapshot"]);
      },
    );
  } finally {
    await h.close();
  }
});
