/**
 * Conversation history routes [UI-9, §22]: `GET /api/agents/<agent>/search?q=`
 * (FTS5 over titles and visible Turn text; at most 50 hits; a query out of
 * bounds or one FTS5 refuses is `search_query_invalid`, 422). The query is a
 * strict schema: `q` once, nothing else.
 */
import { z } from "zod";
import type { ConversationService } from "../conversations/service.ts";
import { searchConversations } from "../conversations/search.ts";
import { SearchResponse } from "../protocol/api.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute, RouteContext } from "./router.ts";

/**
 * `?q=` — its bounds (bytes, characters, terms) are checked by the search
 * module, so a missing, empty or oversized q is `search_query_invalid` too.
 */
export const SearchQuery = z.object({ q: z.string().optional() }).strict();
export type SearchQuery = z.infer<typeof SearchQuery>;

export function historyRoutes(deps: { conversations: ConversationService }): ProductRoute[] {
  const cs = deps.conversations;
  return [
    {
      method: "GET",
      path: "/api/agents/:agent/search",
      auth: "session",
      query: SearchQuery,
      response: SearchResponse,
      handler: (ctx: RouteContext<unknown, SearchQuery>) =>
        reply(SearchResponse, {
          results: searchConversations(cs.stateDb(agentParam(ctx)), ctx.query.q ?? ""),
        }),
    },
  ];
}
