/**
 * §13 Agent routes [AG-1..3]: list/create, get/rename/delete, upgrade, and the
 * system-Agent compatibility aliases (`/api/sessions/…`, `/api/runs/<run>/…`
 * → `/api/agents/<system-agent>/…`) [AG-2]. Thin adapters: strict zod bodies,
 * an id format check, then the Agent service. Reads need a session; every
 * state change needs CSRF + exact same-origin (enforced by the gateway).
 */
import { z } from "zod";
import type { AgentService } from "../agents/service.ts";
import { AppError } from "../errors.ts";
import {
  AGENT_NAME_MAX_CHARS,
  AGENT_RUN_DEADLINE_MIN_S,
  RUN_DEADLINE_MS,
  SYSTEM_AGENT_ID,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { AgentResponse, AgentsResponse, DeletedResponse } from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, Route, RouteContext } from "./router.ts";

/** Display names: trimmed, 1..64 characters, no control/format characters or lone surrogates. */
export const AgentNameSchema = z.string().trim().min(1).max(AGENT_NAME_MAX_CHARS).regex(
  /^[^\p{Cc}\p{Cf}\p{Cs}]+$/u,
);

export const AgentNameBody = z.object({ name: AgentNameSchema }).strict();
export type AgentNameBody = z.infer<typeof AgentNameBody>;

/**
 * PATCH /api/agents/<agent> [§22]: at least one of name, default_model_id, reasoning, and the
 * agent-loop bounds max_model_calls, max_tool_calls, run_deadline_s [SB-8].
 */
export const AgentPatchBody = z.object({
  name: AgentNameSchema.optional(),
  // Checked against the catalog by the handler (422 model_unknown), so any string ≤ 1 KiB here.
  default_model_id: z.string().max(1024).nullable().optional(),
  reasoning: z.boolean().optional(),
  // An Agent's own agent-loop bounds [SB-8]: lower than the product's or null (the product's).
  max_model_calls: z.number().int().min(1).max(WORKER_MODEL_CALLS_MAX).nullable().optional(),
  max_tool_calls: z.number().int().min(0).max(WORKER_TOOL_CALLS_MAX).nullable().optional(),
  run_deadline_s: z.number().int().min(AGENT_RUN_DEADLINE_MIN_S).max(RUN_DEADLINE_MS / 1000)
    .nullable().optional(),
  // The external ACP runner [LC-6]: a registered name (422 runner_unknown) or null (native).
  runner: z.string().max(64).nullable().optional(),
  // document/extract_text for this Agent's Runs [LC-4].
  documents: z.boolean().optional(),
}).strict().refine((b) => Object.keys(b).length > 0, "empty patch");
export type AgentPatchBody = z.infer<typeof AgentPatchBody>;

/** The catalog as the Agent routes see it: is this a model id an Agent may default to? */
export interface ModelIdCheck {
  isKnown(modelId: string): boolean;
}

/** The `:agent` path parameter; a malformed id is an unknown Agent (404). */
export function agentParam(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.agent;
  if (!isValidId(id)) throw new AppError("agent_not_found");
  return id;
}

export function agentRoutes(deps: {
  agents: AgentService;
  models?: ModelIdCheck;
  /** The registered ACP runners [LC-6]; absent ⇒ none. */
  runners?: { has(name: string): boolean };
}): ProductRoute[] {
  const { agents } = deps;
  return [
    {
      method: "GET",
      path: "/api/agents",
      auth: "session",
      response: AgentsResponse,
      handler: () => reply(AgentsResponse, { agents: agents.list() }),
    },
    {
      method: "POST",
      path: "/api/agents",
      auth: "csrf",
      body: AgentNameBody,
      response: AgentResponse,
      handler: (ctx: RouteContext<AgentNameBody>) =>
        reply(AgentResponse, { agent: agents.create(ctx.body.name) }, 201),
    },
    {
      method: "GET",
      path: "/api/agents/:agent",
      auth: "session",
      response: AgentResponse,
      handler: (ctx) => reply(AgentResponse, { agent: agents.get(agentParam(ctx)) }),
    },
    {
      method: "PATCH",
      path: "/api/agents/:agent",
      auth: "csrf",
      body: AgentPatchBody,
      response: AgentResponse,
      handler: (ctx: RouteContext<AgentPatchBody>) => {
        const id = agentParam(ctx);
        const m = ctx.body.default_model_id;
        // Unknown or malformed ⇒ 422 model_unknown before anything is written [MB-14].
        if (typeof m === "string" && !(deps.models?.isKnown(m) ?? false)) {
          throw new AppError("model_unknown");
        }
        const r = ctx.body.runner;
        if (typeof r === "string" && !(deps.runners?.has(r) ?? false)) {
          throw new AppError("runner_unknown");
        }
        return reply(AgentResponse, { agent: agents.updateSettings(id, ctx.body) });
      },
    },
    {
      method: "DELETE",
      path: "/api/agents/:agent",
      auth: "csrf",
      response: DeletedResponse,
      handler: async (ctx) => {
        const id = agentParam(ctx);
        await agents.delete(id);
        return reply(DeletedResponse, { id, deleted: true });
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/upgrade",
      auth: "csrf",
      response: AgentResponse,
      handler: async (ctx) =>
        reply(AgentResponse, { agent: await agents.upgrade(agentParam(ctx)) }),
    },
  ];
}

const ALIASED_PREFIXES = ["/api/agents/:agent/sessions", "/api/agents/:agent/runs/"];

/**
 * Adds the compatibility aliases for every session and run route in `routes`:
 * `/api/sessions…` and `/api/runs/…` serve the same handler with the system
 * Agent id, under the same auth level and body schema. Call it on the final
 * route table so routes added by other modules are aliased too.
 */
export function withSystemAgentAliases<R extends Route>(routes: readonly R[]): R[] {
  const aliases: R[] = [];
  for (const r of routes) {
    if (!ALIASED_PREFIXES.some((p) => r.path.startsWith(p))) continue;
    const target = r;
    aliases.push({
      ...target,
      path: "/api" + target.path.slice("/api/agents/:agent".length),
      handler: (ctx) =>
        target.handler({ ...ctx, params: { ...ctx.params, agent: SYSTEM_AGENT_ID } }),
    });
  }
  return [...routes, ...aliases];
}
