/**
 * Connection guard [GW-1]: `Deno.serve` has no connection cap, no keep-alive
 * timeout, no header or body deadline, and its accept loop ends the process
 * when descriptors run out. So the one TCP listener is ours, and Deno.serve
 * listens only on a Unix socket in a private (0700) directory that no other
 * user can reach — there is no internal TCP port to flood.
 *
 * - At most MAX_CONCURRENT_CONNECTIONS client sockets are open, at most
 *   MAX_CONNECTIONS_PER_PEER of them from one peer address. A socket over
 *   either cap takes the slot of a stalled one — a connection with no request
 *   being answered (idle, or still sending its head or body) — from the peer
 *   holding the most, oldest activity first; only when every slot is busy
 *   answering does it get the fixed 503 `too_many_connections` envelope.
 * - Every request is framed here (request_framing.ts, stricter than the
 *   server's parser): its head must be complete REQUEST_HEAD_TIMEOUT_MS after
 *   its first byte, its body REQUEST_BODY_TIMEOUT_MS after its head; a socket
 *   with no request in flight is closed after KEEP_ALIVE_MS. Client bytes
 *   never extend a deadline; a response in flight (an event stream) is never
 *   cut by them.
 * - Each relayed request carries a random per-connection token header; the
 *   server maps it back to the real peer and in-flight accounting, never
 *   trusting a client header (a client-sent token header is refused).
 * - Prior-knowledge HTTP/2, CONNECT and ambiguous framing are refused before
 *   a byte of them reaches the server.
 * - A closed connection holds its slot's descriptors until the server side
 *   has closed too (bounded); at most MAX_CONCURRENT_CONNECTIONS of those
 *   exist at once. So the network can make the process hold at most
 *   3 × 2 × MAX_CONCURRENT_CONNECTIONS + 1 descriptors (client, relay and
 *   server side of each live and each closing connection, plus one being
 *   refused) — far below the descriptor limit Deno raises to the hard limit.
 * - Descriptors: a connection is admitted only while 3 + CONNECTION_FD_RESERVE
 *   descriptors are free below RLIMIT_NOFILE, and dials the server only while
 *   2 + half the reserve are (Deno is not safe at the limit: Deno.serve gives
 *   up and the runtime panics); short of them, a stalled connection gives way
 *   and the new one gets the 503.
 * - Accept errors (EMFILE, ENFILE, …) are survived: the loop backs off
 *   (doubling up to ACCEPT_BACKOFF_MAX_MS) and accepts again; it never ends
 *   while the guard runs.
 */
import { errorBody, type ErrorCode } from "../errors.ts";
import {
  ACCEPT_BACKOFF_MAX_MS,
  ACCEPT_BACKOFF_MIN_MS,
  CONNECTION_FD_RESERVE,
  GUARD_ANSWER_WAIT_MS,
  GUARD_UPSTREAM_CLOSE_WAIT_MS,
  KEEP_ALIVE_MS,
  MAX_CONCURRENT_CONNECTIONS,
  MAX_CONNECTIONS_PER_PEER,
  REQUEST_BODY_TIMEOUT_MS,
  REQUEST_HEAD_TIMEOUT_MS,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { SECURITY_HEADERS } from "./headers.ts";
import { freeDescriptors } from "./descriptors.ts";
import { GUARD_TOKEN_HEADER, RequestFramer } from "./request_framing.ts";
import { errorName } from "../log.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export interface ConnGuardOptions {
  hostname: string;
  port: number;
  /** Unix socket of the real HTTP server, in a directory only this user can enter. */
  upstreamPath: string;
  log: Logger;
  /** @default MAX_CONCURRENT_CONNECTIONS */
  maxConnections?: number;
  /** @default MAX_CONNECTIONS_PER_PEER */
  maxPerPeer?: number;
  /** @default KEEP_ALIVE_MS */
  idleMs?: number;
  /** @default REQUEST_HEAD_TIMEOUT_MS */
  headMs?: number;
  /** @default REQUEST_BODY_TIMEOUT_MS */
  bodyMs?: number;
}

/** What the server learns about the connection a request came on. */
export interface GuardedConn {
  peer: string;
  /** Marks a request in flight; call the result when its response is delivered. */
  begin(): () => void;
}

export interface ConnGuard {
  addr: Deno.NetAddr;
  /** The connection behind a relayed request, by the token the guard stamped on it. */
  connOf(token: string): GuardedConn | null;
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
  token: string;
  peer: string;
  framer: RequestFramer;
  /** Requests the server is handling (begun, response not yet delivered). */
  busy: number;
  /** Responses delivered. */
  answered: number;
  /** When the framer's phase (or request count) last changed. */
  phaseSince: number;
  /** When the connection last became quiet (accepted, request relayed, response delivered). */
  idleSince: number;
  /** Set once the client side is closed; the slot is held until the server side closes too. */
  closed: boolean;
  /** Half-closes toward the server; the relay then ends after the server's last bytes. */
  endUpstream(): void;
  /** Ends the connection, with a fixed error answer when nothing else is owed. */
  refuse(code: ErrorCode | null): void;
  close(): void;
}

/** A fixed error answer with the usual headers; the connection closes after it. */
function fixedResponse(code: ErrorCode, status: string): Uint8Array {
  const body = JSON.stringify(errorBody(code));
  const head = [
    `HTTP/1.1 ${status}`,
    "content-type: application/json; charset=utf-8",
    ...Object.entries(SECURITY_HEADERS).map(([k, v]) => `${k}: ${v}`),
    "cache-control: no-store",
    "connection: close",
    `content-length: ${utf8Bytes(body)}`,
  ];
  return new TextEncoder().encode(`${head.join("\r\n")}\r\n\r\n${body}`);
}

const ANSWERS: Partial<Record<ErrorCode, Uint8Array>> = {
  too_many_connections: fixedResponse("too_many_connections", "503 Service Unavailable"),
  bad_request: fixedResponse("bad_request", "400 Bad Request"),
  headers_too_large: fixedResponse("headers_too_large", "431 Request Header Fields Too Large"),
  request_timeout: fixedResponse("request_timeout", "408 Request Timeout"),
};

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

function randomToken(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch (err) {
    if (!(err instanceof Deno.errors.BadResource)) throw err;
  }
}

export function startConnGuard(opts: ConnGuardOptions): ConnGuard {
  const max = opts.maxConnections ?? MAX_CONCURRENT_CONNECTIONS;
  const maxPerPeer = opts.maxPerPeer ?? MAX_CONNECTIONS_PER_PEER;
  const idleMs = opts.idleMs ?? KEEP_ALIVE_MS;
  const headMs = opts.headMs ?? REQUEST_HEAD_TIMEOUT_MS;
  const bodyMs = opts.bodyMs ?? REQUEST_BODY_TIMEOUT_MS;
  const listener = Deno.listen({ hostname: opts.hostname, port: opts.port, transport: "tcp" });
  const open = new Set<Entry>();
  const byToken = new Map<string, Entry>();
  /** Waiters of `drain`, told whenever a connection closes. */
  const drainers = new Set<() => void>();
  let accepting = true;
  /** Set by closeAll: server sides are cut at once, not waited for. */
  let cutting = false;

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const e of [...open]) {
      if (e.closed) continue;
      const phase = e.framer.phase;
      if (phase === "head" && now - e.phaseSince >= headMs) e.refuse("request_timeout");
      else if (phase === "body" && now - e.phaseSince >= bodyMs) e.refuse("request_timeout");
      else if (phase === "idle" && e.busy === 0 && now - e.idleSince >= idleMs) e.close();
    }
  }, Math.max(50, Math.min(1000, Math.floor(Math.min(idleMs, headMs, bodyMs) / 4))));
  Deno.unrefTimer(sweep);

  /** A connection no response is owed on right now: idle, or its client is still sending. */
  const stalled = (e: Entry) => !e.closed && (e.framer.phase !== "idle" || e.busy === 0);

  /**
   * Makes room for one more connection from `peer`: true when there is room
   * (a stalled connection may have been evicted for it), false when every
   * slot it could take is answering a request.
   */
  function makeRoom(peer: string): boolean {
    // Live connections count against the caps; closed ones whose server side is
    // still closing are bounded separately, so a mass timeout frees the slots at
    // once while churn still cannot pile up server-side sockets.
    let live = 0;
    let mine = 0;
    for (const e of open) {
      if (e.closed) continue;
      live++;
      if (e.peer === peer) mine++;
    }
    if (open.size - live >= max) return false;
    if (live < max && mine < maxPerPeer) return true;
    // Over the peer's own cap it can only displace itself.
    return evictStalled(mine >= maxPerPeer ? peer : null);
  }

  /**
   * Closes one stalled connection (of `onlyPeer` when given): from the peer
   * holding the most, least recently active first. False when there is none.
   */
  function evictStalled(onlyPeer: string | null): boolean {
    const perPeer = new Map<string, number>();
    for (const e of open) if (!e.closed) perPeer.set(e.peer, (perPeer.get(e.peer) ?? 0) + 1);
    let victim: Entry | null = null;
    for (const e of open) {
      if (!stalled(e) || (onlyPeer !== null && e.peer !== onlyPeer)) continue;
      if (victim === null) {
        victim = e;
        continue;
      }
      const a = perPeer.get(e.peer)!, b = perPeer.get(victim.peer)!;
      const lastE = Math.max(e.idleSince, e.phaseSince);
      const lastV = Math.max(victim.idleSince, victim.phaseSince);
      if (a > b || (a === b && lastE < lastV)) victim = e;
    }
    if (victim === null) return false;
    victim.close();
    return true;
  }

  /** True while `need` + `reserve` descriptors are free (or the count is unknown). */
  function descriptorsFor(need: number, reserve: number): boolean {
    const free = freeDescriptors();
    return free === null || free >= need + reserve;
  }

  /** Gives the slot back: only once the server's side of the connection is gone too. */
  function release(entry: Entry): void {
    if (!open.delete(entry)) return;
    for (const d of [...drainers]) d();
  }

  /**
   * Relays one client connection. The server's socket is dialled only when the
   * first request head is complete, so a silent or dribbling client costs one
   * descriptor, not three.
   */
  async function serveConn(client: Deno.TcpConn, entry: Entry): Promise<void> {
    let upstream: Deno.UnixConn | null = null;
    let upDone: Promise<void> | null = null;
    /** A fixed answer being written: the relay's end must not close the socket under it. */
    let answering: Promise<void> | null = null;
    let force: ReturnType<typeof setTimeout> | undefined;
    entry.endUpstream = () => {
      upstream?.closeWrite().catch((err) => {
        if (!isDisconnect(err)) throw err;
      });
    };
    const closeClient = entry.close;
    entry.close = () => {
      if (entry.closed) return;
      closeClient();
      if (upstream === null) return;
      // The server sees EOF and closes its side; the slot's descriptors stay
      // counted until it has (bounded), so churn cannot pile up server sockets.
      entry.endUpstream();
      if (cutting) closeQuietly(upstream);
      else force = setTimeout(() => closeQuietly(upstream!), GUARD_UPSTREAM_CLOSE_WAIT_MS);
    };
    entry.refuse = (code) => {
      if (entry.closed || answering) return;
      const answer = code === null ? undefined : ANSWERS[code];
      // An answer is written only when no response is owed or in flight, so it
      // can never interleave with the server's bytes.
      if (!answer || entry.busy > 0 || entry.answered < entry.framer.requests) {
        entry.close();
        return;
      }
      entry.endUpstream();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const before = upDone ?? Promise.resolve();
      const bounded = Promise.race([
        before,
        new Promise((r) => (timer = setTimeout(r, GUARD_ANSWER_WAIT_MS))),
      ]);
      answering = bounded.then(() => entry.closed ? undefined : writeAll(client, answer)).catch(
        (err) => {
          if (!isDisconnect(err)) throw err;
        },
      ).finally(() => {
        clearTimeout(timer);
        entry.close();
      });
    };
    /** Server → client until the server closes its side; once the client is gone the rest is dropped. */
    const relayDown = async (conn: Deno.UnixConn) => {
      const buf = new Uint8Array(16 * 1024);
      try {
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) break;
          if (entry.closed) continue;
          try {
            await writeAll(client, buf.subarray(0, n));
          } catch (err) {
            if (!isDisconnect(err)) throw err;
            entry.close();
          }
        }
      } catch (err) {
        if (!isDisconnect(err)) throw err;
      }
      if (answering) await answering;
      entry.close();
    };
    /** The server's socket, dialled once; null when it cannot be reached (the connection ends). */
    const connectUpstream = async (): Promise<Deno.UnixConn | null> => {
      if (!descriptorsFor(2, CONNECTION_FD_RESERVE / 2)) {
        entry.close(); // too few descriptors left to relay this request safely
        return null;
      }
      let conn: Deno.UnixConn;
      try {
        conn = await Deno.connect({ transport: "unix", path: opts.upstreamPath });
      } catch (err) {
        // NotFound / refused: the server is shutting down. Anything else (out of
        // descriptors, a full backlog) costs this one connection only.
        if (
          !(err instanceof Deno.errors.NotFound || err instanceof Deno.errors.ConnectionRefused)
        ) {
          opts.log.warn("http.guard_dial", { kind: errorName(err) });
        }
        entry.close();
        return null;
      }
      if (entry.closed) {
        closeQuietly(conn); // evicted or closed while dialling
        return null;
      }
      upstream = conn;
      upDone = relayDown(conn);
      return conn;
    };
    /** The dialled socket, if any (assigned in connectUpstream, so read through this). */
    const current = (): Deno.UnixConn | null => upstream;
    try {
      // Client → server, through the framer; a client that half-closes still gets
      // its response (the EOF is passed on, the relay continues until the server ends).
      const buf = new Uint8Array(16 * 1024);
      try {
        for (;;) {
          const n = await client.read(buf);
          if (n === null) {
            const up = current();
            if (up) await up.closeWrite();
            else entry.close();
            break;
          }
          const before = entry.framer.phase, reqs = entry.framer.requests;
          const step = entry.framer.push(buf.subarray(0, n));
          const now = Date.now();
          if (entry.framer.phase !== before || entry.framer.requests !== reqs) {
            entry.phaseSince = now;
            if (entry.framer.phase === "idle") entry.idleSince = now;
          }
          if (step.forward.length > 0) {
            const conn = current() ?? await connectUpstream();
            if (conn === null) break;
            for (const b of step.forward) await writeAll(conn, b);
          }
          if (step.error !== null) {
            entry.refuse(step.error === "http2" ? null : step.error);
            break;
          }
        }
      } catch (err) {
        if (!isDisconnect(err)) throw err;
      }
      if (upDone) await upDone;
      if (answering) await answering;
    } finally {
      entry.close();
      clearTimeout(force);
      const up = current();
      if (up) closeQuietly(up);
      release(entry);
    }
  }

  function admit(client: Deno.TcpConn): void {
    const now = Date.now();
    const token = randomToken();
    const entry: Entry = {
      token,
      peer: client.remoteAddr.hostname,
      framer: new RequestFramer(`${GUARD_TOKEN_HEADER}: ${token}\r\n`),
      busy: 0,
      answered: 0,
      phaseSince: now,
      idleSince: now,
      closed: false,
      endUpstream() {},
      refuse() {
        entry.close();
      },
      close() {
        if (entry.closed) return;
        entry.closed = true;
        byToken.delete(token);
        closeQuietly(client);
      },
    };
    open.add(entry);
    byToken.set(token, entry);
    serveConn(client, entry).catch((err) => {
      entry.close();
      release(entry);
      opts.log.error("http.guard_error", { kind: errorName(err) });
    });
  }

  (async () => {
    let backoff = 0;
    while (accepting) {
      let conn: Deno.TcpConn;
      try {
        conn = await listener.accept();
      } catch (err) {
        if (!accepting || err instanceof Deno.errors.BadResource) return; // listener closed
        // Out of descriptors (or another transient failure): never end accepting.
        // Back off so a flood of failures does not spin, and log once per episode.
        if (backoff === 0) {
          opts.log.warn("http.guard_accept", { kind: errorName(err) });
        }
        backoff = Math.min(ACCEPT_BACKOFF_MAX_MS, Math.max(ACCEPT_BACKOFF_MIN_MS, backoff * 2));
        await new Promise((r) => setTimeout(r, backoff));
        continue;
      }
      backoff = 0;
      if (!accepting) {
        closeQuietly(conn);
        return;
      }
      if (!descriptorsFor(3, CONNECTION_FD_RESERVE)) {
        // Short of descriptors: a stalled connection gives its back; this one is refused.
        evictStalled(null);
      } else if (makeRoom(conn.remoteAddr.hostname)) {
        admit(conn);
        continue;
      }
      // Refused inline: the answer fits the fresh socket's send buffer, so at
      // most one descriptor is ever spent on refusals.
      try {
        await writeAll(conn, ANSWERS.too_many_connections!);
      } catch (err) {
        if (!isDisconnect(err)) {
          opts.log.warn("http.guard_refuse", { kind: errorName(err) });
        }
      }
      closeQuietly(conn);
    }
  })();

  return {
    addr: listener.addr,
    connOf(token) {
      const e = byToken.get(token);
      if (!e) return null;
      return {
        peer: e.peer,
        begin() {
          e.busy++;
          let done = false;
          return () => {
            if (done) return;
            done = true;
            e.busy--;
            e.answered++;
            e.idleSince = Date.now();
          };
        },
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
      cutting = true;
      for (const e of [...open]) e.close();
    },
  };
}
