/**
 * §13 change-set routes [EX-4]: `GET /api/agents/<agent>/runs/<run>/changes`
 * and `GET …/changes/diff?path=` (session auth, read-only).
 *
 * What this file enforces: strict query parameters (`call_id` optional on
 * both, `path` required on the diff and ≤ 1024 bytes); malformed ids are
 * unknown ids (404). The logic lives in runtime/exec/change_queries.ts.
 */
import { AppError } from "../errors.ts";
import { changesOf, diffOf } from "../exec/change_queries.ts";
import { PATH_BYTES_MAX } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { agentParam } from "./agent_routes.ts";
import { json } from "./headers.ts";
import type { Route, RouteContext } from "./router.ts";

function params(ctx: RouteContext<unknown>, allowed: readonly string[]) {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of ctx.url.searchParams) {
    if (!allowed.includes(k) || Object.hasOwn(out, k)) {
      throw new AppError("schema_violation", "query parameter");
    }
    out[k] = v;
  }
  const run = ctx.params.run;
  if (!isValidId(run)) throw new AppError("run_not_found");
  const callId = out.call_id ?? null;
  if (callId !== null && !/^call-[0-9]{1,4}$/.test(callId)) {
    throw new AppError("change_set_not_found");
  }
  return { agent: agentParam(ctx), run, callId, q: out };
}

export function changeRoutes(deps: { stateDb(agentId: string): DatabaseSync }): Route[] {
  const run = "/api/agents/:agent/runs/:run";
  return [
    {
      method: "GET",
      path: `${run}/changes`,
      auth: "session",
      handler: (ctx) => {
        const p = params(ctx, ["call_id"]);
        return json(changesOf(deps.stateDb(p.agent), p.run, p.callId));
      },
    },
    {
      method: "GET",
      path: `${run}/changes/diff`,
      auth: "session",
      handler: (ctx) => {
        const p = params(ctx, ["call_id", "path"]);
        const path = p.q.path;
        if (path === undefined || path.length === 0 || utf8Bytes(path) > PATH_BYTES_MAX) {
          throw new AppError("schema_violation", "path");
        }
        return json(diffOf(deps.stateDb(p.agent), p.run, p.callId, path));
      },
    },
  ];
}
