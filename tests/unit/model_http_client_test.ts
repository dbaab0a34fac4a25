/**
 * The broker's HTTP/1.1 client against raw TCP servers: chunked bodies split
 * at every byte, Content-Length and read-until-close bodies, bounded response
 * heads, malformed status lines, EOF inside a body, and abort closing the
 * socket. Real loopback sockets, no mocks.
 */
import { ReasoningBuffer } from "../../runtime/model/reasoning.ts";
import { assert, assertEquals, assertRejects } from "../helpers/assert.ts";
import { httpRequest, TransportError } from "../../runtime/model/http_client.ts";
import { runAttempt } from "../../runtime/model/attempt.ts";
import { AnswerBuffer } from "../../runtime/model/answer.ts";
import { closeFd, syscall } from "../../sandbox/libc.ts";
import { createBroker } from "../../runtime/model/broker.ts";
import { createCatalog } from "../../runtime/model/catalog.ts";
import { memoryLogger } from "../helpers/model.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Serves one connection with `reply` written in pieces of `piece` bytes; returns the port and the request seen. */
function rawServer(reply: string | Uint8Array, piece = 1 << 20, keepOpen = false) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const seen = (async () => {
    const conn = await listener.accept();
    listener.close();
    const buf = new Uint8Array(65536);
    const n = (await conn.read(buf)) ?? 0;
    const bytes = typeof reply === "string" ? enc.encode(reply) : reply;
    try {
      for (let i = 0; i < bytes.length; i += piece) {
        await conn.write(bytes.subarray(i, i + piece));
        if (piece < 16) await new Promise((r) => setTimeout(r, 0));
      }
    } catch (err) {
      // The client may hang up once it has what it needs (e.g. after the last chunk's size line).
      if (!(err instanceof Deno.errors.BrokenPipe || err instanceof Deno.errors.ConnectionReset)) {
        throw err;
      }
    }
    if (keepOpen) {
      const more = await conn.read(new Uint8Array(16)).catch((e) => e);
      conn.close();
      return { request: dec.decode(buf.subarray(0, n)), after: more };
    }
    conn.close();
    return { request: dec.decode(buf.subarray(0, n)), after: null };
  })();
  return { addr: { ip: "127.0.0.1", port, hostHeader: `ollama.test:${port}` }, seen };
}

async function body(res: Awaited<ReturnType<typeof httpRequest>>): Promise<string> {
  const all = await res.readAll(1 << 20);
  res.close();
  return dec.decode(all!);
}

Deno.test("a chunked body split at every byte decodes exactly", async () => {
  const payload = '{"a":1}\n{"b":"é"}\n';
  const bytes = enc.encode(payload);
  const chunked =
    `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-ndjson\r\n\r\n` +
    `${(8).toString(16)}\r\n${payload.slice(0, 8)}\r\n` +
    `${(bytes.length - 8).toString(16)};ext=1\r\n${payload.slice(8)}\r\n0\r\n\r\n`;
  const s = rawServer(chunked, 1);
  const res = await httpRequest(s.addr, {
    method: "POST",
    path: "/api/chat",
    body: enc.encode("{}"),
  });
  assertEquals(res.status, 200);
  assertEquals(res.headers.get("content-type"), "application/x-ndjson");
  assertEquals(await body(res), payload);
  const { request } = await s.seen;
  assert(request.startsWith("POST /api/chat HTTP/1.1\r\n"));
  assert(request.includes(`Host: ollama.test:${s.addr.port}\r\n`));
  assert(request.includes("Connection: close\r\n"));
  assert(request.includes("Content-Length: 2\r\n"));
  assert(request.endsWith("\r\n\r\n{}"));
});

Deno.test("Content-Length and read-until-close bodies are read to their end", async () => {
  const a = rawServer("HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nhelloEXTRA");
  assertEquals(await body(await httpRequest(a.addr, { method: "GET", path: "/" })), "hello");
  await a.seen;
  const b = rawServer("HTTP/1.0 200 OK\r\n\r\nuntil close");
  assertEquals(await body(await httpRequest(b.addr, { method: "GET", path: "/" })), "until close");
  await b.seen;
});

Deno.test("a response head over 16 KiB is refused", async () => {
  const s = rawServer(`HTTP/1.1 200 OK\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
  await assertRejects(
    () => httpRequest(s.addr, { method: "GET", path: "/" }),
    (e) => assert(e instanceof TransportError && e.kind === "head"),
  );
  await s.seen; // the client hung up mid-write; the server tolerates it
});

Deno.test("a malformed status line and EOF before the head are transport errors", async () => {
  const a = rawServer("SMTP ready\r\n\r\n");
  await assertRejects(
    () => httpRequest(a.addr, { method: "GET", path: "/" }),
    (e) => assert(e instanceof TransportError && e.kind === "head"),
  );
  await a.seen;
  const b = rawServer("HTTP/1.1 200");
  await assertRejects(
    () => httpRequest(b.addr, { method: "GET", path: "/" }),
    (e) => assert(e instanceof TransportError && e.kind === "io"),
  );
  await b.seen;
});

Deno.test("EOF inside a chunked body is a transport error, not a short success", async () => {
  const s = rawServer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nonly-eight");
  const res = await httpRequest(s.addr, { method: "GET", path: "/" });
  await assertRejects(() => res.readAll(1024), (e) => assert(e instanceof TransportError));
  res.close();
  await s.seen;
});

Deno.test("aborting the signal closes the socket and the server sees EOF", async () => {
  const s = rawServer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 1 << 20, true);
  const ac = new AbortController();
  const res = await httpRequest(s.addr, { method: "GET", path: "/", signal: ac.signal });
  const pending = res.read();
  ac.abort();
  await assertRejects(
    () => pending,
    (e) => assert(e instanceof TransportError && e.kind === "aborted"),
  );
  assertEquals(res.closed, true);
  const { after } = await s.seen;
  assertEquals(after, null); // read() returned EOF: the client closed its end
});

Deno.test("connecting to a closed port is a connect error", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await assertRejects(
    () => httpRequest({ ip: "127.0.0.1", port, hostHeader: "x" }, { method: "GET", path: "/" }),
    (e) => assert(e instanceof TransportError && e.kind === "connect"),
  );
});

/**
 * A loopback port whose TCP connects never complete: a raw socket listening
 * with backlog 0 whose one accept-queue slot is taken, so the kernel drops
 * every further SYN (as a firewalled or powered-off Ollama host would).
 */
async function blackhole(): Promise<{ port: number; close: () => void }> {
  for (let i = 0; i < 20; i++) {
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const fd = Number(syscall("socket", 2, /* AF_INET */ 1, /* SOCK_STREAM */ 0).ret);
    assert(fd >= 0, "socket()");
    const sa = new Uint8Array(16); // sockaddr_in 127.0.0.1:port
    sa.set([2, 0, port >> 8, port & 255, 127, 0, 0, 1]);
    if (syscall("bind", fd, sa, 16).ret !== 0n) {
      closeFd(fd);
      continue; // the probed port was taken meanwhile
    }
    assertEquals(syscall("listen", fd, 0).ret, 0n);
    const filler = await Deno.connect({ hostname: "127.0.0.1", port });
    return {
      port,
      close: () => {
        filler.close();
        closeFd(fd);
      },
    };
  }
  throw new Error("no free port for the blackhole listener");
}

/** Settles `p` or reports that it was still pending after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<{ settled: T } | "pending"> {
  let t: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p.then((settled) => ({ settled })),
    new Promise<"pending">((r) => (t = setTimeout(() => r("pending"), ms))),
  ]).finally(() => clearTimeout(t));
}

Deno.test("aborting while the TCP connect hangs rejects at once as aborted", async () => {
  const bh = await blackhole();
  try {
    const ac = new AbortController();
    const addr = { ip: "127.0.0.1", port: bh.port, hostHeader: "x" };
    const p = httpRequest(addr, { method: "GET", path: "/", signal: ac.signal }).then(
      () => "connected",
      (e) => e instanceof TransportError ? e.kind : String(e),
    );
    setTimeout(() => ac.abort(), 100);
    // Without the abort reaching the connect, it would hang for the kernel's SYN retries (~2 min).
    assertEquals(await within(p, 3000), { settled: "aborted" });
  } finally {
    bh.close();
  }
});

Deno.test("a connect that never completes ends with the first-frame timeout, not the kernel's", async () => {
  const bh = await blackhole();
  try {
    const now = Date.now;
    const p = runAttempt({
      addr: { ip: "127.0.0.1", port: bh.port, hostHeader: "x" },
      body: enc.encode("{}"),
      phase: "plain",
      signal: new AbortController().signal,
      answer: new AnswerBuffer({ guard: true }),
      reasoning: new ReasoningBuffer(),
      reasoningOn: false,
      firstFrameMs: 150,
      idleMs: 150,
      callEnd: now() + 60_000,
      deadline: now() + 60_000,
      now,
    });
    const r = await within(p, 3000);
    assert(r !== "pending", "the attempt outlived its first-frame timer");
    assert(r.settled.kind === "failed");
    assertEquals([r.settled.code, r.settled.zeroFrame], ["model_first_frame_timeout", true]);
  } finally {
    bh.close();
  }
});

Deno.test("a chunk-size line over 256 bytes or not made of hex digits is a transport error", async () => {
  const head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const line of [`1;ext=${"x".repeat(300)}`, "0x2", "2zz", "", "-1"]) {
    const s = rawServer(`${head}${line}\r\nok\r\n0\r\n\r\n`);
    const res = await httpRequest(s.addr, { method: "GET", path: "/" });
    await assertRejects(
      () => res.readAll(1024),
      (e) => assert(e instanceof TransportError && e.kind === "io", `${line}: ${e}`),
    );
    res.close();
    await s.seen;
  }
  const fine = rawServer(`${head}2;name=value\r\nok\r\n0\r\n\r\n`); // extensions are allowed
  assertEquals(await body(await httpRequest(fine.addr, { method: "GET", path: "/" })), "ok");
  await fine.seen;
});

Deno.test("qualifying a host that drops SYNs gives up within the qualification timeout", async () => {
  const bh = await blackhole();
  const catalog = createCatalog({
    ollamaUrl: `http://127.0.0.1:${bh.port}`,
    timeouts: { qualifyMs: 200, requalifyIntervalMs: 0 },
  });
  const broker = createBroker({ catalog, log: memoryLogger(), qualifyNow: false });
  try {
    // A Run asking for the model must fail closed promptly, not wait out the kernel's SYN retries.
    const r = await within(broker.profile(catalog.defaultId), 3000);
    assertEquals(r, { settled: { ok: false, code: "model_unavailable" } });
    assertEquals(broker.status(), { available: false, reason: "unreachable" });
  } finally {
    await broker.close();
    bh.close();
  }
});

Deno.test("a cancel while the model is being re-qualified against a host that drops SYNs returns at once", async () => {
  const bh = await blackhole();
  const catalog = createCatalog({
    ollamaUrl: `http://127.0.0.1:${bh.port}`,
    timeouts: { qualifyMs: 10_000, requalifyIntervalMs: 0 },
  });
  const broker = createBroker({ catalog, log: memoryLogger(), qualifyNow: false });
  try {
    const ac = new AbortController();
    const p = broker.chat({
      modelId: catalog.defaultId,
      phase: "plain",
      messages: [{ role: "user", content: "Hi" }],
      signal: ac.signal,
      deadline: Date.now() + 60_000,
    });
    setTimeout(() => ac.abort(), 100);
    assertEquals(await within(p, 3000), { settled: { kind: "cancelled" } });
  } finally {
    await broker.close();
    bh.close();
  }
});
