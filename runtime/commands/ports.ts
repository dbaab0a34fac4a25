/**
 * What slash commands may read or do, as one explicit interface passed in by
 * the composition root. Commands never touch SQLite, the model or a Worker
 * directly: they only call these ports, none of which creates a Turn or
 * invokes the model [SC-1].
 */

export interface AgentFacts {
  id: string;
  name: string;
  state?: string;
  generation?: number;
}

export interface ConversationFacts {
  id: string;
  title: string;
  /** The Run currently active in this Conversation, if any. */
  activeRunId: string | null;
  turnCount?: number;
}

export interface ModelFacts {
  id: string;
  available: boolean;
  window?: number;
  reason?: string;
  /** ready | chat_only | unsupported | unavailable [MB-10]. */
  state?: string;
  capabilities?: string[];
}

export interface PendingPermissionFacts {
  id: string;
  tool: string;
  runId?: string;
  conversationId?: string;
  summary?: string;
}

export interface CommandPorts {
  /** Throws AppError("agent_not_found") for unknown ids. */
  agent(agentId: string): Promise<AgentFacts>;
  /** Throws AppError("conversation_not_found") for unknown or foreign ids. */
  conversation(agentId: string, conversationId: string): Promise<ConversationFacts>;
  models(): Promise<ModelFacts[]>;
  /** NextTurnProjection [CX-5], as the context-preview route returns it. */
  contextPreview(agentId: string, conversationId: string): Promise<Record<string, unknown>>;
  /** ContextPlan metadata [CX-4] for one Run of this Agent; never bodies. */
  runContext(agentId: string, runId: string): Promise<Record<string, unknown>>;
  pendingPermissions(agentId: string): Promise<PendingPermissionFacts[]>;
  /** Requests cancellation (accepted, not necessarily stopped yet). */
  cancelRun(agentId: string, runId: string): Promise<void>;
}
