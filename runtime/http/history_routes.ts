/**
 * Conversation history routes [UI-9, §22]:
 * - `GET /api/agents/<agent>/search?q=` — FTS5 over titles and visible Turn
 *   text; at most 50 hits; a query out of bounds or one FTS5 refuses is
 *   `search_query_invalid` (422). The query is a strict schema: `q` once.
 * - `GET …/sessions/<conv>/export?format=md|json` — an attachment; JSON
 *   carries each Run's durable events; over 8 MiB is `export_too_large`.
 * - `POST /api/agents/<agent>/sessions/import` — a raw JSON body of at most
 *   8 MiB (not the 16 KiB JSON route bound; 413 past it), validated with the
 *   export schema (422 `import_invalid`); new ids minted, nothing from the
 *   file enters the journal (runtime/conversations/history.ts).
 */
import { z } from "zod";
import type { ConversationService } from "../conversations/service.ts";
import { toConversationView } from "../conversations/service.ts";
import { searchConversations } from "../conversations/search.ts";
import { exportJson, exportMarkdown, importJson } from "../conversations/history.ts";
import { AppError } from "../errors.ts";
import { CONVERSATION_EXPORT_MAX_BYTES } from "../limits.ts";
import { isValidId } from "../path_safety.ts";
import { getConversation } from "../store/agent_state_store.ts";
import { ImportResponse, SearchResponse } from "../protocol/api.ts";
import { agentParam } from "./agent_routes.ts";
import { readBounded } from "./body.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

/**
 * `?q=` — its bounds (bytes, characters, terms) are checked by the search
 * module, so a missing, empty or oversized q is `search_query_invalid` too.
 */
export const SearchQuery = z.object({ q: z.string().optional() }).strict();
export type SearchQuery = z.infer<typeof SearchQuery>;

/** `?format=md|json` (default json). */
export const ExportQuery = z.object({ format: z.enum(["md", "json"]).optional() }).strict();
export type ExportQuery = z.infer<typeof ExportQuery>;

function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const [type, ...params] = value.split(";").map((s) => s.trim().toLowerCase());
  return type === "application/json" && params.every((p) => p === "" || p === "charset=utf-8");
}

export function historyRoutes(deps: { conversations: ConversationService }): ProductRoute[] {
  const cs = deps.conversations;
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/search",
      auth: "session",
      query: SearchQuery,
      response: SearchResponse,
      handler: async (ctx: RouteContext<unknown, SearchQuery>) =>
        reply(SearchResponse, {
          results: await searchConversations(cs.stateDb(agentParam(ctx)), ctx.query.q ?? ""),
        }),
    },
    {
      method: "GET",
      path: "/api/agents/:agent/sessions/:conv/export",
      auth: "session",
      query: ExportQuery,
      response: null,
      handler: (ctx: RouteContext<unknown, ExportQuery>) => {
        const db = cs.stateDb(agentParam(ctx));
        const conv = ctx.params.conv;
        if (!isValidId(conv)) throw new AppError("conversation_not_found");
        const md = ctx.query.format === "md";
        const text = md ? exportMarkdown(db, conv, Date.now()) : exportJson(db, conv, Date.now());
        return new Response(text, {
          headers: {
            "content-type": md ? "text/markdown; charset=utf-8" : "application/json; charset=utf-8",
            "content-disposition": `attachment; filename="conversation-${conv}.${
              md ? "md" : "json"
            }"`,
          },
        });
      },
    },
    {
      method: "POST",
      path: "/api/agents/:agent/sessions/import",
      auth: "csrf",
      response: ImportResponse,
      handler: async (ctx) => {
        const db = cs.stateDb(agentParam(ctx));
        if (!isJsonContentType(ctx.req.headers.get("content-type"))) {
          throw new AppError("unsupported_media_type");
        }
        const bytes = await readBounded(ctx.req, CONVERSATION_EXPORT_MAX_BYTES);
        const r = importJson(db, bytes, Date.now());
        const row = getConversation(db, r.id);
        if (!row) throw new Error("imported conversation vanished");
        return reply(ImportResponse, {
          session: toConversationView(row),
          imported_turns: r.turns,
        }, 201);
      },
    },
  ];
}
