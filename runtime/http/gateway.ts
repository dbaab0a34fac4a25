/**
 * Gateway placeholder used until sessions exist: public routes pass, every
 * other route is refused with 401. Replaced by the session/CSRF gateway.
 */
import { AppError } from "../errors.ts";
import type { Route } from "./router.ts";
import type { Gateway } from "./server.ts";

export function createGateway(): Gateway {
  return {
    authorize(_req: Request, route: Route): string | null {
      if (route.auth === "none") return null;
      // Deny when no session mechanism exists: fail closed.
      throw new AppError("unauthorized");
    },
  };
}
