/**
 * `GET /api/runners` [LC-6, §22] (session): the operator's registered ACP
 * runners — name, argv and the names (never the values) of the environment
 * each runner gets. Binding is `PATCH /api/agents/<agent> {runner}`.
 */
import type { AcpService } from "../acp/service.ts";
import { RunnersResponse } from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";

export function runnerRoutes(deps: { acp: AcpService }): ProductRoute[] {
  return [
    {
      method: "GET",
      path: "/api/runners",
      auth: "session",
      response: RunnersResponse,
      handler: () => reply(RunnersResponse, { runners: deps.acp.list() }),
    },
  ];
}
