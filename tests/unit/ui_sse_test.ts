/**
 * [EV-3] the browser's Run stream client: the SSE parser, resume with
 * Last-Event-ID, at most 3 reconnects, no reconnect after a terminal event,
 * and the RunView reducer (deltas as text, durable events once per seq).
 * The connection tests use a real HTTP server on loopback.
 */
import { assertEquals } from "../helpers/assert.ts";
import { createSseParser, openEventStream, SSE_RECONNECTS_MAX } from "../../ui/lib/sse.ts";
import {
  applyMessage,
  createRunStore,
  emptyRun,
  LIVE_TEXT_MAX_CHARS,
  RUN_VIEWS_MAX,
} from "../../ui/lib/run_store.ts";

Deno.test("the SSE parser handles ids, events, multi-line data, comments and split chunks", () => {
  const parse = createSseParser();
  assertEquals(parse(': keep-alive\n\nid: 3\nevent: run.started\ndata: {"a"\ndata: :1}\n'), []);
  assertEquals(parse("\n"), [{ id: "3", event: "run.started", data: '{"a"\n:1}' }]);
  assertEquals(parse("data: x\r\n\r\ndata:y\r\rdata: z"), [
    { id: "3", event: "message", data: "x" },
    { id: "3", event: "message", data: "y" },
  ]);
  assertEquals(parse("\n\n"), [{ id: "3", event: "message", data: "z" }]);
});

function env(seq: number, kind: string, payload: Record<string, unknown> = {}) {
  return JSON.stringify({
    seq,
    kind,
    v: 1,
    ts: 1_700_000_000_000 + seq * 10,
    payload,
    run_id: "00000000-0000-4000-8000-000000000003",
    agent_id: "00000000-0000-4000-8000-000000000001",
    conversation_id: "00000000-0000-4000-8000-000000000002",
  });
}

Deno.test("applyMessage accumulates deltas as text and keeps durable events once per seq", () => {
  let v = emptyRun("a", "c", "r");
  v = applyMessage(v, { id: "1", event: "message", data: env(1, "run.started") });
  v = applyMessage(v, {
    id: null,
    event: "message",
    data: env(1, "assistant.block.delta", { block: 1, text: "<b>hi" }),
  });
  v = applyMessage(v, {
    id: null,
    event: "message",
    data: env(1, "assistant.block.delta", { block: 1, text: "</b>" }),
  });
  v = applyMessage(v, { id: "1", event: "message", data: env(1, "run.started") });
  v = applyMessage(v, { id: "2", event: "message", data: "not json" });
  assertEquals(v.liveText, "<b>hi</b>");
  assertEquals(v.events.map((e) => e.seq), [1]);
  assertEquals(v.terminal, null);
  v = applyMessage(v, { id: "3", event: "message", data: env(3, "run.completed") });
  assertEquals(v.terminal?.kind, "run.completed");
  const big = "x".repeat(LIVE_TEXT_MAX_CHARS);
  v = applyMessage(v, {
    id: null,
    event: "message",
    data: env(1, "assistant.block.delta", { block: 1, text: big }),
  });
  assertEquals(v.liveText.length, LIVE_TEXT_MAX_CHARS);
});

interface Hit {
  lastEventId: string | null;
}

/** A loopback SSE server whose n-th connection is answered by `script(n)`. */
function sseServer(script: (n: number) => string | number) {
  const hits: Hit[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    hits.push({ lastEventId: req.headers.get("last-event-id") });
    const out = script(hits.length - 1);
    if (typeof out === "number") return new Response("no", { status: out });
    return new Response(out, { headers: { "content-type": "text/event-stream" } });
  });
  return { hits, server, url: `http://127.0.0.1:${server.addr.port}/events` };
}

function streamUntilDone(url: string, terminalKind = "run.completed") {
  const seen: string[] = [];
  let terminal = false;
  return new Promise<{ seen: string[]; gaveUp: string | null; reconnects: number }>((resolve) => {
    const h = openEventStream({
      url,
      backoffMs: () => 5,
      isTerminal: () => terminal,
      onMessage(m) {
        seen.push(m.data);
        if (m.data === terminalKind) {
          terminal = true;
          h.close();
          resolve({ seen, gaveUp: null, reconnects: h.reconnects() });
        }
      },
      onGiveUp(reason) {
        resolve({ seen, gaveUp: reason, reconnects: h.reconnects() });
      },
    });
  });
}

Deno.test("a dropped stream resumes with Last-Event-ID from the last seen id", async () => {
  const s = sseServer((n) =>
    n === 0 ? "id: 1\ndata: one\n\nid: 2\ndata: two\n\n" : "id: 3\ndata: run.completed\n\n"
  );
  try {
    const r = await streamUntilDone(s.url);
    assertEquals(r.seen, ["one", "two", "run.completed"]);
    assertEquals(s.hits.map((h) => h.lastEventId), [null, "2"]);
    assertEquals(r.reconnects, 1);
  } finally {
    await s.server.shutdown();
  }
});

Deno.test("the client reconnects at most SSE_RECONNECTS_MAX times, then gives up", async () => {
  const s = sseServer((n) => `id: ${n}\ndata: part${n}\n\n`);
  try {
    const r = await streamUntilDone(s.url);
    assertEquals(s.hits.length, 1 + SSE_RECONNECTS_MAX);
    assertEquals(r.gaveUp, "eof");
    assertEquals(r.reconnects, SSE_RECONNECTS_MAX);
  } finally {
    await s.server.shutdown();
  }
});

Deno.test("a 4xx answer is not retried; a 5xx answer is", async () => {
  const gone = sseServer(() => 404);
  try {
    const r = await streamUntilDone(gone.url);
    assertEquals([r.gaveUp, gone.hits.length], ["http_404", 1]);
  } finally {
    await gone.server.shutdown();
  }
  const flaky = sseServer((n) => (n < 2 ? 503 : "id: 9\ndata: run.completed\n\n"));
  try {
    const r = await streamUntilDone(flaky.url);
    assertEquals([r.gaveUp, flaky.hits.length], [null, 3]);
  } finally {
    await flaky.server.shutdown();
  }
});

Deno.test("no reconnect happens after the terminal event", async () => {
  const s = sseServer(() => "id: 1\ndata: run.completed\n\n");
  try {
    await streamUntilDone(s.url);
    await new Promise((r) => setTimeout(r, 40));
    assertEquals(s.hits.length, 1);
  } finally {
    await s.server.shutdown();
  }
});

Deno.test("a durable-fallback snapshot with a settled state ends the run view", () => {
  let v = emptyRun("a", "c", "r");
  const ctl = (kind: string, payload: Record<string, unknown>) => JSON.stringify({ kind, payload });
  const snapshot = (state: string) => ({
    state,
    journal: "full",
    terminal_code: null,
    terminal: null,
    snapshot: null,
  });
  v = applyMessage(v, {
    id: null,
    event: "stream.gap",
    data: ctl("stream.gap", { reason: "live_record_unavailable", after_seq: 0, durable_events: 0 }),
  });
  assertEquals(v.gaps, 1);
  v = applyMessage(v, {
    id: null,
    event: "stream.snapshot",
    data: ctl("stream.snapshot", snapshot("running")),
  });
  assertEquals(v.terminal, null);
  v = applyMessage(v, {
    id: null,
    event: "stream.snapshot",
    data: ctl("stream.snapshot", snapshot("interrupted")),
  });
  assertEquals(v.terminal?.kind, "stream.snapshot");
});

Deno.test("the run store marks a run lost after the reconnect budget and can watch it again", async () => {
  let phase: "drop" | "finish" = "drop";
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    paths.push(new URL(req.url).pathname);
    const body = phase === "drop"
      ? `id: 1\ndata: ${env(1, "run.started")}\n\n`
      : `id: 2\ndata: ${env(2, "run.completed")}\n\n`;
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const finished: string[] = [];
    const lost: string[] = [];
    const store = createRunStore((v) => finished.push(v.runId), {
      origin: `http://127.0.0.1:${server.addr.port}`,
      backoffMs: () => 2,
      onLost: (v) => lost.push(`${v.runId}:${v.connection}:${v.lostReason}`),
    });
    store.watch("a", "c", "r");
    for (let i = 0; i < 200 && store.get("r")?.connection !== "lost"; i++) {
      await new Promise((res) => setTimeout(res, 5));
    }
    assertEquals(store.get("r")?.connection, "lost");
    assertEquals(lost, ["r:lost:eof"], "told once, with the view already lost");
    assertEquals(paths.length, 1 + SSE_RECONNECTS_MAX);
    assertEquals(paths[0], "/api/agents/a/runs/r/events");
    assertEquals(store.live(), []);
    phase = "finish";
    store.watch("a", "c", "r");
    for (let i = 0; i < 200 && finished.length === 0; i++) {
      await new Promise((res) => setTimeout(res, 5));
    }
    assertEquals(finished, ["r"]);
    assertEquals(store.get("r")?.terminal?.kind, "run.completed");
    store.closeAll();
  } finally {
    await server.shutdown();
  }
});

Deno.test("the run store keeps at most RUN_VIEWS_MAX finished run views", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(`id: 1\ndata: ${env(1, "run.completed")}\n\n`, {
        headers: { "content-type": "text/event-stream" },
      }),
  );
  try {
    let done = 0;
    const store = createRunStore(() => done++, { origin: `http://127.0.0.1:${server.addr.port}` });
    for (let i = 0; i < RUN_VIEWS_MAX + 10; i++) {
      store.watch("a", "c", `r${i}`);
      for (let k = 0; k < 200 && done <= i; k++) await new Promise((r) => setTimeout(r, 2));
    }
    assertEquals(done, RUN_VIEWS_MAX + 10);
    assertEquals(store.size(), RUN_VIEWS_MAX);
    assertEquals(store.get("r0"), undefined, "the oldest finished view was dropped");
    assertEquals(store.get(`r${RUN_VIEWS_MAX + 9}`)?.terminal?.kind, "run.completed");
    store.closeAll();
  } finally {
    await server.shutdown();
  }
});
