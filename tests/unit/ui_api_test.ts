/** The browser API client [GW-3, GW-6] and login messages, over an injected fetch. */
import { ApiError, createApiClient } from "../../ui/api.ts";
import { loginErrorMessage } from "../../ui/LoginPage.ts";
import { assert, assertEquals, assertRejects } from "../helpers/assert.ts";

interface Seen {
  url: string;
  init: RequestInit;
}

function fakeFetch(responses: Response[], seen: Seen[]): typeof fetch {
  return ((url: string, init: RequestInit) => {
    seen.push({ url, init });
    const r = responses.shift();
    return r ? Promise.resolve(r) : Promise.reject(new TypeError("network down"));
  }) as typeof fetch;
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });

Deno.test("login stores the CSRF token and state changes carry it; reads do not", async () => {
  const seen: Seen[] = [];
  const c = createApiClient({
    fetch: fakeFetch([json({ csrf_token: "T" }), json({ ok: 1 }), json({ agents: [] })], seen),
  });
  assertEquals(await c.login("the-token-123"), "T");
  assertEquals(c.csrf(), "T");
  await c.request("POST", "/api/agents", { name: "a" });
  await c.request("GET", "/api/agents");
  const h = (i: number) => seen[i].init.headers as Record<string, string>;
  assertEquals(h(0)["x-csrf-token"], undefined);
  assertEquals(seen[0].init.body, JSON.stringify({ token: "the-token-123" }));
  assertEquals(h(1)["x-csrf-token"], "T");
  assertEquals(h(1)["content-type"], "application/json");
  assertEquals(h(2)["x-csrf-token"], undefined);
  for (const s of seen) {
    assertEquals(s.init.credentials, "same-origin");
    assertEquals(s.init.referrerPolicy, "same-origin", "so POSTs carry the real Origin");
    assert(!s.url.includes("token"), "the token is never in a URL");
  }
});

Deno.test("errors map the fixed envelope to ApiError with code, status and Retry-After", async () => {
  const seen: Seen[] = [];
  const c = createApiClient({
    fetch: fakeFetch([
      json({ error: { code: "rate_limited", message: "m", retryable: true } }, 429, {
        "retry-after": "42",
      }),
      new Response("<html>", { status: 502 }),
    ], seen),
  });
  const e1 = await assertRejects(() => c.login("x".repeat(12))) as ApiError;
  assertEquals([e1.code, e1.status, e1.retryAfter, e1.retryable], ["rate_limited", 429, 42, true]);
  const e2 = await assertRejects(() => c.request("GET", "/api/x")) as ApiError;
  assertEquals([e2.code, e2.status], ["http_502", 502]);
  const e3 = await assertRejects(() => c.request("GET", "/api/x")) as ApiError;
  assertEquals(e3.code, "network_error");
});

Deno.test("a 401 clears the CSRF token and tells the app to show the login page", async () => {
  let told = 0;
  const c = createApiClient({
    fetch: fakeFetch([
      json({ csrf_token: "T", expires_at: "2030-01-01T00:00:00.000Z" }),
      json({ error: { code: "unauthorized", message: "Login required." } }, 401),
      json({ error: { code: "unauthorized", message: "Login required." } }, 401),
    ], []),
    onUnauthorized: () => told++,
  });
  assertEquals((await c.loadSession())?.csrfToken, "T");
  await assertRejects(() => c.request("DELETE", "/api/agents/x"));
  assertEquals([c.csrf(), told], [null, 1]);
  assertEquals(await c.loadSession(), null);
});

Deno.test("login errors become fixed, helpful text", () => {
  const e = (code: string, retryAfter: number | null = null) =>
    new ApiError(code, 0, null, retryAfter);
  assertEquals(loginErrorMessage(e("invalid_token")), "That token is not valid.");
  assertEquals(
    loginErrorMessage(e("rate_limited", 17)),
    "Too many failed attempts. Try again in 17 seconds.",
  );
  assert(loginErrorMessage(e("origin_forbidden")).includes("address"));
  assert(loginErrorMessage(e("network_error")).includes("reach"));
  assertEquals(loginErrorMessage(e("something_new")), "Login failed. Try again.");
  assertEquals(
    loginErrorMessage(new Error("<img src=x onerror=alert(1)>")),
    "Login failed unexpectedly. Reload the page and try again.",
  );
});

Deno.test("the session, login and error answers are parsed with the server's schemas, never guessed", async () => {
  const c = createApiClient({
    fetch: fakeFetch([
      // A session missing expires_at, a login answer with an extra field: bad_response.
      json({ csrf_token: "T" }),
      json({ csrf_token: "T", token: "leak" }),
      // An error body that is not the fixed envelope keeps the HTTP status as its code.
      json({ error: { code: "rate_limited", msg: "m" } }, 429),
      json({ error: { code: "agent_busy", message: "m", retryable: true } }, 409),
    ], []),
  });
  const s = await assertRejects(() => c.loadSession()) as ApiError;
  assertEquals([s.code, c.csrf()], ["bad_response", null]);
  const l = await assertRejects(() => c.login("x".repeat(12))) as ApiError;
  assertEquals([l.code, c.csrf()], ["bad_response", null]);
  const e = await assertRejects(() => c.request("GET", "/api/x")) as ApiError;
  assertEquals([e.code, e.retryable], ["http_429", false]);
  const b = await assertRejects(() => c.request("GET", "/api/x")) as ApiError;
  assertEquals([b.code, b.retryable], ["agent_busy", true]);
});
