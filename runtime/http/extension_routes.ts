/**
 * Extension routes [LC-5, §22]: `GET /api/extensions` (session), `POST
 * /api/extensions {name, url, ca_pem?}` (CSRF; 201 with the server after its
 * discovery), `POST /api/extensions/<name>/refresh` (CSRF), `DELETE
 * /api/extensions/<name>` (CSRF), `GET /api/agents/<agent>/extensions`
 * (session) and `PUT /api/agents/<agent>/extensions {enabled: [name…]}`
 * (CSRF; default none). Bodies are strict zod schemas; refusals are the
 * fixed codes of errors.ts.
 */
import type { AgentService } from "../agents/service.ts";
import { AppError } from "../errors.ts";
import { AddExtensionBody, EnabledBody, type ExtensionService } from "../extensions/service.ts";
import { SERVER_NAME_RE } from "../extensions/tool_map.ts";
import { agentParam } from "./agent_routes.ts";
import {
  EnabledExtensionsResponse,
  ExtensionDeletedResponse,
  ExtensionResponse,
  ExtensionsResponse,
} from "../protocol/api.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

function nameParam(ctx: Pick<RouteContext, "params">): string {
  const n = ctx.params.name;
  if (!SERVER_NAME_RE.test(n)) throw new AppError("extension_not_found");
  return n;
}

export function extensionRoutes(deps: {
  extensions: ExtensionService;
  agents: AgentService;
}): ProductRoute[] {
  const { extensions, agents } = deps;
  return [
    {
      method: "GET",
      path: "/api/extensions",
      auth: "session",
      response: ExtensionsResponse,
      handler: () => reply(ExtensionsResponse, { extensions: extensions.list() }),
    },
    {
      method: "POST",
      path: "/api/extensions",
      auth: "csrf",
      body: AddExtensionBody,
      response: ExtensionResponse,
      handler: async (ctx: RouteContext<AddExtensionBody>) =>
        reply(ExtensionResponse, { extension: await extensions.add(ctx.body) }, 201),
    },
    {
      method: "POST",
      path: "/api/extensions/:name/refresh",
      auth: "csrf",
      response: ExtensionResponse,
      handler: async (ctx) =>
        reply(ExtensionResponse, { extension: await extensions.refresh(nameParam(ctx)) }),
    },
    {
      method: "DELETE",
      path: "/api/extensions/:name",
      auth: "csrf",
      response: ExtensionDeletedResponse,
      handler: (ctx) => {
        const name = nameParam(ctx);
        extensions.remove(name);
        return reply(ExtensionDeletedResponse, { name, deleted: true });
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/extensions",
      auth: "session",
      response: EnabledExtensionsResponse,
      handler: (ctx) => {
        const id = agentParam(ctx);
        agents.requireUsable(id);
        return reply(EnabledExtensionsResponse, { enabled: extensions.enabledFor(id) });
      },
    },
    {
      method: "PUT",
      path: "/api/agents/:agent/extensions",
      auth: "csrf",
      body: EnabledBody,
      response: EnabledExtensionsResponse,
      handler: (ctx: RouteContext<EnabledBody>) => {
        const id = agentParam(ctx);
        agents.requireUsable(id);
        return reply(EnabledExtensionsResponse, {
          enabled: extensions.setEnabled(id, ctx.body.enabled),
        });
      },
    },
  ];
}
