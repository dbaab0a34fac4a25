/**
 * Connection bounds [GW-1] through the real server (connection guard in front
 * of Deno.serve on its private Unix socket) on loopback: at most
 * MAX_CONCURRENT_CONNECTIONS sockets and MAX_CONNECTIONS_PER_PEER per peer
 * address, stalled sockets giving way to new clients, idle keep-alive and
 * silent sockets closed after KEEP_ALIVE_MS, heads and bodies after their
 * deadlines, while a long quiet event stream stays open and a half-closing
 * client still gets its answer. A second peer is a socket bound to 127.0.0.2.
 */
import { createGateway } from "../../runtime/http/gateway.ts";
import { startConnGuard } from "../../runtime/http/conn_guard.ts";
import { SECURITY_HEADERS } from "../../runtime/http/headers.ts";
import type { Route } from "../../runtime/http/router.ts";
import { type RunningServer, startServer } from "../../runtime/http/server.ts";
import {
  KEEP_ALIVE_MS,
  MAX_CONCURRENT_CONNECTIONS,
  MAX_CONNECTIONS_PER_PEER,
  REQUEST_BODY_TIMEOUT_MS,
  REQUEST_HEAD_TIMEOUT_MS,
} from "../../runtime/limits.ts";
import { silentLogger } from "../../runtime/log.ts";
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { connectFrom, type PeerSocket } from "../helpers/peer_socket.ts";

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
    const limit = Math.max(KEEP_ALIVE_MS, REQUEST_HEAD_TIMEOUT_MS) * 3;
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
    for (
      const [name, r, bound] of [
        ["silent", a, KEEP_ALIVE_MS],
        ["keep-alive", b, KEEP_ALIVE_MS],
        ["dribbling", c, REQUEST_HEAD_TIMEOUT_MS],
      ] as const
    ) {
      assert(
        setupMs + r.ms >= bound && r.ms < bound + 2000,
        `${name} closed at ${r.ms} ms (+${setupMs} ms setup)`,
      );
    }
    assertMatch(b.text, /^HTTP\/1\.1 200 OK/);
    assertMatch(c.text, /^HTTP\/1\.1 408 [\s\S]*"request_timeout"/);
    assertEquals(d.ms, Infinity, "the event stream outlived the idle bound");
    assertMatch(d.text, /event: hello/);
  });
});

const STREAM = (port: number) =>
  `GET /api/test/quiet-stream HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`;
const PING = (port: number) =>
  `GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`;

/** Opens `n` quiet event streams from `addr`; each is answering (not stalled) when this resolves. */
async function holdStreams(addr: string, port: number, n: number): Promise<PeerSocket[]> {
  const out: PeerSocket[] = [];
  for (let i = 0; i < n; i++) {
    const sock = await connectFrom(addr, port);
    out.push(sock);
    await sock.write(STREAM(port));
    await sock.waitFor(/event: hello/, 5000);
  }
  return out;
}

/** A one-shot ping from `addr`: the raw answer once the server closes. */
async function pingFrom(addr: string, port: number): Promise<string> {
  const sock = await connectFrom(addr, port);
  try {
    await sock.write(PING(port));
    const r = await sock.untilClosed(5000);
    assert(r.closed, "answered and closed");
    return r.text;
  } finally {
    sock.close();
  }
}

function assertBusyEnvelope(text: string): void {
  const [head, body] = text.split("\r\n\r\n");
  assertMatch(head, /^HTTP\/1\.1 503 /);
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) {
    assert(head.toLowerCase().includes(`${k}: ${v}`.toLowerCase()), k);
  }
  assertEquals(JSON.parse(body).error.code, "too_many_connections");
}

Deno.test("one peer answering MAX_CONNECTIONS_PER_PEER requests gets a 503 for more; another peer is still served", async () => {
  await withServer(async (s) => {
    const held = await holdStreams("127.0.0.1", s.port, MAX_CONNECTIONS_PER_PEER);
    try {
      assertBusyEnvelope(await pingFrom("127.0.0.1", s.port));
      assertMatch(await pingFrom("127.0.0.2", s.port), /^HTTP\/1\.1 200 OK[\s\S]*pong$/);
    } finally {
      held.forEach((h) => h.close());
    }
  });
});

Deno.test("at most MAX_CONCURRENT_CONNECTIONS sockets answer at once; the next gets a 503 envelope until one ends", async () => {
  await withServer(async (s) => {
    const per = MAX_CONNECTIONS_PER_PEER;
    const held: PeerSocket[] = [];
    try {
      for (let p = 0; held.length < MAX_CONCURRENT_CONNECTIONS; p++) {
        const n = Math.min(per, MAX_CONCURRENT_CONNECTIONS - held.length);
        held.push(...await holdStreams(`127.0.0.${10 + p}`, s.port, n));
      }
      assertBusyEnvelope(await pingFrom("127.0.0.2", s.port));
      held.pop()!.close();
      // The guard frees the slot once it sees the close: wait for that state (bounded).
      let answer = "";
      for (let i = 0; i < 100 && !answer.endsWith("pong"); i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 20));
        answer = await pingFrom("127.0.0.2", s.port);
      }
      assertMatch(answer, /pong$/, "a slot is free again once a stream ends");
    } finally {
      held.forEach((h) => h.close());
    }
  });
});

Deno.test("silent sockets and unfinished bodies holding every slot give way to a new client at once", async () => {
  await withServer(async (s) => {
    const held: PeerSocket[] = [];
    try {
      // Half the slots: silent sockets; the other half: a POST whose body never completes.
      for (let i = 0; i < MAX_CONCURRENT_CONNECTIONS; i++) {
        const sock = await connectFrom(`127.0.0.${20 + (i % 4)}`, s.port);
        held.push(sock);
        if (i % 2 === 1) {
          await sock.write(
            `POST /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\ncontent-length: 100\r\n\r\n{`,
          );
        }
      }
      // Far sooner than any deadline: the new clients take stalled slots.
      for (let i = 0; i < 8; i++) {
        assertMatch(await pingFrom("127.0.0.2", s.port), /^HTTP\/1\.1 200 OK[\s\S]*pong$/);
      }
    } finally {
      held.forEach((h) => h.close());
    }
  });
});

Deno.test("an unfinished body frees its slot REQUEST_BODY_TIMEOUT_MS after its head", async () => {
  await withServer(async (s) => {
    const before = Date.now();
    const sock = await connectFrom("127.0.0.1", s.port);
    try {
      await sock.write(
        `POST /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${s.port}\r\ncontent-length: 100\r\n\r\n{`,
      );
      // Dribble more body bytes: they must not extend the deadline.
      let stop = false;
      (async () => {
        for (let i = 0; i < 50 && !stop; i++) {
          await new Promise((r) => setTimeout(r, 200));
          await sock.write(" ").catch(() => (stop = true));
        }
      })();
      const r = await sock.untilClosed(REQUEST_BODY_TIMEOUT_MS * 3);
      stop = true;
      const ms = Date.now() - before;
      assert(r.closed, "the server closed the stalled body");
      assert(ms >= REQUEST_BODY_TIMEOUT_MS && ms < REQUEST_BODY_TIMEOUT_MS + 3000, `${ms} ms`);
    } finally {
      sock.close();
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

Deno.test("the server's own socket is private, and a request on it without a live guard token is refused", () =>
  withServer(async (server) => {
    const dir = server.upstreamPath.slice(0, server.upstreamPath.lastIndexOf("/"));
    const st = Deno.statSync(dir);
    assertEquals(st.mode! & 0o777, 0o700);
    assertEquals(st.uid, Deno.uid());
    for (const forged of [null, "0".repeat(32)]) {
      const direct = await Deno.connect({ transport: "unix", path: server.upstreamPath });
      await direct.write(enc.encode(
        `GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n` +
          (forged ? `x-agent-builder-conn: ${forged}\r\n` : "") + "connection: close\r\n\r\n",
      ));
      const r = await untilClosed(direct, 3000);
      assertMatch(r.text, /^HTTP\/1\.1 403 [\s\S]*"connection_forbidden"/);
      assertMatch(r.text.toLowerCase(), /x-frame-options: deny/);
    }
    // Through the guard, a client cannot present a token of its own.
    const spoof = await connect(server);
    await spoof.write(enc.encode(
      `GET /api/test/ping HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nx-agent-builder-conn: x\r\n\r\n`,
    ));
    assertMatch((await untilClosed(spoof, 3000)).text, /^HTTP\/1\.1 400 [\s\S]*"bad_request"/);
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

Deno.test("a burst of simultaneous connections never holds more than MAX_CONCURRENT_CONNECTIONS", async () => {
  const dir = Deno.makeTempDirSync();
  const path = `${dir}/up.sock`;
  const upstream = Deno.listen({ transport: "unix", path });
  const accepted: Deno.Conn[] = [];
  const acceptLoop = (async () => {
    for await (const c of upstream) accepted.push(c);
  })();
  const guard = startConnGuard({
    hostname: "127.0.0.1",
    port: 0,
    upstreamPath: path,
    log: silentLogger,
    maxPerPeer: MAX_CONCURRENT_CONNECTIONS,
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
    // Every socket is either ended by the guard (a silent one gave way) or still held.
    const ended = await Promise.all(conns.map(async (c) => {
      const buf = new Uint8Array(1024);
      const timer = setTimeout(() => closeQuietly(c), 3000);
      try {
        return (await c.read(buf)) === null;
      } catch (err) {
        if (err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted) {
          return false;
        }
        if (err instanceof Deno.errors.ConnectionReset) return true;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    }));
    assertEquals(ended.filter(Boolean).length, extra, "exactly the sockets over the cap");
  } finally {
    conns.forEach(closeQuietly);
    guard.stopAccepting();
    guard.closeAll();
    upstream.close();
    await acceptLoop.catch((err) => {
      if (!(err instanceof Deno.errors.BadResource)) throw err;
    });
    accepted.forEach(closeQuietly);
    Deno.removeSync(dir, { recursive: true });
  }
});
