/**
 * Connection bounds [GW-1] through the real server (connection guard in front
 * of Deno.serve) on loopback: at most MAX_CONCURRENT_CONNECTIONS sockets,
 * idle keep-alive / silent / header-dribbling sockets closed after
 * KEEP_ALIVE_MS, while a long quiet event stream stays open and a
 * half-closing client still gets its answer.
 */
import { createGateway } from "../../runtime/http/gateway.ts";
import { startConnGuard } from "../../runtime/http/conn_guard.ts";
import { SECURITY_HEADERS } from "../../runtime/http/headers.ts";
import type { Route } from "../../runtime/http/router.ts";
import { type RunningServer, startServer } from "../../runtime/http/server.ts";
import { KEEP_ALIVE_MS, MAX_CONCURRENT_CONNECTIONS } from "../../runtime/limits.ts";
import { silentLogger } from "../../runtime/log.ts";
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

const ROUTES: Route[] = [
  { method: "GET", path: "/api/test/ping", auth: "none", handler: () => new Response("pong") },
  {
    method: "GET",
    path: "/api/test/quiet-stream",
    auth: "none",
    handler: () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(c) {
            c.enqueue(enc.encode("event: hello\ndata: {}\n\n"));
          },
        }),
        { headers: { "content-type": "text/event-stream" } },
      ),
  },
];

async function withServer(fn: (s: RunningServer) => Promise<void>): Promise<void> {
  const home = makeTempHome();
  const gateway = createGateway({ root: home, log: silentLogger });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes: ROUTES,
    gateway,
    log: silentLogger,
  });
  try {
    await fn(server);
  } finally {
    await server.shutdown();
    await Deno.remove(home, { recursive: true });
  }
}

/** Reads until the server closes the socket; resolves with the ms it took and the bytes. */
async function untilClosed(
  conn: Deno.Conn,
  limitMs: number,
): Promise<{ ms: number; text: string }> {
  const started = Date.now();
  const timer = setTimeout(() => conn.close(), limitMs);
  let text = "";
  const buf = new Uint8Array(4096);
  try {
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += dec.decode(buf.subarray(0, n));
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted)) {
      throw err;
    }
    return { ms: Infinity, text }; // our own limit fired: the server never closed it
  } finally {
    clearTimeout(timer);
  }
  conn.close();
  return { ms: Date.now() - started, text };
}

const connect = (s: RunningServer) => Deno.connect({ hostname: "127.0.0.1", port: s.port });

Deno.test("idle, silent and header-dribbling sockets are closed after KEEP_ALIVE_MS; a quiet event stream is not", async () => {
  await withServer(async (s) => {
    const limit = KEEP_ALIVE_MS * 3;
    // Every idle clock starts after this instant (at accept or at a delivered response),
    // so the lower bound is measured from here: slow setup under load cannot fail it.
    const before = Date.now();
    const silent = await connect(s);
    const keepAlive = await connect(s);
    await keepAlive.write(
      enc.encode(`GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\n\r\n`),
    );
    const dribble = await connect(s);
    let stop = false;
    (async () => {
      const line = `GET /api/test/ping HTTP/1.1\r\nx-slow: ${"a".repeat(64)}`;
      for (let i = 0; i < line.length && !stop; i++) {
        await dribble.write(enc.encode(line[i])).catch(() => (stop = true));
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const stream = await connect(s);
    await stream.write(
      enc.encode(`GET /api/test/quiet-stream HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\n\r\n`),
    );
    const setupMs = Date.now() - before;
    const [a, b, c, d] = await Promise.all([
      untilClosed(silent, limit),
      untilClosed(keepAlive, limit),
      untilClosed(dribble, limit),
      untilClosed(stream, KEEP_ALIVE_MS + 2000),
    ]);
    stop = true;
    for (const [name, r] of [["silent", a], ["keep-alive", b], ["dribbling", c]] as const) {
      assert(
        setupMs + r.ms >= KEEP_ALIVE_MS && r.ms < KEEP_ALIVE_MS + 2000,
        `${name} closed at ${r.ms} ms (+${setupMs} ms setup)`,
      );
    }
    assertMatch(b.text, /^HTTP\/1\.1 200 OK/);
    assertEquals(d.ms, Infinity, "the event stream outlived the idle bound");
    assertMatch(d.text, /event: hello/);
  });
});

Deno.test("at most MAX_CONCURRENT_CONNECTIONS sockets are open; the next gets a 503 envelope", async () => {
  await withServer(async (s) => {
    const held: Deno.Conn[] = [];
    try {
      for (let i = 0; i < MAX_CONCURRENT_CONNECTIONS; i++) held.push(await connect(s));
      // Give the guard a moment to account for every accepted socket.
      await new Promise((r) => setTimeout(r, 100));
      const extra = await connect(s);
      const r = await untilClosed(extra, 3000);
      assert(r.ms < 3000, "refused at once");
      const [head, body] = r.text.split("\r\n\r\n");
      assertMatch(head, /^HTTP\/1\.1 503 /);
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) {
        assert(head.toLowerCase().includes(`${k}: ${v}`.toLowerCase()), k);
      }
      assertEquals(JSON.parse(body).error.code, "too_many_connections");
      held.pop()!.close();
      // The guard frees the slot once it sees the close: wait for that state (bounded),
      // never sample once after a fixed pause.
      let answer = "";
      for (let i = 0; i < 100 && answer !== "pong"; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 20));
        answer = await (await fetch(`http://127.0.0.1:${s.port}/api/test/ping`)).text();
      }
      assertEquals(answer, "pong", "a slot is free again once a socket closes");
    } finally {
      for (const c of held) c.close();
    }
  });
});

Deno.test("a client that half-closes after its request still gets the response", async () => {
  await withServer(async (s) => {
    const conn = await connect(s);
    await conn.write(
      enc.encode(`GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\n\r\n`),
    );
    await conn.closeWrite();
    const r = await untilClosed(conn, 3000);
    assertMatch(r.text, /^HTTP\/1\.1 200 OK[\s\S]*pong$/);
  });
});

Deno.test("shutdown does not wait for a socket stuck in an unread request body", async () => {
  const home = makeTempHome();
  const gateway = createGateway({ root: home, log: silentLogger });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes: ROUTES,
    gateway,
    log: silentLogger,
  });
  try {
    const conn = await connect(server);
    await conn.write(enc.encode(
      `POST /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\ncontent-length: 99999\r\n\r\nab`,
    ));
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await server.shutdown();
    assert(Date.now() - started < 7000, "shutdown finished within the grace period");
    conn.close();
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a local process dialling the internal port directly is refused before any route runs", () =>
  withServer(async (server) => {
    assert(server.upstreamPort !== server.port);
    const direct = await fetch(`http://127.0.0.1:${server.upstreamPort}/api/test/ping`);
    assertEquals(direct.status, 403);
    assertEquals((await direct.json()).error.code, "connection_forbidden");
    assertEquals(direct.headers.get("x-frame-options"), SECURITY_HEADERS["x-frame-options"]);
    const guarded = await fetch(`http://127.0.0.1:${server.port}/api/test/ping`);
    assertEquals(await guarded.text(), "pong");
  }));

Deno.test("prior-knowledge HTTP/2 is closed before a byte reaches the server; HTTP/1.1 still flows", () =>
  withServer(async (s) => {
    const conn = await connect(s);
    // The client connection preface followed by an empty SETTINGS frame.
    const preface = enc.encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const settings = new Uint8Array([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    await conn.write(new Uint8Array([...preface, ...settings]));
    const r = await untilClosed(conn, 3000);
    assert(r.ms < 3000, "the guard closed the connection");
    assertEquals(r.text, "", "no SETTINGS frame or any other answer");

    // A request line split into one-byte writes is relayed once four bytes decide it.
    const slow = await connect(s);
    for (const ch of "GET ") {
      await slow.write(enc.encode(ch));
      await new Promise((res) => setTimeout(res, 20));
    }
    await slow.write(enc.encode(`/api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\n\r\n`));
    await slow.closeWrite();
    assertMatch((await untilClosed(slow, 3000)).text, /^HTTP\/1\.1 200 OK[\s\S]*pong$/);
  }));

Deno.test("a burst of simultaneous connections cannot open more than MAX_CONCURRENT_CONNECTIONS", async () => {
  const upstream = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted: Deno.Conn[] = [];
  const acceptLoop = (async () => {
    for await (const c of upstream) accepted.push(c);
  })();
  const guard = startConnGuard({
    hostname: "127.0.0.1",
    port: 0,
    upstreamPort: (upstream.addr as Deno.NetAddr).port,
    log: silentLogger,
    idleMs: 60_000,
  });
  const extra = 16;
  const conns = await Promise.all(
    Array.from(
      { length: MAX_CONCURRENT_CONNECTIONS + extra },
      () => Deno.connect({ hostname: "127.0.0.1", port: guard.addr.port }),
    ),
  );
  const closeQuietly = (c: Deno.Conn) => {
    try {
      c.close();
    } catch (err) {
      if (!(err instanceof Deno.errors.BadResource)) throw err;
    }
  };
  try {
    // Every socket is either refused at once or admitted (and then silent until our timer).
    const refused = await Promise.all(conns.map(async (c) => {
      const buf = new Uint8Array(1024);
      const timer = setTimeout(() => closeQuietly(c), 3000);
      try {
        const n = await c.read(buf);
        return n !== null && dec.decode(buf.subarray(0, n)).startsWith("HTTP/1.1 503");
      } catch (err) {
        if (err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted) {
          return false;
        }
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }));
    assertEquals(refused.filter(Boolean).length, extra, "exactly the sockets over the cap");
  } finally {
    conns.forEach(closeQuietly);
    guard.stopAccepting();
    guard.closeAll();
    upstream.close();
    await acceptLoop.catch((err) => {
      if (!(err instanceof Deno.errors.BadResource)) throw err;
    });
    accepted.forEach(closeQuietly);
  }
});
