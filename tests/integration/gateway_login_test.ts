/**
 * Login, session and logout against a real server [GW-2, GW-3, §13]: the
 * bootstrap token is created on first start (0600, 64 lowercase hex), logging
 * in sets an HttpOnly SameSite=Strict cookie, the CSRF token is bound to the
 * session, logout ends it, and failures are rate limited per source.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { login, readBootstrapToken } from "../helpers/login.ts";
import { startTestServer } from "../helpers/server.ts";
import { SESSION_CAPACITY } from "../../runtime/limits.ts";

Deno.test("first start creates a private 256-bit hex bootstrap token", async () => {
  const server = await startTestServer();
  try {
    const path = `${server.home}/.runtime/secrets/web-bootstrap-token`;
    const info = Deno.lstatSync(path);
    assertEquals(info.mode! & 0o777, 0o600);
    assert(info.isFile);
    assertMatch(readBootstrapToken(server.home), /^[0-9a-f]{64}$/);
    assertEquals(Deno.readTextFileSync(path).endsWith("\n"), true);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("login sets an HttpOnly SameSite=Strict cookie and session returns the bound CSRF token", async () => {
  const server = await startTestServer();
  try {
    const res = await fetch(`${server.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.origin },
      body: JSON.stringify({ token: readBootstrapToken(server.home) }),
    });
    assertEquals(res.status, 200);
    const body = await res.json();
    assertEquals(Object.keys(body), ["csrf_token"]);
    const setCookie = res.headers.get("set-cookie")!;
    assertMatch(
      setCookie,
      new RegExp(
        `^ab_session_${server.port}=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=/$`,
      ),
    );
    assertEquals(res.headers.get("cache-control"), "no-store");
    const cookie = setCookie.split(";")[0];
    const s = await fetch(`${server.url}/api/session`, { headers: { cookie } });
    assertEquals(s.status, 200);
    const sb = await s.json();
    assertEquals(sb.csrf_token, body.csrf_token);
    const exp = Date.parse(sb.expires_at);
    assert(exp > Date.now() && exp <= Date.now() + 2 * 3600_000 + 5000, "idle expiry ~2h");
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("logout needs the CSRF token and then the session no longer works", async () => {
  const server = await startTestServer();
  try {
    const s = await login(server);
    const bad = await fetch(`${server.url}/api/logout`, {
      method: "POST",
      headers: { cookie: s.cookie, origin: s.origin },
    });
    assertEquals(bad.status, 403);
    assertEquals((await bad.json()).error.code, "csrf_failed");
    const out = await fetch(`${server.url}/api/logout`, { method: "POST", headers: s.headers() });
    assertEquals(out.status, 200);
    await out.body?.cancel();
    assertMatch(
      out.headers.get("set-cookie")!,
      /^ab_session_\d+=; HttpOnly; SameSite=Strict; Path=\/; Max-Age=0$/,
    );
    const after = await fetch(`${server.url}/api/session`, { headers: { cookie: s.cookie } });
    assertEquals(after.status, 401);
    assertEquals((await after.json()).error.code, "unauthorized");
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("a second login replaces the session it was sent with, even behind a decoy cookie (no fixation)", async () => {
  const server = await startTestServer();
  try {
    const first = await login(server);
    const res = await fetch(`${server.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.origin, cookie: first.cookie },
      body: JSON.stringify({ token: readBootstrapToken(server.home) }),
    });
    assertEquals(res.status, 200);
    await res.body?.cancel();
    const second = res.headers.get("set-cookie")!.split(";")[0];
    assert(second !== first.cookie, "a new session secret is issued");
    const old = await fetch(`${server.url}/api/session`, { headers: { cookie: first.cookie } });
    assertEquals(old.status, 401);
    await old.body?.cancel();
    const now = await fetch(`${server.url}/api/session`, { headers: { cookie: second } });
    assertEquals(now.status, 200);
    await now.body?.cancel();
    // A decoy of the same name sent first (set from another port of this host) does not
    // shield the session the login was sent with.
    const decoy = `${second.split("=")[0]}=${"A".repeat(43)}`;
    const third = await fetch(`${server.url}/api/login`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        origin: server.origin,
        cookie: `${decoy}; ${second}`,
      },
      body: JSON.stringify({ token: readBootstrapToken(server.home) }),
    });
    assertEquals(third.status, 200);
    await third.body?.cancel();
    const replaced = await fetch(`${server.url}/api/session`, { headers: { cookie: second } });
    assertEquals(replaced.status, 401, "the session behind the decoy was ended");
    await replaced.body?.cancel();
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("five wrong tokens from one source lock login with 429 and Retry-After, even for the right token", async () => {
  const server = await startTestServer();
  try {
    const attempt = (token: string) =>
      fetch(`${server.url}/api/login`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          origin: server.origin,
          // Forwarded headers are ignored: rotating them does not reset the limit.
          "x-forwarded-for": `10.0.0.${Math.floor(Math.random() * 250)}`,
        },
        body: JSON.stringify({ token }),
      });
    for (let i = 0; i < 5; i++) {
      const r = await attempt(`wrong-token-${i}`);
      assertEquals(r.status, 401);
      assertEquals((await r.json()).error.code, "invalid_token");
    }
    const locked = await attempt(readBootstrapToken(server.home));
    assertEquals(locked.status, 429);
    const body = await locked.json();
    assertEquals(body.error, {
      code: "rate_limited",
      message: "Too many attempts; try again later.",
      retryable: true,
    });
    const retry = Number(locked.headers.get("retry-after"));
    assert(Number.isInteger(retry) && retry >= 1 && retry <= 60, `retry-after ${retry}`);
    assertEquals(locked.headers.get("set-cookie"), null);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("the token never appears in responses or the server log", async () => {
  const server = await startTestServer();
  try {
    const token = readBootstrapToken(server.home);
    const s = await login(server);
    const texts: string[] = [];
    for (const path of ["/api/session", "/health", "/", "/api/nope"]) {
      const r = await fetch(`${server.url}${path}`, { headers: { cookie: s.cookie } });
      texts.push(await r.text(), JSON.stringify([...r.headers]));
    }
    const wrong = await fetch(`${server.url}/api/login`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: server.origin },
      body: JSON.stringify({ token: "not-the-token-but-logged?" }),
    });
    texts.push(await wrong.text());
    assertEquals(await server.stop(), 0);
    const log = Deno.readTextFileSync(`${server.home}/.runtime/control-plane/server.log`);
    texts.push(log, server.output());
    for (const t of texts) {
      assert(!t.includes(token), "token leaked");
      assert(!t.includes("not-the-token-but-logged"), "presented token leaked");
      assert(!t.includes(s.cookie.split("=")[1]), "session secret leaked");
    }
    assertMatch(log, /gateway\.login_failed/);
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("the 33rd login evicts the least recently used of 32 sessions", async () => {
  const server = await startTestServer();
  try {
    const first = await login(server);
    const second = await login(server);
    for (let i = 2; i < SESSION_CAPACITY; i++) await login(server);
    const touch = await fetch(`${server.url}/api/session`, { headers: { cookie: first.cookie } });
    assertEquals(touch.status, 200, "32 sessions fit");
    await touch.body?.cancel();
    await login(server); // the 33rd: the least recently used (second) goes
    const a = await fetch(`${server.url}/api/session`, { headers: { cookie: first.cookie } });
    const b = await fetch(`${server.url}/api/session`, { headers: { cookie: second.cookie } });
    assertEquals([a.status, b.status], [200, 401]);
    await a.body?.cancel();
    await b.body?.cancel();
  } finally {
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});
