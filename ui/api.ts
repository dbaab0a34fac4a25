/**
 * The browser's one door to the API [GW-3, GW-6]: a small fetch wrapper that
 * sends JSON, carries the session's CSRF token on every state-changing
 * request, and turns the fixed error envelope into an `ApiError` with the
 * fixed `code` (plus `retryAfter` for 429).
 *
 * SECURITY: requests are same-origin only (`credentials: "same-origin"`). The
 * page's Referrer-Policy is no-referrer, under which the Fetch standard sends
 * `Origin: null` on non-CORS POSTs, so each request asks for
 * `referrerPolicy: "same-origin"`: the server requires the exact Origin on
 * every state change.
 *
 * Answers are parsed with the server's own schemas (runtime/protocol/api.ts):
 * the error envelope, the session and the login answer; a body that does not
 * match is `bad_response`, never a guess.
 */
import { ErrorResponse, LoginResponse, SessionResponse } from "../runtime/protocol/api.ts";

export type ApiMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * A request body sent as raw bytes instead of JSON (a skill archive [LC-3]),
 * with its content type and extra request headers (e.g. X-Skill-SHA256).
 */
export class RawBody {
  constructor(
    readonly bytes: Blob | Uint8Array,
    readonly contentType: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}

/** A failed request: the server's fixed code, or `network_error` / `http_<status>`. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly retryable: boolean;
  /** Seconds from Retry-After (rate limiting), else null. */
  readonly retryAfter: number | null;
  readonly body: unknown;

  constructor(code: string, status: number, body: unknown, retryAfter: number | null) {
    super(code);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
    const err = envelope(body);
    this.retryable = err?.retryable === true;
  }
}

/** The fixed error envelope of a non-2xx answer, or null when the body is not one. */
function envelope(body: unknown): ErrorResponse["error"] | null {
  const r = ErrorResponse.safeParse(body);
  return r.success ? r.data.error : null;
}

export interface ApiClientOptions {
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Called on every 401 (session gone: show the login page). */
  onUnauthorized?: () => void;
}

export interface ApiClient {
  /** Performs one request; resolves with the parsed JSON (null when empty). */
  request(method: ApiMethod, path: string, body?: unknown): Promise<unknown>;
  /** The CSRF token of the current session (null when logged out). */
  csrf(): string | null;
  setCsrf(token: string | null): void;
  /** `GET /api/session`: the session's CSRF token, or null when not logged in. */
  loadSession(): Promise<{ csrfToken: string; expiresAt: string } | null>;
  /** `POST /api/login`: stores and returns the new CSRF token. */
  login(token: string): Promise<string>;
  /** `POST /api/logout`: ends the session (also when it already ended). */
  logout(): Promise<void>;
}

export function createApiClient(opts: ApiClientOptions = {}): ApiClient {
  const doFetch = opts.fetch ?? fetch.bind(globalThis);
  let csrf: string | null = null;

  async function request(method: ApiMethod, path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: "application/json" };
    const raw = body instanceof RawBody ? body : null;
    if (raw) Object.assign(headers, raw.headers, { "content-type": raw.contentType });
    else if (body !== undefined) headers["content-type"] = "application/json";
    if (method !== "GET" && csrf !== null) headers["x-csrf-token"] = csrf;
    let res: Response;
    try {
      res = await doFetch(path, {
        method,
        headers,
        body: raw ? raw.bytes as BodyInit : body === undefined ? undefined : JSON.stringify(body),
        credentials: "same-origin",
        referrerPolicy: "same-origin",
        cache: "no-store",
      });
    } catch {
      throw new ApiError("network_error", 0, null, null);
    }
    const text = await res.text();
    let parsed: unknown = null;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    if (res.ok) return parsed;
    const env = envelope(parsed);
    const ra = Number(res.headers.get("retry-after"));
    const retryAfter = Number.isFinite(ra) && ra > 0 ? ra : null;
    if (res.status === 401) {
      csrf = null;
      opts.onUnauthorized?.();
    }
    throw new ApiError(env?.code ?? `http_${res.status}`, res.status, parsed, retryAfter);
  }

  return {
    request,
    csrf: () => csrf,
    setCsrf(token) {
      csrf = token;
    },
    async loadSession() {
      try {
        const body = await request("GET", "/api/session");
        const r = SessionResponse.safeParse(body);
        if (!r.success) throw new ApiError("bad_response", 200, body, null);
        csrf = r.data.csrf_token;
        return { csrfToken: r.data.csrf_token, expiresAt: r.data.expires_at };
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return null;
        throw err;
      }
    },
    async login(token) {
      const body = await request("POST", "/api/login", { token });
      const r = LoginResponse.safeParse(body);
      if (!r.success) throw new ApiError("bad_response", 200, body, null);
      csrf = r.data.csrf_token;
      return r.data.csrf_token;
    },
    async logout() {
      try {
        await request("POST", "/api/logout");
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 401)) throw err;
      } finally {
        csrf = null;
      }
    },
  };
}
