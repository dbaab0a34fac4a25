/**
 * §13 Run routes: submit a Turn, live SSE with durable fallback, replay,
 * cancel, context inspection, NextTurnProjection, preparation state and
 * cancel,
 * capability audit and pending approvals.
 *
 * What this file enforces: strict zod bodies (unknown fields 422) and strict
 * query schemas (none where the SPEC names none — `…/context` takes no query
 * at all); malformed ids are unknown ids (404); state changes are `csrf`
 * routes, reads `session` routes; every response is JSON through its
 * runtime/protocol/api.ts schema except the SSE stream. The product logic
 * lives in runtime/runs/.
 */
import { z } from "zod";
import { isModelName } from "../protocol/model_name.ts";
import { AppError } from "../errors.ts";
import { JSON_BODY_MAX_BYTES } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import type { RunQueries } from "../runs/run_queries.ts";
import type { RunService } from "../runs/run_service.ts";
import { agentParam } from "./agent_routes.ts";
import {
  CancelPreparationResponse,
  CancelRunResponse,
  CapabilityAuditResponse,
  ContextPreviewResponse,
  DecisionResponse,
  PermissionDiffResponse,
  PermissionsResponse,
  PreparationResponse,
  ReplayResponse,
  RunContextResponse,
  SubmitRunResponse,
} from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";
import { NoQuery } from "./body.ts";

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

export const DecisionBody = z.object({
  decision: z.enum(["approve", "deny"]),
  /** [TL-10] Approve and add the approval's narrowed allow rule to the Agent's policy. */
  always_allow: z.literal(true).optional(),
}).strict();
export type DecisionBody = z.infer<typeof DecisionBody>;

function idParam(
  ctx: Pick<RouteContext, "params">,
  name: string,
  code: "run_not_found" | "conversation_not_found" | "permission_not_found",
): string {
  const id = ctx.params[name];
  if (!isValidId(id)) throw new AppError(code);
  return id;
}

/** No query parameter at all. */
const PreviewQuery = z.object({
  // Checked by the handler (model_unknown, like the body's model_id).
  model_id: z.string().max(1024).optional(),
}).strict();
type PreviewQuery = z.infer<typeof PreviewQuery>;
// Range checks stay with the service (they answer the same 422 for every bad value).
const ReplayQuery = z.object({ cursor: z.string().optional() }).strict();
type ReplayQuery = z.infer<typeof ReplayQuery>;
const AuditQuery = z.object({ offset: z.string().optional() }).strict();
type AuditQuery = z.infer<typeof AuditQuery>;

export function runRoutes(deps: { runs: RunService; queries: RunQueries }): ProductRoute[] {
  const { runs, queries } = deps;
  const sessions = "/api/agents/:agent/sessions/:conv";
  const run = "/api/agents/:agent/runs/:run";
  return [
    {
      method: "POST",
      path: `${sessions}/runs`,
      auth: "csrf",
      body: SubmitRunBody,
      query: NoQuery,
      response: SubmitRunResponse,
      handler: async (ctx: RouteContext<SubmitRunBody>) => {
        const r = await runs.submit(
          agentParam(ctx),
          idParam(ctx, "conv", "conversation_not_found"),
          ctx.body,
        );
        return reply(SubmitRunResponse, r, 202);
      },
    },
    {
      method: "GET",
      path: `${sessions}/context-preview`,
      auth: "session",
      query: PreviewQuery,
      response: ContextPreviewResponse,
      handler: async (ctx: RouteContext<unknown, PreviewQuery>) => {
        // A malformed name can never be a catalog entry: model_unknown, like an unknown one.
        if (ctx.query.model_id !== undefined && !isModelName(ctx.query.model_id)) {
          throw new AppError("model_unknown", "model_id");
        }
        return reply(
          ContextPreviewResponse,
          await queries.preview(
            agentParam(ctx),
            idParam(ctx, "conv", "conversation_not_found"),
            ctx.query.model_id ?? null,
          ),
        );
      },
    },
    {
      method: "GET",
      path: `${sessions}/preparation`,
      auth: "session",
      query: NoQuery,
      response: PreparationResponse,
      handler: (ctx) => {
        return reply(
          PreparationResponse,
          queries.preparation(agentParam(ctx), idParam(ctx, "conv", "conversation_not_found")),
        );
      },
    },
    {
      method: "POST",
      path: `${sessions}/preparation/cancel`,
      auth: "csrf",
      body: CancelPreparationBody,
      query: NoQuery,
      response: CancelPreparationResponse,
      handler: (ctx: RouteContext<CancelPreparationBody>) => {
        const agent = agentParam(ctx);
        const conv = idParam(ctx, "conv", "conversation_not_found");
        // A malformed id can never name an operation: it is an unknown one.
        const id = ctx.body.operation_id;
        if (!isValidId(id)) throw new AppError("preparation_not_found");
        return reply(CancelPreparationResponse, queries.cancelPreparation(agent, conv, id), 202);
      },
    },
    {
      method: "GET",
      path: `${run}/events`,
      auth: "session",
      query: NoQuery,
      // An event stream, not JSON: each event is an EventEnvelopeSchema (runtime/protocol/api.ts).
      response: null,
      handler: (ctx) => {
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
      query: ReplayQuery,
      response: ReplayResponse,
      handler: (ctx: RouteContext<unknown, ReplayQuery>) => {
        return reply(
          ReplayResponse,
          queries.replay(
            agentParam(ctx),
            idParam(ctx, "run", "run_not_found"),
            ctx.query.cursor ?? null,
          ),
        );
      },
    },
    {
      method: "POST",
      path: `${run}/cancel`,
      auth: "csrf",
      query: NoQuery,
      response: CancelRunResponse,
      handler: (ctx) => {
        return reply(
          CancelRunResponse,
          runs.cancel(agentParam(ctx), idParam(ctx, "run", "run_not_found")),
          202,
        );
      },
    },
    {
      method: "GET",
      path: `${run}/context`,
      auth: "session",
      query: NoQuery,
      response: RunContextResponse,
      handler: (ctx) => {
        return reply(
          RunContextResponse,
          queries.context(agentParam(ctx), idParam(ctx, "run", "run_not_found")),
        );
      },
    },
    {
      method: "GET",
      path: `${run}/capability-audit`,
      auth: "session",
      query: AuditQuery,
      response: CapabilityAuditResponse,
      handler: (ctx: RouteContext<unknown, AuditQuery>) => {
        return reply(
          CapabilityAuditResponse,
          queries.audit(
            agentParam(ctx),
            idParam(ctx, "run", "run_not_found"),
            ctx.query.offset ?? null,
          ),
        );
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/permissions",
      auth: "session",
      query: NoQuery,
      response: PermissionsResponse,
      handler: (ctx) => {
        return reply(PermissionsResponse, queries.permissions(agentParam(ctx)));
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/permissions/:id",
      auth: "csrf",
      body: DecisionBody,
      query: NoQuery,
      response: DecisionResponse,
      handler: (ctx: RouteContext<DecisionBody>) => {
        return reply(
          DecisionResponse,
          queries.decide(
            agentParam(ctx),
            idParam(ctx, "id", "permission_not_found"),
            ctx.body.decision,
            ctx.body.always_allow === true,
          ),
        );
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/permissions/:id/diff",
      auth: "session",
      query: NoQuery,
      response: PermissionDiffResponse,
      handler: (ctx) =>
        reply(
          PermissionDiffResponse,
          queries.permissionDiff(agentParam(ctx), idParam(ctx, "id", "permission_not_found")),
        ),
    },
  ];
}
