/**
 * The gateway route matrix [GW-3..6], generated from the App's real route
 * table (built by createApp on a temp home), so every `/api/*` route added
 * later is covered automatically. The real server code listens on loopback
 * with the real gateway; each handler is wrapped in a spy so the test proves
 * that a refused request never reached it.
 *
 * For every `/api/*` route: 401 without a session; 403 for a foreign,
 * `null`, or (on state changes) missing Origin, a cross-site fetch, a wrong
 * Host, a missing or wrong CSRF token; 413/415/422 for bad bodies on routes
 * that take one; HEAD running the GET checks and OPTIONS answering 405 with no
 * CORS grant; security headers and the fixed error envelope on every
 * response.
 */
import { createApp } from "../../runtime/app.ts";
import { errorInfo, isErrorCode } from "../../runtime/errors.ts";
import { resolveHome } from "../../runtime/home.ts";
import { SECURITY_HEADERS } from "../../runtime/http/headers.ts";
import type { Route } from "../../runtime/http/router.ts";
import { type RunningServer, startServer } from "../../runtime/http/server.ts";
import { SYSTEM_AGENT_ID } from "../../runtime/limits.ts";
import { silentLogger } from "../../runtime/log.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { login, type LoginSession } from "../helpers/login.ts";
import { rawRequest, type RawResponse } from "../helpers/raw_http.ts";

interface Harness {
  server: RunningServer;
  routes: Route[];
  calls: Map<Route, number>;
  origin: string;
  a: LoginSession;
  b: LoginSession;
  close(): Promise<void>;
}

async function startHarness(): Promise<Harness> {
  const dir = makeTempHome();
  const app = createApp({
    home: resolveHome(dir),
    log: silentLogger,
    ollamaUrl: "http://127.0.0.1:9",
  });
  const calls = new Map<Route, number>();
  const routes = app.routes.map((r) => {
    const spy: Route = {
      ...r,
      handler: (ctx) => {
        calls.set(r, (calls.get(r) ?? 0) + 1);
        return r.handler(ctx);
      },
    };
    return spy;
  });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes,
    gateway: app.gateway,
    log: silentLogger,
  });
  const origin = `http://127.0.0.1:${server.port}`;
  const handle = { url: origin, origin, home: dir };
  const a = await login(handle);
  const b = await login(handle);
  calls.clear(); // the two logins above are the only expected handler runs
  return {
    server,
    routes: app.routes,
    calls,
    origin,
    a,
    b,
    async close() {
      await server.shutdown();
      await app.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * The smallest valid query of each GET route whose query schema requires
 * parameters, by the route's path ending (the system Agent's aliases share
 * it); a route missing here fails the handler-reached test below.
 */
const REQUIRED_QUERY: Record<string, string> = {
  "/runs/:run/changes/diff": "path=a.txt",
  "/search": "q=hello",
};

/** The query a GET route needs to reach its handler ("" when none is required). */
function requiredQuery(
  route: { path: string; query?: { safeParse(v: unknown): { success: boolean } } },
) {
  if (!route.query || route.query.safeParse({}).success) return "";
  const q = Object.entries(REQUIRED_QUERY).find(([end]) => route.path.endsWith(end))?.[1];
  assert(q !== undefined, `${route.path}: add its smallest valid query to REQUIRED_QUERY`);
  return `?${q}`;
}

/** A concrete path for a route pattern: ids become valid-looking UUIDs. */
function concretePath(path: string): string {
  return path.split("/").map((seg) => {
    if (!seg.startsWith(":")) return seg;
    if (seg === ":agent") return SYSTEM_AGENT_ID;
    return crypto.randomUUID();
  }).join("/");
}

function assertHygiene(res: RawResponse, what: string): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) {
    assertEquals(res.headers.get(k), v, `${what}: header ${k}`);
  }
  assertEquals(res.headers.get("cache-control"), "no-store", `${what}: no-store`);
  assertEquals(res.headers.get("server"), null, `${what}: no server banner`);
}

function assertError(res: RawResponse, status: number, code: string, what: string): void {
  assertEquals(res.status, status, `${what}: status (body ${res.body.slice(0, 200)})`);
  assertHygiene(res, what);
  const body = JSON.parse(res.body);
  assertEquals(Object.keys(body), ["error"], `${what}: envelope`);
  assert(isErrorCode(body.error.code), `${what}: fixed code`);
  assertEquals(body.error.code, code, `${what}: code`);
  assertEquals(body.error.message, errorInfo(code as never).message, `${what}: fixed message`);
}

const FOREIGN_ORIGINS = [
  "http://evil.example",
  "null",
  "https://127.0.0.1:PORT",
  "http://127.0.0.1:PORT.evil.example",
  "http://127.0.0.1:1",
];
const WRONG_HOSTS = ["evil.example", "127.0.0.1:1", "evil.example:PORT", "127.0.0.1.evil:PORT", ""];

Deno.test("the route matrix refuses every /api/* request that lacks session, origin, host or CSRF, before the handler runs", async () => {
  const h = await startHarness();
  try {
    const port = h.server.port;
    const api = h.routes.filter((r) => r.path.startsWith("/api/"));
    assert(api.length >= 3, "the table has API routes");
    for (const route of api) {
      assert(route.auth !== "none", `${route.method} ${route.path} must not be public [GW-3]`);
    }
    for (const route of api) {
      const path = concretePath(route.path);
      const what = (c: string) => `${route.method} ${route.path} ${c}`;
      const stateChanging = route.method !== "GET";
      const needsSession = route.auth === "session" || route.auth === "csrf";
      const body = route.body ? "{}" : undefined;
      const base = (s: LoginSession | null, omit: string[] = []): [string, string][] => {
        const hs: [string, string][] = [["origin", h.origin], ["content-type", "application/json"]];
        if (s) hs.push(["cookie", s.cookie], ["x-csrf-token", s.csrf]);
        return hs.filter(([k]) => !omit.includes(k));
      };
      const send = (headers: [string, string][], b: string | undefined = body) =>
        rawRequest(port, {
          method: route.method,
          path,
          headers: b === undefined ? headers : [...headers, ["content-length", String(b.length)]],
          body: b,
        });

      if (needsSession) {
        assertError(await send(base(null)), 401, "unauthorized", what("without a session"));
        const forged = base(null);
        forged.push(["cookie", `ab_session_${port}=${"A".repeat(43)}`]);
        assertError(await send(forged), 401, "unauthorized", what("with a forged cookie"));
        forged.pop();
        forged.push(["cookie", `ab_session_1=${h.a.cookie.split("=")[1]}`]);
        assertError(await send(forged), 401, "unauthorized", what("cookie of another port"));
      }
      for (const o of FOREIGN_ORIGINS) {
        const hs = base(h.a, ["origin"]);
        hs.push(["origin", o.replace("PORT", String(port))]);
        assertError(await send(hs), 403, "origin_forbidden", what(`origin ${o}`));
      }
      const crossSite = base(h.a);
      crossSite.push(["sec-fetch-site", "cross-site"]);
      assertError(await send(crossSite), 403, "origin_forbidden", what("cross-site fetch"));
      for (const host of WRONG_HOSTS) {
        const hs = base(h.a);
        hs.push(["host", host.replace("PORT", String(port))]);
        assertError(await send(hs), 403, "host_forbidden", what(`host '${host}'`));
      }
      // Forwarded headers never make a wrong Host acceptable [GW-1].
      const fwd = base(h.a);
      fwd.push(["host", "evil.example"], ["x-forwarded-host", `127.0.0.1:${port}`], [
        "forwarded",
        `host=127.0.0.1:${port}`,
      ]);
      assertError(await send(fwd), 403, "host_forbidden", what("forwarded host"));
      if (stateChanging || route.auth === "origin") {
        assertError(
          await send(base(h.a, ["origin"])),
          403,
          "origin_forbidden",
          what("missing origin"),
        );
      }
      if (needsSession && (stateChanging || route.auth === "csrf")) {
        assertError(await send(base(h.a, ["x-csrf-token"])), 403, "csrf_failed", what("no csrf"));
        const wrong = base(h.a, ["x-csrf-token"]);
        wrong.push(["x-csrf-token", h.b.csrf]);
        assertError(await send(wrong), 403, "csrf_failed", what("another session's csrf"));
        const junk = base(h.a, ["x-csrf-token"]);
        junk.push(["x-csrf-token", "x".repeat(43)]);
        assertError(await send(junk), 403, "csrf_failed", what("junk csrf"));
      }
      if (route.body) {
        const ok = base(h.a, ["content-type"]);
        for (
          const type of ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
        ) {
          assertError(
            await send([...ok, ["content-type", type]]),
            415,
            "unsupported_media_type",
            what(`content-type ${type}`),
          );
        }
        assertError(await send(ok), 415, "unsupported_media_type", what("no content-type"));
        const json = base(h.a);
        const big = JSON.stringify({ x: "a".repeat(17 * 1024) });
        assertError(await send(json, big), 413, "body_too_large", what("declared 17 KiB"));
        const chunked = await rawRequest(port, {
          method: route.method,
          path,
          headers: [...json, ["transfer-encoding", "chunked"]],
          body: `${(17 * 1024).toString(16)}\r\n${"a".repeat(17 * 1024)}\r\n0\r\n\r\n`,
        });
        assertError(chunked, 413, "body_too_large", what("streamed 17 KiB without length"));
        assertError(
          await send(json, '{"unexpected_field_xyz":1}'),
          422,
          "schema_violation",
          what("unknown field"),
        );
        assertError(await send(json, "{not json"), 422, "invalid_json", what("invalid json"));
        const deep = "[".repeat(40) + "]".repeat(40);
        assertError(await send(json, deep), 422, "schema_violation", what("too deep"));
        const wide = JSON.stringify(
          Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i])),
        );
        assertError(await send(json, wide), 422, "schema_violation", what("too many keys"));
      }
      // HEAD runs the GET checks; OPTIONS grants no preflight: both keep the hygiene headers.
      if (route.method === "GET" && needsSession) {
        const head = await rawRequest(port, { method: "HEAD", path, headers: base(null) });
        assertEquals([head.status, head.body], [401, ""], what("HEAD without a session"));
        assertHygiene(head, what("HEAD without a session"));
      }
      const options = await rawRequest(port, {
        method: "OPTIONS",
        path,
        headers: [...base(h.a), ["access-control-request-method", route.method]],
      });
      assertError(options, 405, "method_not_allowed", what("OPTIONS"));
      assert(options.headers.get("allow")?.split(", ").includes(route.method), what("Allow"));
      for (const [k] of options.headers) assert(!k.startsWith("access-control-"), what(k));
      assertEquals(h.calls.get(route) ?? 0, 0, what("handler must not have run"));
    }
  } finally {
    await h.close();
  }
});

Deno.test("with a valid session and an allowed Host every GET /api/* route reaches its handler", async () => {
  const h = await startHarness();
  try {
    const port = h.server.port;
    for (const route of h.routes.filter((r) => r.path.startsWith("/api/") && r.method === "GET")) {
      const res = await rawRequest(port, {
        method: "GET",
        path: concretePath(route.path) + requiredQuery(route),
        headers: [["cookie", h.a.cookie], ["host", `localhost:${port}`]],
      });
      assertHygiene(res, `${route.path} as localhost`);
      assertEquals(h.calls.get(route), 1, `${route.method} ${route.path} handler ran`);
    }
  } finally {
    await h.close();
  }
});
