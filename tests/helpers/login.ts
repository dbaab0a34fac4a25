/**
 * Logs in to a real test server over HTTP with the bootstrap token read from
 * `<home>/.runtime/secrets/web-bootstrap-token`, exactly as a browser would:
 * exact Origin, JSON body, then the session cookie + CSRF header on every
 * further request.
 *
 * ```ts
 * const s = await login(server);
 * const r = await fetch(`${server.url}/api/agents`, {
 *   method: "POST", headers: s.headers(), body: JSON.stringify({ name: "a" }),
 * });
 * ```
 */
import type { ServerHandle } from "./server.ts";

export interface LoginSession {
  /** `name=value` of the session cookie, ready for a Cookie header. */
  cookie: string;
  csrf: string;
  origin: string;
  /** Cookie + X-CSRF-Token + Origin + JSON content type, plus `extra`. */
  headers(extra?: Record<string, string>): Record<string, string>;
}

/** Reads the bootstrap token of a test home (tests only; the server never echoes it). */
export function readBootstrapToken(home: string): string {
  return Deno.readTextFileSync(`${home}/.runtime/secrets/web-bootstrap-token`).trim();
}

/** Logs in with `token` (default: the home's token file) and returns request headers. */
export async function login(
  server: Pick<ServerHandle, "url" | "origin" | "home">,
  token = readBootstrapToken(server.home),
): Promise<LoginSession> {
  const res = await fetch(`${server.url}/api/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: server.origin },
    body: JSON.stringify({ token }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${text}`);
  const setCookie = res.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0];
  if (!/^ab_session_\d+=[A-Za-z0-9_-]{43}$/.test(cookie)) {
    throw new Error(`login returned no session cookie: ${setCookie}`);
  }
  const csrf = (JSON.parse(text) as { csrf_token: string }).csrf_token;
  const origin = server.origin;
  return {
    cookie,
    csrf,
    origin,
    headers(extra = {}) {
      return {
        cookie,
        "x-csrf-token": csrf,
        origin,
        "content-type": "application/json",
        ...extra,
      };
    },
  };
}
