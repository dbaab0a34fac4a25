/**
 * §13 Conversation ("session") routes [CV-1..4]: list/create, detail with one
 * Turn page (`?before=<cursor>&limit=` — latest 32 by default, limit ≤ 64),
 * rename, delete, continue/branch. Strict zod bodies and query; a malformed
 * Conversation id is an unknown Conversation (404); any `before` value that the
 * cursor codec does not verify is `invalid_session_cursor` (400).
 */
import { z } from "zod";
import type { ConversationService } from "../conversations/service.ts";
import { AppError } from "../errors.ts";
import { CONVERSATION_TITLE_MAX_CHARS, TURN_PAGE_MAX } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { agentParam } from "./agent_routes.ts";
import {
  BranchResponse,
  ContinueResponse,
  ConversationDetailResponse,
  ConversationResponse,
  ConversationsResponse,
  DeletedResponse,
} from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

export const ConversationTitleSchema = z.string().trim().min(1).max(
  CONVERSATION_TITLE_MAX_CHARS,
).regex(/^[^\p{Cc}\p{Cf}\p{Cs}]+$/u);

export const CreateSessionBody = z.object({ title: ConversationTitleSchema.optional() }).strict();
export type CreateSessionBody = z.infer<typeof CreateSessionBody>;
export const RenameSessionBody = z.object({ title: ConversationTitleSchema }).strict();
export type RenameSessionBody = z.infer<typeof RenameSessionBody>;
/**
 * `continue` from the completed head, `branch` at the head, or `branch` before one Turn
 * (`before_turn_id`: edit and regenerate [UI-8]).
 */
export const ContinueBody = z.object({
  mode: z.enum(["continue", "branch"]),
  before_turn_id: z.string().optional(),
}).strict().refine((b) => b.before_turn_id === undefined || b.mode === "branch");
export type ContinueBody = z.infer<typeof ContinueBody>;

/** `?before=&limit=`; unknown or repeated parameters are refused (the server checks it). */
export const DetailQuery = z.object({
  before: z.string().optional(),
  limit: z.string().regex(/^[1-9]\d{0,2}$/).transform(Number).pipe(
    z.number().int().min(1).max(TURN_PAGE_MAX),
  ).optional(),
}).strict();
export type DetailQuery = z.infer<typeof DetailQuery>;

function convParam(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.conv;
  if (!isValidId(id)) throw new AppError("conversation_not_found");
  return id;
}

export function conversationRoutes(deps: { conversations: ConversationService }): ProductRoute[] {
  const cs = deps.conversations;
  const base = "/api/agents/:agent/sessions";
  return [
    {
      method: "GET",
      path: base,
      auth: "session",
      response: ConversationsResponse,
      handler: (ctx) => reply(ConversationsResponse, { sessions: cs.list(agentParam(ctx)) }),
    },
    {
      method: "POST",
      path: base,
      auth: "csrf",
      body: CreateSessionBody,
      response: ConversationResponse,
      handler: (ctx: RouteContext<CreateSessionBody>) =>
        reply(ConversationResponse, { session: cs.create(agentParam(ctx), ctx.body.title) }, 201),
    },
    {
      method: "GET",
      path: `${base}/:conv`,
      auth: "session",
      query: DetailQuery,
      response: ConversationDetailResponse,
      handler: (ctx: RouteContext<unknown, DetailQuery>) => {
        const agent = agentParam(ctx);
        const conv = convParam(ctx);
        return reply(ConversationDetailResponse, cs.detail(agent, conv, ctx.query));
      },
    },
    {
      method: "PATCH",
      path: `${base}/:conv`,
      auth: "csrf",
      body: RenameSessionBody,
      response: ConversationResponse,
      handler: (ctx: RouteContext<RenameSessionBody>) =>
        reply(ConversationResponse, {
          session: cs.rename(agentParam(ctx), convParam(ctx), ctx.body.title),
        }),
    },
    {
      method: "DELETE",
      path: `${base}/:conv`,
      auth: "csrf",
      response: DeletedResponse,
      handler: (ctx) => {
        const agent = agentParam(ctx);
        const conv = convParam(ctx);
        cs.delete(agent, conv);
        return reply(DeletedResponse, { id: conv, deleted: true });
      },
    },
    {
      method: "POST",
      path: `${base}/:conv/continue`,
      auth: "csrf",
      body: ContinueBody,
      response: z.union([BranchResponse, ContinueResponse]),
      handler: (ctx: RouteContext<ContinueBody>) => {
        const agent = agentParam(ctx);
        const conv = convParam(ctx);
        const before = ctx.body.before_turn_id;
        if (before !== undefined) {
          if (!isValidId(before)) throw new AppError("turn_not_found");
          return reply(BranchResponse, cs.branchBefore(agent, conv, before), 201);
        }
        if (ctx.body.mode === "branch") return reply(BranchResponse, cs.branch(agent, conv), 201);
        return reply(ContinueResponse, cs.continueFromHead(agent, conv));
      },
    },
  ];
}
