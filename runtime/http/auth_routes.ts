/**
 * Login, logout and session routes [GW-3, §13]:
 *
 * - `POST /api/login {token}` (auth `origin`): verifies the bootstrap token,
 *   sets the HttpOnly SameSite=Strict session cookie, returns `{csrf_token}`.
 * - `POST /api/logout` (auth `csrf`): ends the session and clears the cookie.
 * - `GET /api/session` (auth `session`): `{csrf_token, expires_at}` so a
 *   reloaded page can recover its CSRF token (the cookie is HttpOnly).
 *
 * SECURITY: the presented token is passed straight to the gateway's digest
 * comparison and is never logged, echoed or stored.
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import { TOKEN_MAX_CHARS } from "../limits.ts";
import type { WebGateway } from "./gateway.ts";
import { json } from "./headers.ts";
import type { Route } from "./router.ts";

export const LoginBody = z.object({ token: z.string().min(1).max(TOKEN_MAX_CHARS) }).strict();
export type LoginBody = z.infer<typeof LoginBody>;

export const LoginResponse = z.object({ csrf_token: z.string() }).strict();
export const SessionResponse = z.object({ csrf_token: z.string(), expires_at: z.string() })
  .strict();

export function authRoutes(gateway: WebGateway): Route[] {
  const login: Route<LoginBody> = {
    method: "POST",
    path: "/api/login",
    auth: "origin",
    body: LoginBody,
    handler: ({ body, remote, req }) => {
      const { setCookie, session } = gateway.login(body.token, remote, req);
      return json({ csrf_token: session.csrf }, 200, { "set-cookie": setCookie });
    },
  };
  const logout: Route = {
    method: "POST",
    path: "/api/logout",
    auth: "csrf",
    handler: ({ sessionId }) => {
      if (sessionId === null) throw new AppError("unauthorized");
      return json({ ok: true }, 200, { "set-cookie": gateway.logout(sessionId) });
    },
  };
  const session: Route = {
    method: "GET",
    path: "/api/session",
    auth: "session",
    handler: ({ sessionId }) => {
      const s = sessionId === null ? null : gateway.session(sessionId);
      if (s === null) throw new AppError("unauthorized");
      return json({
        csrf_token: s.csrf,
        expires_at: new Date(gateway.expiresAt(s)).toISOString(),
      });
    },
  };
  return [login, logout, session];
}
