/**
 * `POST /api/agents/<agent>/sessions/<conv>/attachments` [LC-4, UI-12, §22]:
 * a raw body (any Content-Type) named by `X-Filename` (percent-encoded
 * UTF-8), ≤ 16 MiB, stored into the Agent's `workspace/attachments/` by
 * runtime/documents/attachments.ts (sanitized, never overwriting, whole or
 * not at all). CSRF + exact same-origin (the gateway, `auth: "csrf"`).
 * Unknown Agent or Conversation: 404 before a byte of the body is read.
 */
import type { AgentService } from "../agents/service.ts";
import type { ConversationService } from "../conversations/service.ts";
import { AppError } from "../errors.ts";
import { agentDataRel, type HomeLayout } from "../home.ts";
import { isValidId } from "../path_safety.ts";
import { AttachmentResponse } from "../protocol/api.ts";
import { getConversation } from "../store/agent_state_store.ts";
import { attachmentName, storeAttachment } from "../documents/attachments.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";

export function attachmentRoutes(
  deps: { agents: AgentService; conversations: ConversationService; home: HomeLayout },
): ProductRoute[] {
  return [
    {
      method: "POST",
      path: "/api/agents/:agent/sessions/:conv/attachments",
      auth: "csrf",
      response: AttachmentResponse,
      handler: async (ctx) => {
        const agentId = agentParam(ctx);
        const db = deps.conversations.stateDb(agentId);
        const conv = ctx.params.conv;
        if (!isValidId(conv) || getConversation(db, conv) === null) {
          throw new AppError("conversation_not_found");
        }
        const name = attachmentName(ctx.req.headers.get("x-filename"));
        const declared = ctx.req.headers.get("content-length");
        if (declared !== null && !/^\d{1,12}$/.test(declared)) {
          throw new AppError("body_too_large", "bad content-length");
        }
        const stored = await storeAttachment({
          workspaceDir: `${deps.home.root}/${agentDataRel(agentId)}/workspace`,
          name,
          body: ctx.req.body,
          declaredBytes: declared === null ? null : Number(declared),
        });
        return reply(AttachmentResponse, { attachment: stored }, 201);
      },
    },
  ];
}
