/**
 * The route table type and a small matcher. Every HTTP route of the product is
 * one `Route` entry; the gateway enforces each route's `auth` level before the
 * handler runs, and tests enumerate the same table to prove it for all routes.
 */
import type { z } from "zod";

/**
 * - `none`: public (health, static UI).
 * - `origin`: no session, but exact same-origin + allowed Host (login).
 * - `session`: a valid session cookie (read-only API).
 * - `csrf`: session + `X-CSRF-Token` + exact same-origin Origin (state changes).
 */
export type AuthLevel = "none" | "origin" | "session" | "csrf";

export interface RouteContext<Body = unknown, Query = Readonly<Record<string, string>>> {
  req: Request;
  url: URL;
  params: Readonly<Record<string, string>>;
  /** The validated JSON body when the route declares `body`. */
  body: Body;
  /** The validated query parameters when the route declares `query` (else empty). */
  query: Query;
  /** Session id when the route's auth level required one. */
  sessionId: string | null;
  /** Remote address (never a forwarded header [GW-1]). */
  remote: string;
  /** Aborted when the client disconnects. */
  signal: AbortSignal;
}

export interface Route<Body = any, Query = any> {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path with `:name` segments, e.g. `/api/agents/:agent/sessions/:conv`. */
  path: string;
  auth: AuthLevel;
  /** Strict zod schema for a JSON body; absent means the route takes no body. */
  body?: z.ZodType<Body>;
  /**
   * Strict zod schema for the query parameters (string values, each name at
   * most once), checked by the server where the body is; a mismatch is 422
   * `schema_violation`. Absent: the query is not read.
   */
  query?: z.ZodType<Query>;
  /**
   * The response body's schema (runtime/protocol/api.ts) — handlers answer
   * through `reply(schema, …)`; null for a body that is not JSON (SSE, UI assets).
   * Required of every product route (ProductRoute); tests enumerate the table.
   */
  response?: z.ZodType | null;
  handler: (ctx: RouteContext<Body, Query>) => Response | Promise<Response>;
}

/** A route of the product's table: it always declares its response schema (or null). */
export type ProductRoute = Route & { response: z.ZodType | null };

interface Compiled {
  route: Route;
  parts: string[];
}

export interface RouteMatch {
  route: Route;
  params: Record<string, string>;
}

export type MatchResult =
  | { kind: "found"; match: RouteMatch }
  | { kind: "method_not_allowed"; allow: string[] }
  | { kind: "not_found" };

/** Compiles a route table into a matcher. Duplicate method+path pairs are a bug. */
export function createRouter(
  routes: readonly Route[],
): (method: string, path: string) => MatchResult {
  const compiled: Compiled[] = routes.map((route) => ({
    route,
    parts: route.path.split("/").slice(1),
  }));
  const seen = new Set<string>();
  for (const r of routes) {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) throw new Error(`duplicate route ${key}`);
    seen.add(key);
  }
  return (method, path) => {
    const segs = path.split("/").slice(1);
    const allow: string[] = [];
    for (const c of compiled) {
      const params = matchParts(c.parts, segs);
      if (params === null) continue;
      if (c.route.method === method || (method === "HEAD" && c.route.method === "GET")) {
        return { kind: "found", match: { route: c.route, params } };
      }
      allow.push(c.route.method);
    }
    return allow.length ? { kind: "method_not_allowed", allow } : { kind: "not_found" };
  };
}

function matchParts(parts: string[], segs: string[]): Record<string, string> | null {
  if (parts.length !== segs.length) return null;
  const params: Record<string, string> = Object.create(null);
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    if (p.startsWith(":")) {
      if (segs[i].length === 0 || segs[i].length > 128) return null;
      let v: string;
      try {
        v = decodeURIComponent(segs[i]);
      } catch {
        return null; // malformed escape → no route
      }
      params[p.slice(1)] = v;
    } else if (p !== segs[i]) {
      return null;
    }
  }
  return params;
}
