/** Allowed Host and exact same-origin decisions [GW-1, GW-3] as a case table. */
import { allowedHosts, checkOrigin, type OriginVerdict } from "../../runtime/http/origin.ts";
import { readCookie, readCookies } from "../../runtime/http/gateway.ts";
import { assertEquals } from "../helpers/assert.ts";

const noNames = { addresses: [], machineName: null };

Deno.test("a loopback bind allows its address and localhost with the bound port only", () => {
  assertEquals(
    [...allowedHosts({ hostname: "127.0.0.1", port: 20815 }, noNames)].sort(),
    ["127.0.0.1:20815", "localhost:20815"],
  );
  assertEquals(
    [...allowedHosts({ hostname: "::1", port: 8080 }, noNames)].sort(),
    ["[::1]:8080", "localhost:8080"],
  );
  assertEquals([...allowedHosts({ hostname: "192.168.1.5", port: 80 }, noNames)].sort(), [
    "192.168.1.5",
    "192.168.1.5:80",
  ]);
});

Deno.test("a wildcard bind allows interface addresses and the machine name", () => {
  const names = { addresses: ["127.0.0.1", "10.1.2.3", "fe80::1"], machineName: "Box" };
  assertEquals([...allowedHosts({ hostname: "0.0.0.0", port: 1 }, names)].sort(), [
    "10.1.2.3:1",
    "127.0.0.1:1",
    "box:1",
    "localhost:1",
  ]);
  assertEquals(allowedHosts({ hostname: "::", port: 1 }, names).has("[fe80::1]:1"), true);
});

Deno.test("checkOrigin decides exactly", () => {
  const allowed = allowedHosts({ hostname: "127.0.0.1", port: 9000 }, noNames);
  const cases: [string | null, string | null, string | null, boolean, OriginVerdict][] = [
    // host, origin, sec-fetch-site, requireOrigin, verdict
    ["127.0.0.1:9000", "http://127.0.0.1:9000", null, true, "ok"],
    ["localhost:9000", "http://localhost:9000", "same-origin", true, "ok"],
    ["LOCALHOST:9000", "http://localhost:9000", null, true, "ok"],
    ["127.0.0.1:9000", null, null, false, "ok"],
    ["127.0.0.1:9000", null, "none", false, "ok"],
    ["127.0.0.1:9000", null, null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "null", null, false, "origin_forbidden"],
    ["127.0.0.1:9000", "http://localhost:9000", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "https://127.0.0.1:9000", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1:9000/", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1:90001", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1:9000.evil", null, true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1:9000", "cross-site", true, "origin_forbidden"],
    ["127.0.0.1:9000", "http://127.0.0.1:9000", "same-site", false, "origin_forbidden"],
    [null, "http://127.0.0.1:9000", null, true, "host_forbidden"],
    ["", null, null, false, "host_forbidden"],
    ["127.0.0.1", "http://127.0.0.1", null, true, "host_forbidden"],
    ["127.0.0.1:9001", "http://127.0.0.1:9001", null, true, "host_forbidden"],
    ["evil.example:9000", "http://evil.example:9000", null, true, "host_forbidden"],
    ["127.0.0.1:9000@evil", null, null, false, "host_forbidden"],
  ];
  for (const [host, origin, secFetchSite, requireOrigin, verdict] of cases) {
    assertEquals(
      checkOrigin({ host, origin, secFetchSite }, allowed, requireOrigin),
      verdict,
      `${host} ${origin} ${secFetchSite} ${requireOrigin}`,
    );
  }
});

Deno.test("nothing is allowed before the listener is bound", () => {
  assertEquals(
    checkOrigin({ host: "127.0.0.1:1", origin: null, secFetchSite: null }, new Set(), false),
    "host_forbidden",
  );
});

Deno.test("readCookie finds only the exact cookie name", () => {
  assertEquals(readCookie("a=1; ab_session_1=xyz; b=2", "ab_session_1"), "xyz");
  assertEquals(readCookie("ab_session_12=xyz", "ab_session_1"), null);
  assertEquals(readCookie("xab_session_1=xyz", "ab_session_1"), null);
  assertEquals(readCookie(null, "ab_session_1"), null);
  assertEquals(readCookie("ab_session_1", "ab_session_1"), null);
});

Deno.test("readCookies returns every value of the exact cookie name, in header order", () => {
  assertEquals(readCookies("ab_session_1=decoy; a=1; ab_session_1=real", "ab_session_1"), [
    "decoy",
    "real",
  ]);
  assertEquals(readCookies("ab_session_12=x; xab_session_1=y", "ab_session_1"), []);
  assertEquals(readCookies(null, "ab_session_1"), []);
});

Deno.test("an IPv6 loopback bind matches its bracketed literal exactly", () => {
  const allowed = allowedHosts({ hostname: "::1", port: 8080 }, noNames);
  const cases: [string, string | null, OriginVerdict][] = [
    ["[::1]:8080", "http://[::1]:8080", "ok"],
    ["localhost:8080", "http://localhost:8080", "ok"],
    ["[::1]:8080", "http://[0:0:0:0:0:0:0:1]:8080", "origin_forbidden"],
    ["[::1]:8080", "http://127.0.0.1:8080", "origin_forbidden"],
    ["[0::1]:8080", "http://[0::1]:8080", "host_forbidden"],
    ["[::1]", "http://[::1]", "host_forbidden"],
    ["::1:8080", "http://::1:8080", "host_forbidden"],
    ["127.0.0.1:8080", "http://127.0.0.1:8080", "host_forbidden"],
    ["[::1]:8080.", "http://[::1]:8080.", "host_forbidden"],
  ];
  for (const [host, origin, verdict] of cases) {
    assertEquals(checkOrigin({ host, origin, secFetchSite: null }, allowed, true), verdict, host);
  }
});
