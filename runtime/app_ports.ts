/**
 * Builds the CommandPorts from the Control Plane's real services: the Agent
 * registry, the Conversation service (its latest Turn tells whether a Run is
 * active), the Model Broker's public profiles, and the Run engine for context,
 * approvals and cancel. Without a Run engine no Run can exist, so run lookups
 * answer `run_not_found`, there are no pending approvals, and the projection
 * says it is unavailable — facts, not guesses.
 */
import { AppError } from "./errors.ts";
import type { RunQueries } from "./runs/run_queries.ts";
import type { RunService } from "./runs/run_service.ts";
import type { CommandPorts, PendingPermissionFacts } from "./commands/ports.ts";

export interface CommandPortDeps {
  agents: { get(id: string): { id: string; name: string; state: string; generation: number } };
  conversations: {
    detail(
      agentId: string,
      conversationId: string,
      page: { limit?: number },
    ): {
      session: { id: string; title: string };
      turns: { state: string; run_id: string | null }[];
    };
  };
  model: {
    publicProfiles(): {
      id: string;
      available: boolean;
      window: number | null;
      reason?: string;
      state?: string;
      capabilities?: string[];
    }[];
  };
  runs?: RunCommandDeps;
}

/** What the Run engine offers to slash commands. */
export interface RunCommandDeps {
  contextPreview(agentId: string, conversationId: string): Promise<Record<string, unknown>>;
  runContext(agentId: string, runId: string): Promise<Record<string, unknown>>;
  pendingPermissions(agentId: string): Promise<PendingPermissionFacts[]>;
  cancel(agentId: string, runId: string): Promise<void>;
  /** The Run active in a Conversation right now, if any. */
  activeRunOf(agentId: string, conversationId: string): string | null;
}

/** Adapts the Run service and its queries (the same instance the run routes use). */
export function runCommandDeps(runs: RunService, queries: RunQueries): RunCommandDeps {
  return {
    contextPreview: async (a, c) => (await queries.preview(a, c, null)) as Record<string, unknown>,
    runContext: (a, r) => Promise.resolve(queries.context(a, r) as Record<string, unknown>),
    pendingPermissions: (a) =>
      Promise.resolve(
        queries.permissions(a).pending.map((p) => ({
          id: p.id,
          tool: p.tool_id,
          runId: p.run_id,
        })),
      ),
    cancel: (a, r) => {
      runs.cancel(a, r);
      return Promise.resolve();
    },
    activeRunOf: (a, c) => runs.read.activeRunOf(a, c),
  };
}

export function createCommandPorts(deps: CommandPortDeps): CommandPorts {
  return {
    agent(agentId) {
      const a = deps.agents.get(agentId);
      return Promise.resolve({ id: a.id, name: a.name, state: a.state, generation: a.generation });
    },
    conversation(agentId, conversationId) {
      const d = deps.conversations.detail(agentId, conversationId, { limit: 1 });
      const head = d.turns.at(-1);
      const fromTurn = head?.state === "running" ? head.run_id : null;
      return Promise.resolve({
        id: d.session.id,
        title: d.session.title,
        activeRunId: deps.runs ? deps.runs.activeRunOf(agentId, conversationId) : fromTurn,
      });
    },
    models() {
      return Promise.resolve(
        deps.model.publicProfiles().map((m) => ({
          id: m.id,
          available: m.available,
          ...(m.window !== null ? { window: m.window } : {}),
          ...(m.reason ? { reason: m.reason } : {}),
          ...(m.state ? { state: m.state } : {}),
          ...(m.capabilities ? { capabilities: m.capabilities } : {}),
        })),
      );
    },
    contextPreview(agentId, conversationId) {
      if (!deps.runs) return Promise.resolve({ available: false, reason: "runs_not_enabled" });
      return deps.runs.contextPreview(agentId, conversationId);
    },
    runContext(agentId, runId) {
      if (!deps.runs) return Promise.reject(new AppError("run_not_found"));
      return deps.runs.runContext(agentId, runId);
    },
    pendingPermissions(agentId) {
      deps.agents.get(agentId);
      return deps.runs ? deps.runs.pendingPermissions(agentId) : Promise.resolve([]);
    },
    cancelRun(agentId, runId) {
      if (!deps.runs) return Promise.reject(new AppError("run_not_found"));
      return deps.runs.cancel(agentId, runId);
    },
  };
}
