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
import { json } from "./headers.ts";
import type { Route, RouteContext } from "./router.ts";

function nameParam(ctx: RouteContext<unknown>): string {
  const n = ctx.params.name;
  if (!SERVER_NAME_RE.test(n)) throw new AppError("extension_not_found");
  return n;
}

export function extensionRoutes(deps: {
  extensions: ExtensionService;
  agents: AgentService;
}): Route[] {
  const { extensions, agents } = deps;
  return [
    {
      method: "GET",
      path: "/api/extensions",
      auth: "session",
      handler: () => json({ extensions: extensions.list() }),
    },
    {
      method: "POST",
      path: "/api/extensions",
      auth: "csrf",
      body: AddExtensionBody,
      handler: async (ctx: RouteContext<AddExtensionBody>) =>
        json({ extension: await extensions.add(ctx.body) }, 201),
    },
    {
      method: "POST",
      path: "/api/extensions/:name/refresh",
      auth: "csrf",
      handler: async (ctx) => json({ extension: await extensions.refresh(nameParam(ctx)) }),
    },
    {
      method: "DELETE",
      path: "/api/extensions/:name",
      auth: "csrf",
      handler: (ctx) => {
        const name = nameParam(ctx);
        extensions.remove(name);
        return json({ name, deleted: true });
      },
    },
    {
      method: "GET",
      path: "/api/agents/:agent/extensions",
      auth: "session",
      handler: (ctx) => {
        const id = agentParam(ctx);
        agents.requireUsable(id);
        return json({ enabled: extensions.enabledFor(id) });
      },
    },
    {
      method: "PUT",
      path: "/api/agents/:agent/extensions",
      auth: "csrf",
      body: EnabledBody,
      handler: (ctx: RouteContext<EnabledBody>) => {
        const id = agentParam(ctx);
        agents.requireUsable(id);
        return json({ enabled: extensions.setEnabled(id, ctx.body.enabled) });
      },
    },
  ];
}
