/**
 * The HTTP front door: the connection guard on the public address (loopback
 * by default; connection caps, per-request deadlines, see conn_guard.ts) in
 * front of Deno.serve — which listens only on a Unix socket in a private
 * directory, never on a TCP port — route matching, the gateway's auth checks before any handler,
 * body validation, security headers on every response, and one place that
 * turns errors into the fixed envelope [GW-1, GW-5, GW-6]. Forwarded headers
 * are never consulted.
 */
import { AppError } from "../errors.ts";
import {
  MAX_CONCURRENT_CONNECTIONS,
  MAX_HEADER_BYTES,
  SHUTDOWN_GRACE_MS,
  SHUTDOWN_RELAY_DRAIN_MS,
  STALE_SOCKET_DIR_MIN_AGE_MS,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { parseJsonBody, parseQuery } from "./body.ts";
import { type ConnGuard, type GuardedConn, startConnGuard } from "./conn_guard.ts";
import { applySecurityHeaders, errorResponse } from "./headers.ts";
import { GUARD_TOKEN_HEADER } from "./request_framing.ts";
import { createRouter, type Route, type RouteContext } from "./router.ts";
import { errorName } from "../log.ts";

/** What the server asks of the gateway before running a handler. */
export interface Gateway {
  /**
   * Enforces `route.auth` for this request and returns the session id (or
   * null for public routes). Throws AppError to refuse; the handler then does
   * not run.
   */
  authorize(req: Request, route: Route, url: URL, remote: string): string | null;
  /**
   * Adjusts a response (e.g. binds a long-lived body to its session); returns
   * a replacement Response or nothing to keep `res`.
   */
  decorate?(res: Response, sessionId: string | null): Response | void;
  /** Told the bound address once listening (allowed Host/Origin derive from it). */
  listening?(addr: { hostname: string; port: number }): void;
}

/** Where the real peer of a request comes from when a connection guard fronts the server. */
export interface PeerSource {
  /** The guarded connection a request's token names, or null. */
  connOf(token: string): GuardedConn | null;
}

export interface ServerOptions {
  hostname: string;
  port: number;
  routes: readonly Route[];
  gateway: Gateway;
  log: Logger;
  /** Called once the listener is bound, with the actual port. */
  onListen?: (addr: { hostname: string; port: number }) => void;
}

export interface RunningServer {
  port: number;
  hostname: string;
  /** The server's Unix socket behind the guard (in a 0700 directory; refuses unstamped requests). */
  upstreamPath: string;
  /** Stops accepting, finishes in-flight requests. */
  shutdown(): Promise<void>;
  finished: Promise<void>;
}

/** Builds the request handler (exported for in-process tests). */
export function createHandler(
  opts: Omit<ServerOptions, "hostname" | "port" | "onListen"> & { peers?: PeerSource },
) {
  const match = createRouter(opts.routes);
  let active = 0;
  return async (req: Request, info: Deno.ServeHandlerInfo): Promise<Response> => {
    const url = requestUrl(req);
    if (url === null) return applySecurityHeaders(errorResponse("host_forbidden"), true);
    const isApi = url.pathname.startsWith("/api/") || url.pathname === "/health";
    const tcp = info.remoteAddr.transport === "tcp" ? info.remoteAddr as Deno.NetAddr : null;
    // The TCP peer only (through the guard: the guard's client, found by the
    // unguessable token the guard stamped on this request); never a header [GW-1].
    const token = opts.peers ? req.headers.get(GUARD_TOKEN_HEADER) : null;
    const conn = token !== null && opts.peers ? opts.peers.connOf(token) : null;
    // SECURITY: behind a guard, a request the guard did not relay (a process that
    // reached the server's socket directly) would bypass the connection caps and
    // deadlines: refuse it before anything else runs.
    if (opts.peers && conn === null) {
      return applySecurityHeaders(errorResponse("connection_forbidden"), true);
    }
    const remote = conn?.peer ?? tcp?.hostname ?? "local";
    const endRequest = conn ? conn.begin() : () => {};
    info.completed.then(endRequest, endRequest);
    let res: Response;
    // Behind the guard, one request per admitted connection is the bound (an evicted
    // connection's handler may still be unwinding, so this count would lag it);
    // without one (in-process use), this counter is the bound.
    if (!opts.peers && active >= MAX_CONCURRENT_CONNECTIONS) {
      return applySecurityHeaders(errorResponse("too_many_connections"), isApi);
    }
    active++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      active--;
    };
    let sessionId: string | null = null;
    try {
      if (headerBytes(req) > MAX_HEADER_BYTES) throw new AppError("headers_too_large");
      const m = match(req.method, url.pathname);
      if (m.kind === "not_found") throw new AppError("not_found");
      if (m.kind === "method_not_allowed") {
        throw new AppError("method_not_allowed", undefined, { allow: m.allow.join(", ") });
      }
      const { route, params } = m.match;
      sessionId = opts.gateway.authorize(req, route, url, remote);
      let body: unknown = undefined;
      // The query is checked where the body is: before the handler, against the route's schema.
      const query = route.query ? parseQuery(url, route.query) : {};
      if (route.body) body = await parseJsonBody(req, route.body);
      const ctx: RouteContext = {
        req,
        url,
        params,
        body,
        query,
        sessionId,
        remote,
        signal: req.signal,
      };
      res = await route.handler(ctx);
    } catch (err) {
      res = toErrorResponse(err, opts.log, url.pathname);
    }
    try {
      res = opts.gateway.decorate?.(res, sessionId) ?? res;
      return applySecurityHeaders(res, isApi);
    } finally {
      // The slot is held until the whole response (an event stream included)
      // has been delivered or the client went away.
      info.completed.then(release, release);
    }
  };
}

/** `name[:port]` or `[v6][:port]`: nothing that could move the path (`/`, `?`, `#`, `@`). */
const HOST_SHAPE = /^(?:[a-z0-9._-]{1,253}|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/i;

/**
 * The request URL, or null when the Host header is malformed. Deno builds
 * `req.url` from Host + target, so a Host carrying `#`, `?` or `/` would shift
 * the routed path and an unparsable one would throw; both are refused here
 * for every route, public ones included [GW-3].
 */
function requestUrl(req: Request): URL | null {
  const host = req.headers.get("host");
  if (host !== null && !HOST_SHAPE.test(host)) return null;
  return URL.parse(req.url);
}

/** The client's header bytes (the guard's own token line is not the client's). */
function headerBytes(req: Request): number {
  let n = 0;
  for (const [k, v] of req.headers) if (k !== GUARD_TOKEN_HEADER) n += k.length + v.length + 4;
  return n;
}

/** The one place exceptions become responses: fixed envelope, no stack, no detail. */
export function toErrorResponse(err: unknown, log: Logger, path: string): Response {
  if (err instanceof AppError) {
    if (err.status >= 500) log.warn("http.error", { code: err.code, path: clipPath(path) });
    return errorResponse(err.code, err.headers);
  }
  log.error("http.unexpected", {
    path: clipPath(path),
    kind: errorName(err),
  });
  return errorResponse("internal_error");
}

/** Logs keep only the route shape, never ids or attacker-chosen text. */
function clipPath(path: string): string {
  return path.split("/").slice(0, 3).join("/");
}

/** The private socket directories' name prefix (under the temp dir). */
const SOCKET_DIR_PREFIX = "agent-builder-http-";

/**
 * Removes the private socket directories of servers that are gone [OP-2]: a
 * server removes its own at shutdown, but a killed one cannot. A directory
 * of this uid whose socket refuses connections belongs to no live server; one
 * without a socket is removed once older than STALE_SOCKET_DIR_MIN_AGE_MS (a
 * server that is starting has one for a moment before it binds). A live
 * server's socket accepts, so its directory is kept. Returns how many were
 * removed; errors leave a directory where it is.
 */
export async function sweepStaleSocketDirs(parent: string, keep: string): Promise<number> {
  const uid = Deno.uid();
  let removed = 0;
  for await (const e of Deno.readDir(parent)) {
    if (!e.isDirectory || !e.name.startsWith(SOCKET_DIR_PREFIX)) continue;
    const dir = `${parent}/${e.name}`;
    if (dir === keep) continue;
    try {
      const st = await Deno.lstat(dir);
      if (st.uid !== uid) continue;
      let stale: boolean;
      try {
        (await Deno.connect({ transport: "unix", path: `${dir}/http.sock` })).close();
        stale = false; // a live server
      } catch (err) {
        if (err instanceof Deno.errors.ConnectionRefused) stale = true;
        else if (err instanceof Deno.errors.NotFound) {
          stale = Date.now() - (st.mtime?.getTime() ?? Date.now()) > STALE_SOCKET_DIR_MIN_AGE_MS;
        } else stale = false;
      }
      if (stale) {
        await Deno.remove(dir, { recursive: true });
        removed++;
      }
    } catch {
      // Gone meanwhile, or not ours to judge: left as it is.
    }
  }
  return removed;
}

/**
 * Starts listening. Resolves once bound. The public address is held by the
 * connection guard (conn_guard.ts); Deno.serve itself listens on a Unix socket
 * in a fresh 0700 directory, removed again at shutdown.
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  let guard: ConnGuard | null = null;
  const handler = createHandler({
    ...opts,
    peers: { connOf: (token) => guard?.connOf(token) ?? null },
  });
  const dir = await Deno.makeTempDir({ prefix: "agent-builder-http-" });
  await Deno.chmod(dir, 0o700);
  const path = `${dir}/http.sock`;
  const removeDir = () => Deno.remove(dir, { recursive: true }).catch(() => {});
  let upstream: Deno.HttpServer<Deno.UnixAddr>;
  try {
    upstream = Deno.serve({
      transport: "unix",
      path,
      onListen() {},
      onError(err) {
        return applySecurityHeaders(toErrorResponse(err, opts.log, "/"), true);
      },
    }, handler);
  } catch (err) {
    await removeDir();
    throw err;
  }
  try {
    guard = startConnGuard({
      hostname: opts.hostname,
      port: opts.port,
      upstreamPath: path,
      log: opts.log,
    });
  } catch (err) {
    await upstream.shutdown();
    await removeDir();
    throw err;
  }
  const front = guard;
  // Killed servers' socket directories: swept in the background, never in the way of a start.
  sweepStaleSocketDirs(dir.slice(0, dir.lastIndexOf("/")), dir).catch(() => {});
  const addr = { hostname: front.addr.hostname, port: front.addr.port };
  opts.gateway.listening?.(addr);
  opts.onListen?.(addr);
  let stopped: Promise<void> | null = null;
  const shutdown = async () => {
    front.stopAccepting();
    const done = upstream.shutdown();
    // In-flight requests get SHUTDOWN_GRACE_MS; then their sockets close.
    const timer = setTimeout(() => front.closeAll(), SHUTDOWN_GRACE_MS);
    try {
      await done;
      // What the server already wrote may still be in the guard's relay (an
      // event stream's last frames): deliver it, bounded, before closing [OP-2].
      await front.drain(SHUTDOWN_RELAY_DRAIN_MS);
    } finally {
      clearTimeout(timer);
      front.closeAll();
      await removeDir();
    }
  };
  return {
    port: addr.port,
    hostname: addr.hostname,
    upstreamPath: path,
    shutdown: () => (stopped ??= shutdown()),
    // Finished only once the guard has relayed everything (a caller that exits
    // the process on `finished` must not cut the last bytes of a response).
    finished: upstream.finished.then(() => stopped ?? undefined),
  };
}
