/**
 * Connection guard [GW-1]: `Deno.serve` has no connection cap, no keep-alive
 * timeout and no header-read timeout (a silent or byte-dribbling client keeps
 * its socket forever). So the public listener is ours:
 *
 * - at most MAX_CONCURRENT_CONNECTIONS client connections are open; the next
 *   one gets a fixed 503 `too_many_connections` envelope and is closed;
 * - each accepted connection is piped to the real HTTP server, which listens
 *   on an ephemeral loopback port;
 * - a connection with no request in flight for KEEP_ALIVE_MS is closed: idle
 *   keep-alive, a client that never finishes its headers, or one that sends
 *   nothing at all. A request counts as in flight from the moment the server
 *   starts handling it until its response is delivered, so long event
 *   streams are never cut by this rule.
 *
 * - prior-knowledge HTTP/2 (a connection opening with "PRI ") is closed
 *   before a byte reaches the server: one h2 connection would multiplex
 *   requests past these per-connection bounds.
 *
 * The server learns a request's real peer through `peerOf(port)` (keyed by
 * the guard's own loopback source port), never from a header [GW-1].
 */
import { errorBody } from "../errors.ts";
import { KEEP_ALIVE_MS, MAX_CONCURRENT_CONNECTIONS } from "../limits.ts";
import type { Logger } from "../log.ts";
import { SECURITY_HEADERS } from "./headers.ts";

export interface ConnGuardOptions {
  hostname: string;
  port: number;
  /** Loopback port of the real HTTP server. */
  upstreamPort: number;
  log: Logger;
  /** @default MAX_CONCURRENT_CONNECTIONS */
  maxConnections?: number;
  /** @default KEEP_ALIVE_MS */
  idleMs?: number;
}

export interface ConnGuard {
  addr: Deno.NetAddr;
  /** The client address behind an upstream connection, by its local port. */
  peerOf(upstreamLocalPort: number): string | null;
  /** Marks a request in flight on that connection; call the result when delivered. */
  begin(upstreamLocalPort: number): () => void;
  /** Open client connections. */
  size(): number;
  /**
   * Stops accepting and ends connections with no request in flight: their
   * server side is half-closed, so what the server already wrote is still
   * relayed before the connection closes itself.
   */
  stopAccepting(): void;
  /**
   * Waits until every connection has ended on its own — its relay delivered
   * all the server wrote — for at most `ms`; true when none is left [OP-2].
   */
  drain(ms: number): Promise<boolean>;
  /** Closes every connection. */
  closeAll(): void;
}

interface Entry {
  peer: string;
  busy: number;
  idleSince: number;
  /** Half-closes toward the server; the relay then ends after the server's last bytes. */
  endUpstream(): void;
  close(): void;
}

/** The fixed answer for one connection too many, with the usual headers. */
function busyResponse(): Uint8Array {
  const body = JSON.stringify(errorBody("too_many_connections"));
  const head = [
    "HTTP/1.1 503 Service Unavailable",
    "content-type: application/json; charset=utf-8",
    ...Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}`),
    "cache-control: no-store",
    "connection: close",
    `content-length: ${new TextEncoder().encode(body).length}`,
  ];
  return new TextEncoder().encode(`${head.join("\r\n")}\r\n\r\n${body}`);
}

async function writeAll(conn: Deno.Conn, data: Uint8Array): Promise<void> {
  let off = 0;
  while (off < data.length) off += await conn.write(data.subarray(off));
}

/** Errors that mean "the other side went away": the pipe just ends. */
function isDisconnect(err: unknown): boolean {
  return err instanceof Deno.errors.BadResource || err instanceof Deno.errors.ConnectionReset ||
    err instanceof Deno.errors.BrokenPipe || err instanceof Deno.errors.Interrupted ||
    err instanceof Deno.errors.ConnectionAborted || err instanceof Deno.errors.NotConnected;
}

async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(16 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) return;
      await writeAll(to, buf.subarray(0, n));
    }
  } catch (err) {
    if (!isDisconnect(err)) throw err;
  }
}

/** The start of the HTTP/2 connection preface ("PRI * HTTP/2.0…"); no HTTP/1.1 method is "PRI". */
const H2_PREFACE_START = new TextEncoder().encode("PRI ");

/**
 * Relays client bytes like `pump`, but refuses prior-knowledge HTTP/2: the
 * bounds here count connections and requests the HTTP/1.1 way, and one h2
 * connection would multiplex any number of streams past them. Resolves
 * "refused" (nothing forwarded) when the client opens with the h2 preface.
 */
async function relayHttp1(from: Deno.Conn, to: Deno.Conn): Promise<"ended" | "refused"> {
  const head = new Uint8Array(H2_PREFACE_START.length);
  let have = 0;
  try {
    while (have < head.length) {
      const n = await from.read(head.subarray(have));
      if (n === null) break;
      have += n;
    }
  } catch (err) {
    if (!isDisconnect(err)) throw err;
    return "ended";
  }
  if (have === head.length && head.every((b, i) => b === H2_PREFACE_START[i])) return "refused";
  try {
    await writeAll(to, head.subarray(0, have));
  } catch (err) {
    if (!isDisconnect(err)) throw err;
    return "ended";
  }
  if (have === head.length) await pump(from, to);
  return "ended";
}

export function startConnGuard(opts: ConnGuardOptions): ConnGuard {
  const max = opts.maxConnections ?? MAX_CONCURRENT_CONNECTIONS;
  const idleMs = opts.idleMs ?? KEEP_ALIVE_MS;
  const listener = Deno.listen({ hostname: opts.hostname, port: opts.port, transport: "tcp" });
  const open = new Set<Entry>();
  const byPort = new Map<number, Entry>();
  const busy = busyResponse();
  /** Waiters of `drain`, told whenever a connection closes. */
  const drainers = new Set<() => void>();
  let accepting = true;

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const e of [...open]) if (e.busy === 0 && now - e.idleSince >= idleMs) e.close();
  }, Math.max(50, Math.min(1000, Math.floor(idleMs / 4))));
  Deno.unrefTimer(sweep);

  /** Connections admitted but still dialling upstream: they hold a slot already. */
  let dialling = 0;

  async function serveConn(client: Deno.TcpConn): Promise<void> {
    // Counted before the first await, so a burst cannot all pass the check at once.
    if (open.size + dialling >= max) {
      await writeAll(client, busy).catch((err) => {
        if (!isDisconnect(err)) throw err;
      });
      client.close();
      return;
    }
    let upstream: Deno.TcpConn;
    dialling++;
    try {
      upstream = await Deno.connect({ hostname: "127.0.0.1", port: opts.upstreamPort });
    } catch (err) {
      client.close();
      if (err instanceof Deno.errors.ConnectionRefused) return; // server shutting down
      throw err;
    } finally {
      dialling--; // the slot passes to `open` below, in this same turn
    }
    const localPort = upstream.localAddr.port;
    let closed = false;
    const entry: Entry = {
      peer: client.remoteAddr.hostname,
      busy: 0,
      idleSince: Date.now(),
      endUpstream() {
        upstream.closeWrite().catch((err) => {
          if (!isDisconnect(err)) throw err;
        });
      },
      close() {
        if (closed) return;
        closed = true;
        open.delete(entry);
        byPort.delete(localPort);
        for (const c of [client, upstream]) {
          try {
            c.close();
          } catch (err) {
            if (!(err instanceof Deno.errors.BadResource)) throw err;
          }
        }
        for (const d of [...drainers]) d();
      },
    };
    open.add(entry);
    byPort.set(localPort, entry);
    // Client bytes never extend the idle window (only a started request does),
    // so a client dribbling header bytes cannot hold its socket open.
    // A client that half-closes still gets its response: pass the EOF on and
    // keep relaying until the server side ends.
    const up = relayHttp1(client, upstream).then((how) =>
      how === "refused" ? entry.close() : upstream.closeWrite()
    ).catch((err) => {
      if (!isDisconnect(err)) throw err;
    });
    await pump(upstream, client);
    entry.close();
    await up;
  }

  (async () => {
    while (accepting) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (!accepting || err instanceof Deno.errors.BadResource) return; // listener closed
        // A transient failure (e.g. out of descriptors) must not end accepting for good.
        opts.log.warn("http.guard_accept", { kind: err instanceof Error ? err.name : typeof err });
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      if (!accepting) {
        conn.close();
        return;
      }
      serveConn(conn).catch((err) => {
        opts.log.error("http.guard_error", { kind: err instanceof Error ? err.name : typeof err });
      });
    }
  })();

  return {
    addr: listener.addr,
    peerOf: (port) => byPort.get(port)?.peer ?? null,
    begin(port) {
      const e = byPort.get(port);
      if (!e) return () => {};
      e.busy++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        e.busy--;
        e.idleSince = Date.now();
      };
    },
    size: () => open.size,
    stopAccepting() {
      if (!accepting) return;
      accepting = false;
      listener.close();
      for (const e of [...open]) if (e.busy === 0) e.endUpstream();
    },
    drain(ms) {
      if (open.size === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const settle = (empty: boolean) => {
          clearTimeout(timer);
          drainers.delete(check);
          resolve(empty);
        };
        const check = () => {
          if (open.size === 0) settle(true);
        };
        const timer = setTimeout(() => settle(false), ms);
        drainers.add(check);
      });
    },
    closeAll() {
      clearInterval(sweep);
      for (const e of [...open]) e.close();
    },
  };
}
