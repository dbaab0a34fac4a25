/** A tiny JSON client for the §13 agent/session API of a real test server. */
import type { LoginSession } from "./login.ts";
import type { ServerHandle } from "./server.ts";

export interface ApiResult {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

export type Api = (method: string, path: string, body?: unknown) => Promise<ApiResult>;

/** Requests carry the session cookie, CSRF token and exact Origin of `session`. */
export function apiClient(server: Pick<ServerHandle, "url">, session: LoginSession): Api {
  return async (method, path, body) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: session.headers(),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
}

/** The fixed error code of a result (or null). */
export function codeOf(r: ApiResult): string | null {
  return r.body?.error?.code ?? null;
}
