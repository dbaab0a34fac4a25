/**
 * Response headers every response carries [GW-5], and the fixed JSON/error
 * response constructors [GW-6]. No `Server` banner is ever set.
 */
import { AppError, errorBody, type ErrorCode } from "../errors.ts";

/** SECURITY: no inline script or style, no remote origin, no framing. */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=()",
};

/**
 * Sets the security headers (and no-store on API paths) on a response, in
 * place when its headers are mutable, else on a copy; returns the response.
 */
export function applySecurityHeaders(res: Response, isApi: boolean): Response {
  try {
    res.headers.set("x-content-type-options", "nosniff");
  } catch (err) {
    // Immutable headers (e.g. Response.redirect): copy into a mutable response.
    if (!(err instanceof TypeError)) throw err;
    res = new Response(res.body, { status: res.status, headers: new Headers(res.headers) });
  }
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.headers.set(k, v);
  if (isApi) res.headers.set("cache-control", "no-store");
  res.headers.delete("server");
  return res;
}

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

export function errorResponse(code: ErrorCode, headers?: Record<string, string>): Response {
  return json(errorBody(code), new AppError(code).status, headers);
}
