/**
 * The HTTP front door: Deno.serve on loopback by default, route matching,
 * the gateway's auth checks before any handler, body validation, security
 * headers on every response, and one place that turns errors into the fixed
 * envelope [GW-1, GW-5, GW-6]. Forwarded headers are never consulted.
 */
import { AppError } from "../errors.ts";
import { MAX_CONCURRENT_CONNECTIONS, MAX_HEADER_BYTES } from "../limits.ts";
import type { Logger } from "../log.ts";
import { parseJsonBody } from "./body.ts";
import { applySecurityHeaders, errorResponse } from "./headers.ts";
import { createRouter, type Route, type RouteContext } from "./router.ts";

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
  /** Stops accepting, finishes in-flight requests. */
  shutdown(): Promise<void>;
  finished: Promise<void>;
}

/** Builds the request handler (exported for in-process tests). */
export function createHandler(opts: Omit<ServerOptions, "hostname" | "port" | "onListen">) {
  const match = createRouter(opts.routes);
  let active = 0;
  return async (req: Request, info: Deno.ServeHandlerInfo): Promise<Response> => {
    const url = new URL(req.url);
    const isApi = url.pathname.startsWith("/api/") || url.pathname === "/health";
    const remote = info.remoteAddr.transport === "tcp" ? info.remoteAddr.hostname : "local";
    let res: Response;
    if (active >= MAX_CONCURRENT_CONNECTIONS) {
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
      if (route.body) body = await parseJsonBody(req, route.body);
      const ctx: RouteContext = { req, url, params, body, sessionId, remote, signal: req.signal };
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

function headerBytes(req: Request): number {
  let n = 0;
  for (const [k, v] of req.headers) n += k.length + v.length + 4;
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
    kind: err instanceof Error ? err.name : typeof err,
  });
  return errorResponse("internal_error");
}

/** Logs keep only the route shape, never ids or attacker-chosen text. */
function clipPath(path: string): string {
  return path.split("/").slice(0, 3).join("/");
}

/** Starts listening. Resolves once bound. */
export function startServer(opts: ServerOptions): Promise<RunningServer> {
  const handler = createHandler(opts);
  return new Promise((resolve, reject) => {
    let bound: { hostname: string; port: number } | null = null;
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = Deno.serve({
        hostname: opts.hostname,
        port: opts.port,
        onListen(addr) {
          bound = addr;
        },
        onError(err) {
          return applySecurityHeaders(toErrorResponse(err, opts.log, "/"), true);
        },
      }, handler);
    } catch (err) {
      reject(err);
      return;
    }
    // onListen runs synchronously inside Deno.serve, before `server` exists.
    const addr = bound ?? server.addr;
    opts.gateway.listening?.(addr);
    opts.onListen?.(addr);
    resolve({
      port: addr.port,
      hostname: addr.hostname,
      shutdown: () => server.shutdown(),
      finished: server.finished,
    });
  });
}
