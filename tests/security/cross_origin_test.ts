/**
 * Attack: a hostile web page or a hostile local process without the token
 * against the real server [GW-1..3, §13]. Simple-request CSRF (text/plain,
 * urlencoded, no Content-Type), foreign/`null`/near-miss Origins, DNS-rebinding
 * and malformed Host values, HEAD/OPTIONS, method-override headers and
 * absolute-form request targets. Every refusal is the fixed envelope and no
 * attempt creates, renames or deletes anything.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login, type LoginSession, readBootstrapToken } from "../helpers/login.ts";
import { rawRequest, type RawResponse } from "../helpers/raw_http.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";

function code(r: RawResponse): string | null {
  try {
    return JSON.parse(r.body)?.error?.code ?? null;
  } catch {
    return null;
  }
}

async function agentNames(s: ServerHandle, session: LoginSession): Promise<string[]> {
  const r = await rawRequest(s.port, {
    method: "GET",
    path: "/api/agents",
    headers: [["cookie", session.cookie]],
  });
  return JSON.parse(r.body).agents.map((a: { name: string }) => a.name).sort();
}

Deno.test("cross-origin, rebinding and override attacks are refused and act on nothing", async (t) => {
  const s = await startTestServer();
  try {
    const session = await login(s);
    const before = await agentNames(s, session);
    const host = `127.0.0.1:${s.port}`;
    const body = JSON.stringify({ name: "csrf" });

    await t.step(
      "simple-request CSRF from a foreign page is 403 whatever the Content-Type",
      async () => {
        for (const type of ["text/plain", "application/x-www-form-urlencoded", null]) {
          const headers: [string, string][] = [["cookie", session.cookie], [
            "origin",
            "http://evil.example",
          ]];
          if (type) headers.push(["content-type", type]);
          headers.push(["content-length", String(body.length)]);
          const r = await rawRequest(s.port, {
            method: "POST",
            path: "/api/agents",
            headers,
            body,
          });
          assertEquals(r.status, 403, `${type}`);
          assert(["csrf_failed", "origin_forbidden"].includes(code(r)!), r.body);
        }
      },
    );

    await t.step("with the right CSRF token, a non-JSON body is still 415", async () => {
      for (const type of ["text/plain", "application/x-www-form-urlencoded", null]) {
        const headers: [string, string][] = [
          ["cookie", session.cookie],
          ["x-csrf-token", session.csrf],
          ["origin", s.origin],
          ["content-length", String(body.length)],
        ];
        if (type) headers.push(["content-type", type]);
        const r = await rawRequest(s.port, { method: "POST", path: "/api/agents", headers, body });
        assertEquals([r.status, code(r)], [415, "unsupported_media_type"], `${type}`);
      }
    });

    await t.step("null, near-miss and missing Origins are refused on state changes", async () => {
      const origins = [
        "null",
        `https://${host}`,
        `http://127.0.0.1:${s.port + 1}`,
        `http://${host}/`,
        `http://${host}.evil.example`,
        `http://127.0.0.1`,
        `http://user@${host}`,
        null,
      ];
      for (const origin of origins) {
        const headers: [string, string][] = [
          ["cookie", session.cookie],
          ["x-csrf-token", session.csrf],
          ["content-type", "application/json"],
          ["content-length", String(body.length)],
        ];
        if (origin !== null) headers.push(["origin", origin]);
        const r = await rawRequest(s.port, { method: "POST", path: "/api/agents", headers, body });
        assertEquals([r.status, code(r)], [403, "origin_forbidden"], `${origin}`);
      }
      // Reads refuse a foreign Origin too, and Sec-Fetch-Site cross-site/same-site.
      for (
        const h of [["origin", "http://evil.example"], ["sec-fetch-site", "cross-site"], [
          "sec-fetch-site",
          "same-site",
        ]] as [string, string][]
      ) {
        const r = await rawRequest(s.port, {
          method: "GET",
          path: "/api/session",
          headers: [["cookie", session.cookie], h],
        });
        assertEquals([r.status, code(r)], [403, "origin_forbidden"], h.join(": "));
      }
    });

    await t.step(
      "DNS-rebinding and malformed Host values are 403 even with a session",
      async () => {
        const hosts = [
          "evil.example",
          `evil.example:${s.port}`,
          `127.0.0.1.nip.io:${s.port}`,
          `user@${host}`,
          `127.0.0.1.:${s.port}`,
          `localhost.:${s.port}`,
          `127.0.0.1:${s.port}.`,
          `127.0.0.1:0${s.port}`,
          "127.0.0.1",
          `0x7f000001:${s.port}`,
          `[::1]:${s.port}`,
        ];
        for (const h of hosts) {
          const r = await rawRequest(s.port, {
            method: "GET",
            path: "/api/session",
            headers: [["host", h], ["cookie", session.cookie]],
          });
          assertEquals([r.status, code(r)], [403, "host_forbidden"], h);
        }
        // A Host that would move the routed path (`#`, `?`, `/`) or cannot be
        // parsed is refused before routing, on public routes too (was a 500 or
        // the UI served for /health).
        for (const h of [`${host}#`, `${host}?`, `${host}/x`, `${host}.`, "a b", "[::1", "%41"]) {
          const r = await rawRequest(s.port, {
            method: "GET",
            path: "/health",
            headers: [["host", h]],
          });
          assertEquals([r.status, code(r)], [403, "host_forbidden"], h);
        }
        // Two Host headers: never the allowed one picked out of a pair.
        const twice = await rawRequest(s.port, {
          method: "GET",
          path: "/api/session",
          headers: [["host", "evil.example"], ["host", host], ["cookie", session.cookie]],
        });
        assert(twice.status === 400 || twice.status === 403, `double Host: ${twice.status}`);
        assert(!twice.body.includes(session.csrf));
      },
    );

    await t.step("an absolute-form target naming another host does not bypass Host", async () => {
      const r = await rawRequest(s.port, {
        method: "GET",
        path: `http://evil.example/api/session`,
        headers: [["host", "evil.example"], ["cookie", session.cookie]],
      });
      assert(r.status === 400 || r.status === 403, `${r.status}`);
      assert(!r.body.includes(session.csrf));
      // The target's authority is the request's host (RFC 9112 §3.2.2): an allowed
      // Host header beside a foreign absolute-form target is refused too.
      const smuggled = await rawRequest(s.port, {
        method: "GET",
        path: `http://evil.example:${s.port}/api/session`,
        headers: [["host", host], ["cookie", session.cookie]],
      });
      assertEquals([smuggled.status, code(smuggled)], [403, "host_forbidden"]);
      assert(!smuggled.body.includes(session.csrf));
      const own = await rawRequest(s.port, {
        method: "GET",
        path: `http://${host}/api/session`,
        headers: [["host", host], ["cookie", session.cookie]],
      });
      assertEquals(own.status, 200, "an absolute-form target naming this server still works");
    });

    await t.step(
      "a decoy session cookie tossed by another port of this host does not lock the operator out",
      async () => {
        // Cookies ignore ports: a page on 127.0.0.1:<other> can set
        // ab_session_<our port> with a longer Path, which the browser sends first.
        const name = session.cookie.split("=")[0];
        const decoy = `${name}=${"A".repeat(43)}`;
        const r = await rawRequest(s.port, {
          method: "GET",
          path: "/api/session",
          headers: [["cookie", `${decoy}; other=1; ${session.cookie}`]],
        });
        assertEquals(r.status, 200, r.body);
        assertEquals(JSON.parse(r.body).csrf_token, session.csrf);
        const onlyDecoy = await rawRequest(s.port, {
          method: "GET",
          path: "/api/session",
          headers: [["cookie", decoy]],
        });
        assertEquals([onlyDecoy.status, code(onlyDecoy)], [401, "unauthorized"]);
      },
    );

    await t.step("OPTIONS is 405 with no CORS grant; HEAD runs the GET checks", async () => {
      const opt = await rawRequest(s.port, {
        method: "OPTIONS",
        path: "/api/agents",
        headers: [
          ["origin", "http://evil.example"],
          ["access-control-request-method", "POST"],
          ["access-control-request-headers", "x-csrf-token, content-type"],
        ],
      });
      assertEquals([opt.status, code(opt)], [405, "method_not_allowed"]);
      for (const [k] of opt.headers) assert(!k.startsWith("access-control-"), k);
      const anon = await rawRequest(s.port, { method: "HEAD", path: "/api/session" });
      assertEquals(anon.status, 401);
      const foreign = await rawRequest(s.port, {
        method: "HEAD",
        path: "/api/session",
        headers: [["host", "evil.example"], ["cookie", session.cookie]],
      });
      assertEquals(foreign.status, 403);
    });

    await t.step("method-override headers never turn a read into a state change", async () => {
      const made = await fetch(`${s.url}/api/agents`, {
        method: "POST",
        headers: session.headers(),
        body: JSON.stringify({ name: "victim" }),
      });
      const id = (await made.json()).agent.id;
      for (const h of ["x-http-method-override", "x-http-method", "x-method-override"]) {
        const r = await rawRequest(s.port, {
          method: "GET",
          path: `/api/agents/${id}?_method=DELETE`,
          headers: [["cookie", session.cookie], [h, "DELETE"]],
        });
        assertEquals(r.status, 200, h);
        const p = await rawRequest(s.port, {
          method: "POST",
          path: `/api/agents/${id}`,
          headers: [
            ["cookie", session.cookie],
            ["x-csrf-token", session.csrf],
            [
              "origin",
              s.origin,
            ],
            [h, "DELETE"],
            ["content-length", "0"],
          ],
        });
        assertEquals([p.status, code(p)], [405, "method_not_allowed"], h);
      }
      const still = await fetch(`${s.url}/api/agents/${id}`, { headers: session.headers() });
      assertEquals(still.status, 200);
      await still.body?.cancel();
      assertEquals(await agentNames(s, session), [...before, "victim"].sort());
    });

    await t.step("the log holds no secret, home path or attacker-chosen header text", async () => {
      await s.stop();
      const log = Deno.readTextFileSync(`${s.home}/.runtime/control-plane/server.log`);
      const secrets = [readBootstrapToken(s.home), session.cookie.split("=")[1], session.csrf];
      for (const needle of [...secrets, s.home, "evil.example", "nip.io", "x-http-method"]) {
        assert(!log.includes(needle), `server.log holds ${needle.slice(0, 12)}`);
      }
      assert(!/\n\s+at .+:\d+:\d+/.test(log), "server.log holds a stack trace");
    });
  } finally {
    await s.stop();
  }
});
