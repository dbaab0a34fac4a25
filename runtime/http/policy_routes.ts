/**
 * Per-Agent policy routes [TL-9, §22]: `GET /api/agents/<agent>/policy`
 * (session) — the rules, the platform's denies, every tool of the Agent's
 * catalog with its effective decision and why, and the newest changes — and
 * `PUT /api/agents/<agent>/policy {rules}` (CSRF), which replaces the rules
 * whole or refuses with a fixed 422 code and nothing changed.
 */
import { PolicyBody, PolicyResponse } from "../protocol/api.ts";
import type { PolicyService } from "../tools/policy_service.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

export function policyRoutes(deps: { policy: PolicyService }): ProductRoute[] {
  const { policy } = deps;
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/policy",
      auth: "session",
      response: PolicyResponse,
      handler: (ctx) => reply(PolicyResponse, policy.view(agentParam(ctx))),
    },
    {
      method: "PUT",
      path: "/api/agents/:agent/policy",
      auth: "csrf",
      body: PolicyBody,
      response: PolicyResponse,
      handler: (ctx: RouteContext<PolicyBody>) =>
        reply(PolicyResponse, policy.put(agentParam(ctx), ctx.body.rules)),
    },
  ];
}
