/**
 * `/compact` routes [CX-9] (all CSRF):
 * - `POST …/sessions/<conv>/compactions {model_id?}` — the model writes a
 *   summary of the older history; 201 with it `pending` (nothing is used yet).
 *   Failure, timeout or an answer over 8 KiB: its fixed code, nothing stored.
 * - `POST …/compactions/<id>/keep | drop | undo` — the operator's decision;
 *   a decision that no longer applies is `compaction_decided` (409).
 * A foreign or malformed Conversation or compaction id is 404.
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import { isModelName } from "../protocol/model_name.ts";
import { isValidId } from "../path_safety.ts";
import { CompactionResponse } from "../protocol/api.ts";
import type { CompactService } from "../commands/compact_service.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";
import { NoQuery } from "./body.ts";

export const CompactBody = z.object({ model_id: z.string().max(1024).optional() }).strict();
export type CompactBody = z.infer<typeof CompactBody>;
const Empty = z.object({}).strict();

function conv(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.conv;
  if (!isValidId(id)) throw new AppError("conversation_not_found");
  return id;
}

function compactionId(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.id;
  if (!isValidId(id)) throw new AppError("compaction_not_found");
  return id;
}

export function compactionRoutes(deps: { compact: CompactService }): ProductRoute[] {
  const base = "/api/agents/:agent/sessions/:conv/compactions";
  const decision = (verb: "keep" | "drop" | "undo"): ProductRoute => ({
    method: "POST",
    path: `${base}/:id/${verb}`,
    auth: "csrf",
    body: Empty,
    query: NoQuery,
    response: CompactionResponse,
    handler: (ctx: RouteContext) =>
      reply(CompactionResponse, {
        compaction: deps.compact[verb](agentParam(ctx), conv(ctx), compactionId(ctx)),
      }),
  });
  return [
    {
      method: "POST",
      path: base,
      auth: "csrf",
      body: CompactBody,
      query: NoQuery,
      response: CompactionResponse,
      handler: async (ctx: RouteContext<CompactBody>) => {
        const model = ctx.body.model_id ?? null;
        if (model !== null && !isModelName(model)) throw new AppError("model_unknown", "model_id");
        const c = await deps.compact.summarize(agentParam(ctx), conv(ctx), model, ctx.req.signal);
        return reply(CompactionResponse, { compaction: c }, 201);
      },
    },
    decision("keep"),
    decision("drop"),
    decision("undo"),
  ];
}
