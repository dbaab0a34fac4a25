/**
 * The delegation read route [LC-2, UI-11]: `GET /api/agents/<agent>/delegations`
 * (session auth, read-only) — the child Runs this Agent started as a parent,
 * newest first, each with its two-message mailbox, for the Tasks panel.
 *
 * What this file enforces: a strict empty query; at most DELEGATIONS_LIST_MAX
 * rows; the delegate's name is the Agent service's escaped display name (null
 * once the Agent is gone). Cancel and the child's timeline use the child's own
 * Run routes.
 */
import type { AgentService } from "../agents/service.ts";
import { AppError } from "../errors.ts";
import { DELEGATIONS_LIST_MAX } from "../limits.ts";
import { DelegationsResponse } from "../protocol/api.ts";
import { listDelegations, mailboxOf } from "../store/delegation_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { agentParam } from "./agent_routes.ts";
import { reply } from "./reply.ts";
import type { ProductRoute } from "./router.ts";
import { NoQuery } from "./body.ts";

export function delegationRoutes(deps: {
  agents: AgentService;
  stateDb(agentId: string): DatabaseSync;
}): ProductRoute[] {
  const nameOf = (id: string): string | null => {
    try {
      return deps.agents.get(id).name;
    } catch (err) {
      if (err instanceof AppError) return null;
      throw err;
    }
  };
  return [{
    method: "GET",
    path: "/api/agents/:agent/delegations",
    auth: "session",
    query: NoQuery,
    response: DelegationsResponse,
    handler: (ctx) => {
      const db = deps.stateDb(agentParam(ctx));
      const rows = listDelegations(db, DELEGATIONS_LIST_MAX);
      return reply(DelegationsResponse, {
        delegations: rows.map((r) => ({
          ...r,
          child_agent_name: nameOf(r.child_agent_id),
          mailbox: mailboxOf(db, r.id),
        })),
      });
    },
  }];
}
