/**
 * §13 change-set routes [EX-4]: `GET /api/agents/<agent>/runs/<run>/changes`
 * and `GET …/changes/diff?path=` (session auth, read-only).
 *
 * What this file enforces: strict query parameters (`call_id` optional on
 * both, `path` required on the diff and ≤ 1024 bytes); malformed ids are
 * unknown ids (404). The logic lives in runtime/exec/change_queries.ts.
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import { changesOf, diffOf } from "../exec/change_queries.ts";
import { PATH_BYTES_MAX } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { ChangeDiffResponse, ChangesResponse } from "../protocol/api.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

/** Query schemas, checked by the server before the handler (unknown or repeated names: 422). */
const ChangesQuery = z.object({ call_id: z.string().optional() }).strict();
const DiffQuery = z.object({ call_id: z.string().optional(), path: z.string() }).strict();
type ChangesQuery = z.infer<typeof ChangesQuery>;

function params(ctx: RouteContext<unknown, ChangesQuery>) {
  const run = ctx.params.run;
  if (!isValidId(run)) throw new AppError("run_not_found");
  const callId = ctx.query.call_id ?? null;
  if (callId !== null && !/^call-[0-9]{1,4}$/.test(callId)) {
    throw new AppError("change_set_not_found");
  }
  return { agent: agentParam(ctx), run, callId };
}

export function changeRoutes(deps: { stateDb(agentId: string): DatabaseSync }): ProductRoute[] {
  const run = "/api/agents/:agent/runs/:run";
  return [
    {
      method: "GET",
      path: `${run}/changes`,
      auth: "session",
      query: ChangesQuery,
      response: ChangesResponse,
      handler: (ctx: RouteContext<unknown, ChangesQuery>) => {
        const p = params(ctx);
        return reply(ChangesResponse, changesOf(deps.stateDb(p.agent), p.run, p.callId));
      },
    },
    {
      method: "GET",
      path: `${run}/changes/diff`,
      auth: "session",
      query: DiffQuery,
      response: ChangeDiffResponse,
      handler: (ctx: RouteContext<unknown, z.infer<typeof DiffQuery>>) => {
        const p = params(ctx);
        const path = ctx.query.path;
        if (path.length === 0 || utf8Bytes(path) > PATH_BYTES_MAX) {
          throw new AppError("schema_violation", "path");
        }
        return reply(ChangeDiffResponse, diffOf(deps.stateDb(p.agent), p.run, p.callId, path));
      },
    },
  ];
}
