/**
 * Rewind and branch navigation routes [TL-11, UI-8, §22]:
 * - `POST …/sessions/<conv>/rewind {turn_id, confirm?}` — without `confirm`
 *   the plan (files that revert, files changed since and refused, expired or
 *   too-large checkpoints); with `confirm: true` the files are restored
 *   (each atomically) and the Conversation is branched before the Turn
 *   (runtime/checkpoints/rewind.ts). 409 `conversation_busy` while a Turn of
 *   the Conversation runs; a Turn of another Conversation is `turn_not_found`.
 * - `GET …/sessions/<conv>/branches` — the alternatives `‹ 1/2 ›` navigates.
 */
import { z } from "zod";
import {
  branchTitle,
  type ConversationService,
  toConversationView,
} from "../conversations/service.ts";
import { rewind } from "../checkpoints/rewind.ts";
import { AppError } from "../errors.ts";
import { agentDataRel } from "../home.ts";
import { isValidId } from "../path_safety.ts";
import { BranchesResponse, RewindResponse } from "../protocol/api.ts";
import { getConversation } from "../store/agent_state_store.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

export const RewindBody = z.object({
  turn_id: z.string(),
  confirm: z.boolean().optional(),
}).strict();
export type RewindBody = z.infer<typeof RewindBody>;

function convParam(ctx: Pick<RouteContext, "params">): string {
  const id = ctx.params.conv;
  if (!isValidId(id)) throw new AppError("conversation_not_found");
  return id;
}

export function rewindRoutes(
  deps: { conversations: ConversationService; homeRoot: string },
): ProductRoute[] {
  const cs = deps.conversations;
  const base = "/api/agents/:agent/sessions/:conv";
  return [
    {
      method: "POST",
      path: `${base}/rewind`,
      auth: "csrf",
      body: RewindBody,
      response: RewindResponse,
      handler: (ctx: RouteContext<RewindBody>) => {
        const agent = agentParam(ctx);
        const conv = convParam(ctx);
        const db = cs.stateDb(agent);
        if (!getConversation(db, conv)) throw new AppError("conversation_not_found");
        if (!isValidId(ctx.body.turn_id)) throw new AppError("turn_not_found");
        const out = rewind({
          db,
          workspaceDir: `${deps.homeRoot}/${agentDataRel(agent)}/workspace`,
          conversationId: conv,
          turnId: ctx.body.turn_id,
          confirm: ctx.body.confirm === true,
          branchTitle,
          now: Date.now(),
        });
        const branch = out.branch === null ? null : getConversation(db, out.branch.id);
        return reply(RewindResponse, {
          turn_id: out.turn_id,
          confirmed: out.confirmed,
          files: out.files,
          session: branch === null ? null : toConversationView(branch),
        }, out.confirmed ? 201 : 200);
      },
    },
    {
      method: "GET",
      path: `${base}/branches`,
      auth: "session",
      response: BranchesResponse,
      handler: (ctx) =>
        reply(BranchesResponse, { groups: cs.branches(agentParam(ctx), convParam(ctx)) }),
    },
  ];
}
