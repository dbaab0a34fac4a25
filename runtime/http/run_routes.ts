/**
 * §13 Run routes: submit a Turn, live SSE with durable fallback, replay,
 * cancel, context inspection, NextTurnProjection, preparation state and
 * cancel,
 * capability audit and pending approvals.
 *
 * What this file enforces: strict zod bodies (unknown fields 422) and strict
 * query parameters (none where the SPEC names none — `…/context` takes no
 * query at all); malformed ids are unknown ids (404); state changes are
 * `csrf` routes, reads `session` routes; every response is JSON except the
 * SSE stream. The product logic lives in runtime/runs/.
 */
import { z } from "zod";
import { isModelName } from "../protocol/model_name.ts";
import { AppError } from "../errors.ts";
import { JSON_BODY_MAX_BYTES } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import type { RunQueries } from "../runs/run_queries.ts";
import type { RunService } from "../runs/run_service.ts";
import { agentParam } from "./agent_routes.ts";
import { json } from "./headers.ts";
import type { Route, RouteContext } from "./router.ts";

export const SubmitRunBody = z.object({
  // The 8192-byte bound is the service's (413 message_too_large for every over-long
  // message, ASCII or not); this caps only what a 16 KiB body could hold, so 8193 ASCII
  // bytes are never a 422.
  message: z.string().min(1).max(JSON_BODY_MAX_BYTES),
  // Checked against the grammar and the catalog by the service (422 model_unknown) [MB-14].
  model_id: z.string().max(1024).optional(),
  compact: z.boolean().optional(),
}).strict();
export type SubmitRunBody = z.infer<typeof SubmitRunBody>;

export const CancelPreparationBody = z.object({ operation_id: z.string().min(1).max(64) })
  .strict();
export type CancelPreparationBody = z.infer<typeof CancelPreparationBody>;

export const DecisionBody = z.object({ decision: z.enum(["approve", "deny"]) }).strict();
export type DecisionBody = z.infer<typeof DecisionBody>;

function idParam(
  ctx: RouteContext<unknown>,
  name: string,
  code: "run_not_found" | "conversation_not_found" | "permission_not_found",
): string {
  const id = ctx.params[name];
  if (!isValidId(id)) throw new AppError(code);
  return id;
}

/** Only the named query parameters, each at most once. */
function query(url: URL, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of url.searchParams) {
    if (!allowed.includes(k) || Object.hasOwn(out, k)) {
      throw new AppError("schema_violation", "query parameter");
    }
    out[k] = v;
  }
  return out;
}

export function runRoutes(deps: { runs: RunService; queries: RunQueries }): Route[] {
  const { runs, queries } = deps;
  const sessions = "/api/agents/:agent/sessions/:conv";
  const run = "/api/agents/:agent/runs/:run";
  return [
    {
      method: "POST",
      path: `${sessions}/runs`,
      auth: "csrf",
      body: SubmitRunBody,
      handler: async (ctx: RouteContext<SubmitRunBody>) => {
        query(ctx.url, []);
        const r = await runs.submit(
          agentParam(ctx),
          idParam(ctx, "conv", "conversation_not_found"),
          ctx.body,
        );
        return json(r, 202);
      },
    },
    {
      method: "GET",
      path: `${sessions}/context-preview`,
      auth: "session",
      handler: async (ctx) => {
        const q = query(ctx.url, ["model_id"]);
        if (q.model_id !== undefined && !isModelName(q.model_id)) {
          throw new AppError("model_unknown", "model_id");
        }
        return json(
          await queries.preview(
            agentParam(ctx),
            idParam(ctx, "conv", "conversation_not_found"),
            q.model_id ?? null,
          ),
        );
      },
    },
    {
      method: "GET",
      path: `${sessions}/preparation`,
      auth: "session",
      handler: (ctx) => {
        query(ctx.url, []);
        return json(
          queries.preparation(agentParam(ctx), idParam(ctx, "conv", "conversation_not_found")),
        );
      },
    },
    {
      method: "POST",
      path: `${sessions}/preparation/cancel`,
      auth: "csrf",
      body: CancelPreparationBody,
      handler: (ctx: RouteContext<CancelPreparationBody>) => {
        query(ctx.url, []);
        const agent = agentParam(ctx);
        const conv = idParam(ctx, "conv", "conversation_not_found");
        // A malformed id can never name an operation: it is an unknown one.
        const id = ctx.body.operation_id;
        if (!isValidId(id)) throw new AppError("preparation_not_found");
        return json(queries.cancelPreparation(agent, conv, id), 202);
      },
    },
    {
      method: "GET",
      path: `${run}/events`,
      auth: "session",
      handler: (ctx) => {
        query(ctx.url, []);
        return queries.events(
          agentParam(ctx),
          idParam(ctx, "run", "run_not_found"),
          ctx.req.headers.get("last-event-id"),
          ctx.signal,
        );
      },
    },
    {
      method: "GET",
      path: `${run}/replay`,
      auth: "session",
      handler: (ctx) => {
        const q = query(ctx.url, ["cursor"]);
        return json(
          queries.replay(agentParam(ctx), idParam(ctx, "run", "run_not_found"), q.cursor ?? null),
        );
      },
    },
    {
      method: "POST",
      path: `${run}/cancel`,
      auth: "csrf",
      handler: (ctx) => {
        query(ctx.url, []);
        return json(runs.cancel(agentParam(ctx), idParam(ctx, "run", "run_not_found")), 202);
      },
    },
    {
      method: "GET",
      path: `${run}/context`,
      auth: "session",
      handler: (ctx) => {
        query(ctx.url, []);
        return json(queries.context(agentParam(ctx), idParam(ctx, "run", "run_not_found")));
      },
    },
    {
      method: "GET",
      path: `${run}/capability-audit`,
      auth: "session",
      handler: (ctx) => {
        const q = query(ctx.url, ["offset"]);
        return json(
          queries.audit(agentParam(ctx), idParam(ctx, "run", "run_not_found"), q.offset ?? null),
        );
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/permissions",
      auth: "session",
      handler: (ctx) => {
        query(ctx.url, []);
        return json(queries.permissions(agentParam(ctx)));
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/permissions/:id",
      auth: "csrf",
      body: DecisionBody,
      handler: (ctx: RouteContext<DecisionBody>) => {
        query(ctx.url, []);
        return json(
          queries.decide(
            agentParam(ctx),
            idParam(ctx, "id", "permission_not_found"),
            ctx.body.decision,
          ),
        );
      },
    },
  ];
}
