/**
 * Slash-command routes [SC-1, §13]: `GET /api/agents/<agent>/commands` (the
 * help schema, session) and `POST …/sessions/<conv>/commands {input}` (CSRF).
 * Thin adapter: strict body schema, then the command service. Nothing here
 * admits a Turn or reaches the model.
 */
import { z } from "zod";
import { JSON_BODY_MAX_BYTES } from "../limits.ts";
import type { CommandService } from "../commands/service.ts";
import type { CommandPorts } from "../commands/ports.ts";
import { CommandResultResponse, CommandsResponse } from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";

export const CommandBody = z.object({
  // The 4096-byte bound is the parser's (command_invalid); the 16 KiB body already caps
  // characters, so a tighter `.max()` here would answer schema_violation instead.
  input: z.string().max(JSON_BODY_MAX_BYTES),
}).strict();
export type CommandBody = z.infer<typeof CommandBody>;

export function commandRoutes(
  service: CommandService,
  ports: Pick<CommandPorts, "agent">,
): ProductRoute[] {
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/commands",
      auth: "session",
      response: CommandsResponse,
      handler: async ({ params }) => {
        await ports.agent(params.agent);
        return reply(CommandsResponse, { commands: service.describe() });
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/sessions/:conv/commands",
      auth: "csrf",
      body: CommandBody,
      response: CommandResultResponse,
      handler: async ({ params, body }) => {
        const result = await service.execute(params.agent, params.conv, body.input);
        return reply(CommandResultResponse, result);
      },
    },
  ];
}
