/**
 * Public routes: `GET /health` and the embedded UI [API]. The UI bundle, CSS
 * and HTML shell are embedded through imports so the compiled executable never
 * reads the source tree at run time [PK-3].
 */
import { RELEASE } from "../limits.ts";
import { HealthResponse } from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";
import indexHtml from "../../ui/index.html" with { type: "text" };
import appJs from "../../dist/app.js" with { type: "text" };
import appCss from "../../dist/app.css" with { type: "text" };
import iconSvg from "../../ui/icon.svg" with { type: "text" };

export interface HealthSource {
  /** Model availability for /health; reason is a fixed code, never host/port. */
  model(): { available: boolean; reason?: string };
}

function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: { "content-type": type, "cache-control": "no-cache" },
  });
}

export function staticRoutes(health: HealthSource): ProductRoute[] {
  return [
    {
      method: "GET",
      path: "/health",
      auth: "none",
      response: HealthResponse,
      handler: () => {
        const m = health.model();
        return reply(HealthResponse, {
          status: "ok",
          release: RELEASE,
          model: m.available ? "available" : "unavailable",
          ...(m.available ? {} : { reason: m.reason ?? "unknown" }),
        });
      },
    },
    {
      method: "GET",
      path: "/",
      auth: "none",
      response: null,
      handler: () => asset(indexHtml, "text/html; charset=utf-8"),
    },
    {
      method: "GET",
      path: "/assets/app.js",
      auth: "none",
      response: null,
      handler: () => asset(appJs, "text/javascript; charset=utf-8"),
    },
    {
      method: "GET",
      path: "/assets/app.css",
      auth: "none",
      response: null,
      handler: () => asset(appCss, "text/css; charset=utf-8"),
    },
    {
      method: "GET",
      path: "/assets/icon.svg",
      auth: "none",
      response: null,
      handler: () => asset(iconSvg, "image/svg+xml"),
    },
  ];
}
