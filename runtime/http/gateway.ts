/**
 * The Web Gateway [GW-1..3]: decides, before any handler runs, whether a
 * request may reach its route, according to the route's auth level:
 *
 * - `none`: public (health, static UI) — nothing checked.
 * - `origin`: allowed Host + exact same-origin Origin (login).
 * - `session`: allowed Host, no foreign Origin, a live session cookie.
 * - `csrf`: all of the above + Origin required + the session's X-CSRF-Token.
 *   Any non-GET/HEAD method is treated as `csrf` whatever the table says.
 *
 * It also owns the bootstrap-token verifier: every authenticated request and
 * every login re-stats the token file, and a changed identity (rotate-token's
 * atomic rename, or an operator edit) reloads the digest and ends every
 * session at once. `serve` additionally calls `reloadToken()` on SIGHUP, which
 * `rotate-token` sends to the validated server pid, so even idle SSE streams
 * bound to a session are cut immediately.
 *
 * SECURITY: the token is only held as a SHA-256 digest; failures are logged
 * with fixed event names and the peer address, never the presented value.
 */
import { AppError } from "../errors.ts";
import type { Logger } from "../log.ts";
import {
  digestsEqual,
  ensureBootstrapToken,
  loadToken,
  sameIdentity,
  statTokenFile,
  tokenDigest,
  type TokenFileIdentity,
} from "../secrets/bootstrap_token.ts";
import { allowedHosts, type BoundAddress, checkOrigin, type HostNames } from "./origin.ts";
import { createLoginLimiter, type LoginLimiter } from "./rate_limit.ts";
import type { Route } from "./router.ts";
import type { Gateway } from "./server.ts";
import { createSessionStore, csrfEqual, type Session, type SessionStore } from "./sessions.ts";

export const CSRF_HEADER = "x-csrf-token";
const COOKIE_PREFIX = "ab_session_";

export interface GatewayOptions {
  /** Home root; the token file lives at `.runtime/secrets/web-bootstrap-token`. */
  root: string;
  log: Logger;
  /** @default createSessionStore() */
  sessions?: SessionStore;
  /** @default createLoginLimiter() */
  limiter?: LoginLimiter;
  /** Names for a wildcard bind. @default interface addresses + Deno.hostname() */
  hostNames?: () => HostNames;
}

export interface LoginResult {
  /** Set-Cookie header value carrying the new session secret. */
  setCookie: string;
  session: Session;
}

/** The gateway as the server sees it, plus what the auth routes need. */
export interface WebGateway extends Gateway {
  /**
   * Verifies `token` for a login from `remote` and opens a session. Throws
   * rate_limited (with Retry-After) or invalid_token. A session named by the
   * request's existing cookie is ended first (no session fixation).
   */
  login(token: string, remote: string, req: Request): LoginResult;
  /** Ends a session; returns the Set-Cookie value that clears the cookie. */
  logout(sessionId: string): string;
  /** The live session for an id returned by authorize(). */
  session(sessionId: string): Session | null;
  /** Aborted when the session ends; handlers of long-lived responses use it. */
  sessionSignal(sessionId: string): AbortSignal | null;
  /** Re-reads the token file if its identity changed; ends all sessions then. */
  reloadToken(): void;
  expiresAt(session: Session): number;
}

function defaultHostNames(): HostNames {
  const addresses = Deno.networkInterfaces().map((i) => i.address);
  let machineName: string | null = null;
  try {
    machineName = Deno.hostname();
  } catch (err) {
    if (!(err instanceof Deno.errors.NotCapable)) throw err;
  }
  return { addresses, machineName };
}

/** Reads one cookie by exact name from a Cookie header (the first of that name). */
export function readCookie(header: string | null, name: string): string | null {
  return readCookies(header, name)[0] ?? null;
}

/**
 * Every value of the cookies named exactly `name`, in header order. Cookies
 * are not isolated by port, so a page on another port of this host can set a
 * same-named cookie with a longer Path, which browsers send first; callers
 * must consider every value, not just the first (the header itself is bounded
 * by MAX_HEADER_BYTES).
 */
export function readCookies(header: string | null, name: string): string[] {
  if (header === null) return [];
  const out: string[] = [];
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

export function createGateway(opts: GatewayOptions): WebGateway {
  const { root, log } = opts;
  const sessions = opts.sessions ?? createSessionStore();
  const limiter = opts.limiter ?? createLoginLimiter();
  if (ensureBootstrapToken(root)) log.info("gateway.token_created");
  let token: { digest: Uint8Array; identity: TokenFileIdentity } | null = loadToken(root);
  // Until the listener is bound nothing is allowed: fail closed.
  let allowed: ReadonlySet<string> = new Set();
  let cookieName = `${COOKIE_PREFIX}0`;

  function reloadToken(): void {
    const identity = statTokenFile(root);
    if (token !== null && sameIdentity(identity, token.identity)) return;
    const had = sessions.size();
    sessions.clear();
    token = null;
    try {
      token = loadToken(root);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      log.error("gateway.token_unavailable", { code: err.code });
      throw err;
    }
    log.info("gateway.token_reloaded", { sessions_ended: had });
  }

  /**
   * The live session named by the request's cookie. A decoy cookie of the same
   * name tossed by another site on this host (another port) must not shadow
   * the real one, so every value is tried.
   */
  function sessionFromCookie(req: Request): Session | null {
    for (const secret of readCookies(req.headers.get("cookie"), cookieName)) {
      const s = sessions.touch(secret);
      if (s !== null) return s;
    }
    return null;
  }

  function cookie(value: string, maxAge?: number): string {
    const age = maxAge === undefined ? "" : `; Max-Age=${maxAge}`;
    // SECURITY: HttpOnly (no script access), SameSite=Strict (no cross-site send).
    return `${cookieName}=${value}; HttpOnly; SameSite=Strict; Path=/${age}`;
  }

  return {
    listening(addr: BoundAddress) {
      const wildcard = addr.hostname === "0.0.0.0" || addr.hostname === "::";
      const names = wildcard ? (opts.hostNames ?? defaultHostNames)() : {
        addresses: [],
        machineName: null,
      };
      allowed = allowedHosts(addr, names);
      cookieName = `${COOKIE_PREFIX}${addr.port}`;
    },

    authorize(req: Request, route: Route, url: URL, _remote: string): string | null {
      if (route.auth === "none") return null;
      // An absolute-form target (`GET http://other/…`) names the request's host
      // in place of the Host header [RFC 9112 §3.2.2]: it must be allowed too.
      if (!allowed.has(url.host)) throw new AppError("host_forbidden");
      const unsafeMethod = req.method !== "GET" && req.method !== "HEAD";
      const level = unsafeMethod && route.auth === "session" ? "csrf" : route.auth;
      const verdict = checkOrigin(
        {
          host: req.headers.get("host"),
          origin: req.headers.get("origin"),
          secFetchSite: req.headers.get("sec-fetch-site"),
        },
        allowed,
        level !== "session",
      );
      if (verdict !== "ok") throw new AppError(verdict);
      if (level === "origin") return null;
      reloadToken();
      const s = sessionFromCookie(req);
      // Deny when the cookie is missing, unknown or expired.
      if (s === null) throw new AppError("unauthorized");
      // Deny when the CSRF header is missing: state changes always need it.
      if (level === "csrf" && !csrfEqual(s.csrf, req.headers.get(CSRF_HEADER))) {
        throw new AppError("csrf_failed");
      }
      return s.id;
    },

    decorate(res: Response, sessionId: string | null): Response | void {
      if (sessionId === null || res.body === null) return;
      const type = res.headers.get("content-type") ?? "";
      if (!type.startsWith("text/event-stream")) return;
      const ended = sessions.get(sessionId)?.ended;
      if (!ended) return;
      // A long-lived stream ends the moment its session does (logout, rotation)
      // *or expires*: expiry is otherwise only noticed on the next lookup, so a
      // timer re-checks the session when it would expire (re-armed when the
      // session was refreshed meanwhile). Aborting the pipe cancels the
      // handler's source and errors what the client reads.
      const stop = new AbortController();
      const onEnded = () => stop.abort();
      ended.addEventListener("abort", onEnded, { once: true });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        const live = sessions.get(sessionId); // null once expired (and ends it)
        if (live === null) return stop.abort();
        timer = setTimeout(arm, Math.max(0, sessions.expiresAt(live) - Date.now()) + 1);
      };
      arm();
      const cut = new TransformStream<Uint8Array, Uint8Array>();
      res.body.pipeTo(cut.writable, { signal: stop.signal }).catch(() => {
        // The pipe ends early when the client leaves or the session ends; both
        // have already closed the client's side, so nothing is left to do.
      }).finally(() => {
        clearTimeout(timer);
        ended.removeEventListener("abort", onEnded);
      });
      return new Response(cut.readable, { status: res.status, headers: res.headers });
    },

    login(presented, remote, req) {
      const wait = limiter.retryAfter(remote);
      if (wait > 0) {
        log.warn("gateway.login_rate_limited", { remote });
        throw new AppError("rate_limited", undefined, { "retry-after": String(wait) });
      }
      reloadToken();
      if (token === null || !digestsEqual(tokenDigest(presented), token.digest)) {
        limiter.recordFailure(remote);
        log.warn("gateway.login_failed", { remote });
        throw new AppError("invalid_token");
      }
      limiter.recordSuccess(remote);
      for (const previous of readCookies(req.headers.get("cookie"), cookieName)) {
        const old = sessions.touch(previous);
        if (old) sessions.destroy(old.id);
      }
      const { secret, session } = sessions.create();
      log.info("gateway.login", { remote, sessions: sessions.size() });
      return { setCookie: cookie(secret), session };
    },

    logout(sessionId) {
      sessions.destroy(sessionId);
      log.info("gateway.logout", { sessions: sessions.size() });
      return cookie("", 0);
    },

    session: (sessionId) => sessions.get(sessionId),
    sessionSignal: (sessionId) => sessions.get(sessionId)?.ended ?? null,

    reloadToken,
    expiresAt: (s) => sessions.expiresAt(s),
  };
}
