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
import { LoginResponse, LogoutResponse, SessionResponse } from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";

export const LoginBody = z.object({ token: z.string().min(1).max(TOKEN_MAX_CHARS) }).strict();
export type LoginBody = z.infer<typeof LoginBody>;

export function authRoutes(gateway: WebGateway): ProductRoute[] {
  const login: ProductRoute & { body: typeof LoginBody } = {
    method: "POST",
    path: "/api/login",
    auth: "origin",
    body: LoginBody,
    response: LoginResponse,
    handler: ({ body, remote, req }) => {
      const { setCookie, session } = gateway.login(body.token, remote, req);
      return reply(LoginResponse, { csrf_token: session.csrf }, 200, { "set-cookie": setCookie });
    },
  };
  const logout: ProductRoute = {
    method: "POST",
    path: "/api/logout",
    auth: "csrf",
    response: LogoutResponse,
    handler: ({ sessionId }) => {
      if (sessionId === null) throw new AppError("unauthorized");
      return reply(LogoutResponse, { ok: true }, 200, { "set-cookie": gateway.logout(sessionId) });
    },
  };
  const session: ProductRoute = {
    method: "GET",
    path: "/api/session",
    auth: "session",
    response: SessionResponse,
    handler: ({ sessionId }) => {
      const s = sessionId === null ? null : gateway.session(sessionId);
      if (s === null) throw new AppError("unauthorized");
      return reply(SessionResponse, {
        csrf_token: s.csrf,
        expires_at: new Date(gateway.expiresAt(s)).toISOString(),
      });
    },
  };
  return [login, logout, session];
}
