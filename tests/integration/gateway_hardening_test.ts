/**
 * Front-door hardening [GW-1, GW-4..6] on the real server code listening on
 * loopback with the real gateway: the fixed envelope for 404/405/unexpected
 * errors, security headers even on immutable responses, header-size and
 * concurrency bounds, 413 before a huge body is read, and long-lived streams
 * that end the moment their session ends (logout, token rotation).
 */
import { AppError } from "../../runtime/errors.ts";
import { authRoutes } from "../../runtime/http/auth_routes.ts";
import { createGateway, type WebGateway } from "../../runtime/http/gateway.ts";
import { SECURITY_HEADERS } from "../../runtime/http/headers.ts";
import type { Route } from "../../runtime/http/router.ts";
import { type RunningServer, startServer } from "../../runtime/http/server.ts";
import { createSessionStore, type SessionStore } from "../../runtime/http/sessions.ts";
import { MAX_CONNECTIONS_PER_PEER } from "../../runtime/limits.ts";
import type { LogFields, Logger } from "../../runtime/log.ts";
import { writeToken } from "../../runtime/secrets/bootstrap_token.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { login } from "../helpers/login.ts";
import { rawRequest, type RawResponse } from "../helpers/raw_http.ts";

interface Harness {
  server: RunningServer;
  gateway: WebGateway;
  url: string;
  home: string;
  lines: string[];
  close(): Promise<void>;
}

function memoryLogger(lines: string[]): Logger {
  const put = (level: string) => (event: string, fields?: LogFields) =>
    lines.push(JSON.stringify({ level, event, ...fields }));
  return { info: put("info"), warn: put("warn"), error: put("error"), flush() {}, close() {} };
}

/** A stream that sends one event and then stays open until cancelled. */
function openStream(): Response {
  const body = new ReadableStream<Uint8Array>({
    start(ctrl) {
      ctrl.enqueue(new TextEncoder().encode("event: hello\ndata: {}\n\n"));
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

const TEST_ROUTES: Route[] = [
  {
    method: "GET",
    path: "/api/test/throw",
    auth: "none",
    handler: () => {
      throw new Error("secret-detail /etc/passwd at line 42");
    },
  },
  {
    method: "GET",
    path: "/api/test/redirect",
    auth: "none",
    handler: () => Response.redirect("http://127.0.0.1/elsewhere", 302),
  },
  {
    method: "GET",
    path: "/api/test/apperror",
    auth: "none",
    handler: () => {
      throw new AppError("storage_full", "detail /secret-path/x");
    },
  },
  { method: "GET", path: "/api/test/stream", auth: "session", handler: () => openStream() },
  { method: "GET", path: "/api/test/public-stream", auth: "none", handler: () => openStream() },
];

async function startHarness(sessions?: SessionStore): Promise<Harness> {
  const home = makeTempHome();
  const lines: string[] = [];
  const log = memoryLogger(lines);
  const gateway = createGateway({ root: home, log, sessions });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    routes: [...authRoutes(gateway), ...TEST_ROUTES],
    gateway,
    log,
  });
  return {
    server,
    gateway,
    url: `http://127.0.0.1:${server.port}`,
    home,
    lines,
    async close() {
      await server.shutdown();
      await Deno.remove(home, { recursive: true });
    },
  };
}

function assertEnvelope(
  res: RawResponse | { status: number; headers: Headers; body: string },
  status: number,
  code: string,
): void {
  assertEquals(res.status, status, res.body);
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) assertEquals(res.headers.get(k), v, k);
  assertEquals(res.headers.get("server"), null);
  assertEquals(Object.keys(JSON.parse(res.body)), ["error"]);
  assertEquals(JSON.parse(res.body).error.code, code);
}

async function fetchRaw(url: string, init?: RequestInit) {
  const r = await fetch(url, init);
  return { status: r.status, headers: r.headers, body: await r.text() };
}

Deno.test("unknown paths, wrong methods and crashing handlers all answer with the fixed envelope", async () => {
  const h = await startHarness();
  try {
    assertEnvelope(await fetchRaw(`${h.url}/api/nope`), 404, "not_found");
    assertEnvelope(await fetchRaw(`${h.url}/nope/../etc`), 404, "not_found");
    assertEnvelope(await fetchRaw(`${h.url}/api/%zz`), 404, "not_found");
    const m = await fetchRaw(`${h.url}/api/session`, { method: "DELETE" });
    assertEnvelope(m, 405, "method_not_allowed");
    assertEquals(m.headers.get("allow"), "GET");
    const crash = await fetchRaw(`${h.url}/api/test/throw`);
    assertEnvelope(crash, 500, "internal_error");
    assertEquals(crash.headers.get("cache-control"), "no-store");
    assert(!crash.body.includes("secret-detail") && !crash.body.includes("passwd"));
    assert(h.lines.some((l) => l.includes('"http.unexpected"')), "the crash is logged");
    assert(!h.lines.join("\n").includes("secret-detail"), "exception text is not logged");
  } finally {
    await h.close();
  }
});

Deno.test("security headers are set even on a response with immutable headers", async () => {
  const h = await startHarness();
  try {
    const r = await fetch(`${h.url}/api/test/redirect`, { redirect: "manual" });
    await r.body?.cancel();
    assertEquals(r.status, 302);
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) assertEquals(r.headers.get(k), v, k);
  } finally {
    await h.close();
  }
});

Deno.test("request headers over 16 KiB are refused with 431 and the envelope", async () => {
  const h = await startHarness();
  try {
    const ok = await rawRequest(h.server.port, {
      method: "GET",
      path: "/api/session",
      headers: [["x-pad", "a".repeat(15 * 1024)]],
    });
    assertEnvelope(ok, 401, "unauthorized");
    const big = await rawRequest(h.server.port, {
      method: "GET",
      path: "/api/session",
      headers: [["x-pad", "a".repeat(17 * 1024)]],
    });
    assertEnvelope(big, 431, "headers_too_large");
  } finally {
    await h.close();
  }
});

Deno.test("a 100 MiB declared body is refused with 413 before it is sent", async () => {
  const h = await startHarness();
  try {
    const started = Date.now();
    const r = await rawRequest(h.server.port, {
      method: "POST",
      path: "/api/login",
      headers: [
        ["origin", h.url],
        ["content-type", "application/json"],
        ["content-length", String(100 * 1024 * 1024)],
      ],
      body: '{"token":"',
      timeoutMs: 5000,
    });
    assertEnvelope(r, 413, "body_too_large");
    assert(Date.now() - started < 3000, "answered without waiting for the body");
  } finally {
    await h.close();
  }
});

Deno.test("one peer has at most MAX_CONNECTIONS_PER_PEER requests in flight; the next gets 503 until a stream closes", async () => {
  const h = await startHarness();
  const open: Response[] = [];
  try {
    for (let i = 0; i < MAX_CONNECTIONS_PER_PEER; i++) {
      const r = await fetch(`${h.url}/api/test/public-stream`);
      assertEquals(r.status, 200);
      open.push(r);
    }
    const busy = await fetchRaw(`${h.url}/health-missing`);
    assertEnvelope(busy, 503, "too_many_connections");
    assertEquals(JSON.parse(busy.body).error.retryable, true);
    await open.pop()!.body!.cancel();
    let after = 503;
    for (let i = 0; i < 50 && after === 503; i++) {
      await new Promise((r) => setTimeout(r, 10));
      after = (await fetchRaw(`${h.url}/health-missing`)).status;
    }
    assertEquals(after, 404, "a slot is free again once a stream ends");
  } finally {
    for (const r of open) await r.body?.cancel();
    await h.close();
  }
});

async function readUntilEnd(res: Response, ms: number): Promise<"ended" | "open"> {
  const reader = res.body!.getReader();
  const timer = new Promise<"open">((r) => setTimeout(() => r("open"), ms));
  const drain = (async () => {
    try {
      for (;;) if ((await reader.read()).done) return "ended" as const;
    } catch (err) {
      if (err instanceof TypeError || err instanceof Deno.errors.Interrupted) {
        return "ended" as const;
      }
      throw err;
    }
  })();
  const result = await Promise.race([drain, timer]);
  if (result === "open") await reader.cancel();
  return result;
}

Deno.test("a session's open event stream ends at once when the token rotates", async () => {
  const h = await startHarness();
  try {
    const s = await login({ url: h.url, origin: h.url, home: h.home });
    const stream = await fetch(`${h.url}/api/test/stream`, { headers: { cookie: s.cookie } });
    assertEquals(stream.status, 200);
    writeToken(h.home, "Rotated-token-0042");
    h.gateway.reloadToken(); // what serve does on SIGHUP from rotate-token
    assertEquals(await readUntilEnd(stream, 3000), "ended");
  } finally {
    await h.close();
  }
});

Deno.test("a session's open event stream ends at once on logout, and stays open otherwise", async () => {
  const h = await startHarness();
  try {
    const s = await login({ url: h.url, origin: h.url, home: h.home });
    const idle = await fetch(`${h.url}/api/test/stream`, { headers: { cookie: s.cookie } });
    assertEquals(await readUntilEnd(idle, 300), "open", "control: a live session's stream stays");
    const stream = await fetch(`${h.url}/api/test/stream`, { headers: { cookie: s.cookie } });
    const out = await fetch(`${h.url}/api/logout`, { method: "POST", headers: s.headers() });
    assertEquals(out.status, 200);
    await out.body?.cancel();
    assertEquals(await readUntilEnd(stream, 3000), "ended");
  } finally {
    await h.close();
  }
});

Deno.test("a session's open event stream ends when the session expires, with no other request", async () => {
  // Real clock, short absolute lifetime: nothing but the stream's own timer notices the expiry.
  // The lower bound is measured from before the login (the session cannot be older), so a
  // slow login on a loaded machine cannot make an on-time cut look early.
  const lifetimeMs = 2000;
  const h = await startHarness(createSessionStore({ absoluteMs: lifetimeMs }));
  try {
    const beforeLogin = Date.now();
    const s = await login({ url: h.url, origin: h.url, home: h.home });
    const stream = await fetch(`${h.url}/api/test/stream`, { headers: { cookie: s.cookie } });
    assertEquals(stream.status, 200);
    assertEquals(await readUntilEnd(stream, lifetimeMs + 5000), "ended");
    assert(Date.now() - beforeLogin >= lifetimeMs, "not cut before the session expired");
    const after = await fetch(`${h.url}/api/test/stream`, { headers: { cookie: s.cookie } });
    assertEquals(after.status, 401);
    await after.body?.cancel();
  } finally {
    await h.close();
  }
});

Deno.test("an AppError's log-only detail reaches neither the response nor the log", async () => {
  const h = await startHarness();
  try {
    const r = await fetchRaw(`${h.url}/api/test/apperror`);
    assertEnvelope(r, 507, "storage_full");
    assert(!r.body.includes("secret-path"), "no detail in the body");
    assert(h.lines.some((l) => l.includes('"code":"storage_full"')), "the code is logged");
    assert(!h.lines.join("\n").includes("secret-path"), "no detail in the log");
  } finally {
    await h.close();
  }
});
