/**
 * Attack [GW-1]: a local process without the token tries to take the server
 * down or lock the operator out through its sockets, on the real server
 * process (`main.ts serve`) on loopback:
 *
 * - descriptor exhaustion: the server runs with a low RLIMIT_NOFILE (set with
 *   prlimit to 100 above its needs, so hundreds of sockets reach it, not
 *   20,000 — at the limit Deno itself panics) and is flooded with silent
 *   connections; it has no TCP port but its one listener, it never
 *   exits, answers /health during and after the flood, and a Run in flight
 *   finishes normally;
 * - 64+ POST /api/login requests whose bodies never complete: /health is
 *   served at once meanwhile, and the server itself ends every one of them
 *   within REQUEST_BODY_TIMEOUT_MS (plus margin).
 *
 * Bounded in count and time; every socket is on loopback.
 */
import {
  CONNECTION_FD_RESERVE,
  MAX_CONCURRENT_CONNECTIONS,
  MAX_CONNECTIONS_PER_PEER,
  REQUEST_BODY_TIMEOUT_MS,
} from "../../runtime/limits.ts";
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { connectFrom, type PeerSocket } from "../helpers/peer_socket.ts";
import { isTerminal, newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import { startTestServer } from "../helpers/server.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

/** Socket inodes the process holds. */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`));
      if (m) out.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  return out;
}

/** Ports of the TCP sockets in LISTEN state that the process holds (IPv4 and IPv6). */
function listeningTcpPorts(pid: number): number[] {
  const mine = socketInodes(pid);
  const ports: number[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of Deno.readTextFileSync(file).split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A" || !mine.has(f[9])) continue;
      ports.push(parseInt(f[1].split(":").at(-1)!, 16));
    }
  }
  return ports.sort();
}

const fdCount = (pid: number) => [...Deno.readDirSync(`/proc/${pid}/fd`)].length;

function setNofile(pid: number, n: number): void {
  const r = new Deno.Command("prlimit", { args: ["--pid", String(pid), `--nofile=${n}:${n}`] })
    .outputSync();
  assert(r.success, new TextDecoder().decode(r.stderr));
}

/**
 * Waits (bounded) until GET /health answers 200 on a fresh connection. While a flood is
 * being worked off, a new socket may be refused (503, or reset when refused before its
 * request was read): that is the state this waits out.
 */
async function servedWithin(port: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      if (await health(port) === 200) return true;
    } catch (err) {
      if (!(err instanceof Deno.errors.ConnectionReset)) throw err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** GET /health on a fresh connection (never a pooled one the guard may have closed). */
async function health(port: number): Promise<number> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await c.write(new TextEncoder().encode(
      `GET /health HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n\r\n`,
    ));
    let text = "";
    const buf = new Uint8Array(4096);
    for (;;) {
      const n = await c.read(buf);
      if (n === null) break;
      text += new TextDecoder().decode(buf.subarray(0, n));
    }
    return Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  } finally {
    c.close();
  }
}

Deno.test("a flood of silent sockets against a low descriptor limit never stops the server; a Run in flight finishes", async () => {
  const h = await startRunHarness();
  const server = h.server;
  const flood: Deno.Conn[] = [];
  try {
    const pid = server.child.pid;
    // The only TCP port is the public one: there is no internal port to flood.
    assertEquals(listeningTcpPorts(pid), [server.port]);

    // A Run whose answer starts only after the flood began, its event stream attached.
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.slowFirstFrame(3000, "Still here."));
    const run = await submit(h, conv, "hello");
    assertEquals(run.status, 202);
    let opened!: () => void;
    const attached = new Promise<void>((r) => (opened = r));
    const events = readSse(h, run.body.run_id, { until: isTerminal, timeoutMs: 60_000, opened });
    events.catch(() => {}); // awaited below; a failure must not surface before that
    await attached;

    // A limit only 100 descriptors above what the server holds now: less than the
    // network could make it hold (client, relay and server side of 64 live and 64
    // closing connections), so only the guard's descriptor reserve keeps it off the limit.
    const base = fdCount(pid);
    const limit = base + 100;
    setNofile(pid, limit);
    const total = limit * 2;
    let peak = 0;
    for (let i = 0; i < total; i += 50) {
      const batch = await Promise.allSettled(
        Array.from(
          { length: Math.min(50, total - i) },
          () => Deno.connect({ hostname: "127.0.0.1", port: server.port }),
        ),
      );
      for (const b of batch) if (b.status === "fulfilled") flood.push(b.value);
      peak = Math.max(peak, fdCount(pid));
    }
    assert(flood.length >= limit, `${flood.length} sockets reached the server`);
    // Alive and serving a new client while the flood is held, and after it.
    assert(await servedWithin(server.port, 10_000), "served while the flood is held");
    assertEquals(listeningTcpPorts(pid), [server.port]);
    peak = Math.max(peak, fdCount(pid));
    assert(peak < limit, `peak ${peak} of ${limit} descriptors`);
    for (const c of flood.splice(0)) c.close();
    assert(await servedWithin(server.port, 10_000), "served after the flood");

    const frames = await events;
    assertEquals(frames.at(-1)?.event, "run.completed", JSON.stringify(frames.at(-1)));
    assert(frames.some((f) => JSON.stringify(f.data).includes("Still")), "the answer streamed");
    let exited = false;
    server.child.status.then(() => (exited = true));
    await new Promise((r) => setTimeout(r, 0));
    assert(!exited, "the server is still running");
  } finally {
    for (const c of flood) c.close();
    await h.close();
  }
});

Deno.test("with fewer than CONNECTION_FD_RESERVE descriptors left, new sockets get a 503 envelope and the server stays up", async () => {
  const server = await startTestServer();
  try {
    const pid = server.child.pid;
    // Four descriptors above what it holds (far fewer than the reserve): Deno itself is
    // not safe at the limit.
    assert(4 < CONNECTION_FD_RESERVE);
    setNofile(pid, fdCount(pid) + 4);
    for (let i = 0; i < 3; i++) {
      const c = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      try {
        // A silent socket is not held: it is answered and closed at once.
        let text = "";
        const buf = new Uint8Array(4096);
        const timer = setTimeout(() => c.close(), 5000);
        try {
          for (;;) {
            const n = await c.read(buf);
            if (n === null) break;
            text += new TextDecoder().decode(buf.subarray(0, n));
          }
        } catch (err) {
          if (!(err instanceof Deno.errors.BadResource || err instanceof Deno.errors.Interrupted)) {
            throw err;
          }
        } finally {
          clearTimeout(timer);
        }
        assertMatch(
          text,
          /^HTTP\/1\.1 503 [\s\S]*x-frame-options: DENY[\s\S]*"too_many_connections"/i,
        );
      } finally {
        try {
          c.close();
        } catch { /* closed by the timer */ }
      }
    }
    let exited = false;
    server.child.status.then(() => (exited = true));
    await new Promise((r) => setTimeout(r, 0));
    assert(!exited, "the server is still running");
  } finally {
    await server.stop();
  }
});

Deno.test("64+ unfinished login bodies neither lock /health out nor keep their slots past the body deadline", async () => {
  const server = await startTestServer();
  const held: PeerSocket[] = [];
  try {
    const before = Date.now();
    const count = MAX_CONCURRENT_CONNECTIONS + 8;
    for (let i = 0; i < count; i++) {
      // Several source addresses, so the global cap (not only one peer's) is in play.
      const addr = `127.0.0.${2 + Math.floor(i / MAX_CONNECTIONS_PER_PEER)}`;
      const s = await connectFrom(addr, server.port);
      held.push(s);
      await s.write(
        `POST /api/login HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\n` +
          `origin: ${server.url}\r\ncontent-type: application/json\r\n` +
          `content-length: 200\r\n\r\n{"token":"`,
      );
    }
    // Served at once, long before any deadline: stalled bodies give way.
    for (let i = 0; i < 4; i++) assertEquals(await health(server.port), 200);
    // The server ends every stalled body itself, within the deadline (plus margin).
    const ends = await Promise.all(held.map((s) => s.untilClosed(REQUEST_BODY_TIMEOUT_MS + 5000)));
    const ms = Date.now() - before;
    assertEquals(ends.filter((e) => !e.closed).length, 0, "every stalled body was ended");
    assert(ms < REQUEST_BODY_TIMEOUT_MS + 5000 + count * 50, `${ms} ms`);
    for (const e of ends) {
      if (e.text) assertMatch(e.text, /^HTTP\/1\.1 (408|503) /);
    }
    assertEquals(await health(server.port), 200);
  } finally {
    held.forEach((s) => s.close());
    await server.stop();
  }
});
