import { createRouter, type Route } from "../../runtime/http/router.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";

const h = () => new Response("");
const routes: Route[] = [
  { method: "GET", path: "/api/agents", auth: "session", handler: h },
  { method: "POST", path: "/api/agents", auth: "csrf", handler: h },
  { method: "GET", path: "/api/agents/:agent", auth: "session", handler: h },
  { method: "GET", path: "/api/agents/:agent/sessions/:conv", auth: "session", handler: h },
];

Deno.test("createRouter matches literal and parameter segments", () => {
  const m = createRouter(routes);
  const r = m("GET", "/api/agents/abc/sessions/def");
  assert(r.kind === "found");
  assertEquals({ ...r.match.params }, { agent: "abc", conv: "def" });
  assertEquals(m("GET", "/api/agents").kind, "found");
  const head = m("HEAD", "/api/agents");
  assert(head.kind === "found" && head.match.route.method === "GET");
});

Deno.test("createRouter separates unknown paths from wrong methods", () => {
  const m = createRouter(routes);
  assertEquals(m("GET", "/api/agentsx").kind, "not_found");
  assertEquals(m("GET", "/api/agents/").kind, "not_found");
  assertEquals(m("GET", "/api/agents/a/sessions").kind, "not_found");
  const r = m("DELETE", "/api/agents");
  assert(r.kind === "method_not_allowed");
  assertEquals(r.allow.sort(), ["GET", "POST"]);
});

Deno.test("createRouter refuses empty, oversize and malformed parameters", () => {
  const m = createRouter(routes);
  assertEquals(m("GET", "/api/agents//sessions/x").kind, "not_found");
  assertEquals(m("GET", `/api/agents/${"a".repeat(129)}`).kind, "not_found");
  assertEquals(m("GET", "/api/agents/%E0%A4%A").kind, "not_found");
  const enc = m("GET", "/api/agents/..%2Fetc");
  assert(enc.kind === "found");
  assertEquals(enc.match.params.agent, "../etc"); // decoded; id validation rejects it later
});

Deno.test("createRouter rejects duplicate routes at build time", () => {
  assertThrows(() => createRouter([...routes, routes[0]]));
});
