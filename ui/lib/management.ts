/**
 * Agent and Conversation management actions [UI-5] as plain functions over
 * injected handles: each destructive or renaming action asks for confirmation
 * through a DialogRequest first; failures go to one `fail` handler with their
 * fixed code. The system Agent's protection is enforced by the server; the UI
 * only disables the buttons.
 */
import type { Api } from "./endpoints.ts";
import type { DraftStore } from "./drafts.ts";
import type { Agent, Conversation } from "./types.ts";

/** Display-name bounds, mirrored from the server's schemas for the input fields. */
export const AGENT_NAME_MAX = 64;
export const TITLE_MAX = 120;

export interface DialogRequest {
  title: string;
  message: string;
  confirmLabel: string;
  danger?: boolean;
  /**
   * When set, the dialog asks for one text value; `validate` returns the inline message that
   * keeps the dialog open (empty, too long, duplicate…), or null.
   */
  field?: {
    label: string;
    value: string;
    maxLength: number;
    validate?(value: string): string | null;
  };
  onConfirm(value: string): void | Promise<void>;
}

export interface ManagementDeps {
  api: Api;
  agent: Agent | null;
  /** Every Agent (for the duplicate-name check). */
  agents: readonly Agent[];
  agentId: string | null;
  convId: string | null;
  conversations: Conversation[];
  drafts: DraftStore;
  ask(req: DialogRequest): void;
  reloadAgents(prefer: string | null): Promise<void>;
  reloadConversations(agentId: string, prefer?: string | null): Promise<void>;
  closeNav(): void;
  fail(err: unknown): void;
}

/** Why an Agent name cannot be used (trimmed, in characters; names compare case-insensitively). */
export function agentNameProblem(
  name: string,
  existing: readonly { id: string; name: string }[],
  self: string | null = null,
): string | null {
  const v = name.trim();
  if (v === "") return "Give the agent a name.";
  const n = Array.from(v).length;
  if (n > AGENT_NAME_MAX) return `At most ${AGENT_NAME_MAX} characters (this is ${n}).`;
  const key = v.toLocaleLowerCase();
  if (existing.some((a) => a.id !== self && a.name.trim().toLocaleLowerCase() === key)) {
    return `An agent named "${v}" already exists.`;
  }
  return null;
}

export function agentActions(d: ManagementDeps) {
  const { api, agent, fail } = d;
  return {
    create: () =>
      d.ask({
        title: "New agent",
        message: "Each Agent gets its own private workspace and state.",
        confirmLabel: "Create agent",
        field: {
          label: "Name",
          value: "",
          maxLength: AGENT_NAME_MAX,
          validate: (v) => agentNameProblem(v, d.agents),
        },
        onConfirm: async (name) => {
          try {
            const a = await api.createAgent(name);
            await d.reloadAgents(a.id);
            d.closeNav();
          } catch (err) {
            fail(err);
          }
        },
      }),
    rename: () =>
      agent && d.ask({
        title: "Rename agent",
        message: "Only the display name changes.",
        confirmLabel: "Rename",
        field: {
          label: "Name",
          value: agent.name,
          maxLength: AGENT_NAME_MAX,
          validate: (v) => agentNameProblem(v, d.agents, agent.id),
        },
        onConfirm: (name) =>
          api.renameAgent(agent.id, name).then(() => d.reloadAgents(agent.id)).catch(fail),
      }),
    rebuild: () =>
      agent && d.ask({
        title: "Rebuild runtime?",
        message:
          `Active runs of "${agent.name}" are drained or cancelled and a new generation is created.`,
        confirmLabel: "Rebuild",
        onConfirm: () =>
          api.upgradeAgent(agent.id).then(() => d.reloadAgents(agent.id)).catch(fail),
      }),
    remove: () =>
      agent && d.ask({
        title: "Delete agent?",
        message:
          `"${agent.name}" and all of its conversations, workspace and history are deleted. This cannot be undone.`,
        confirmLabel: "Delete agent",
        danger: true,
        onConfirm: () => api.deleteAgent(agent.id).then(() => d.reloadAgents(null)).catch(fail),
      }),
  };
}

export function conversationActions(d: ManagementDeps) {
  const { api, agentId, fail } = d;
  const title = (id: string) => d.conversations.find((c) => c.id === id)?.title;
  return {
    rename: (id: string) =>
      agentId && d.ask({
        title: "Rename conversation",
        message: "",
        confirmLabel: "Rename",
        field: { label: "Title", value: title(id) ?? "", maxLength: TITLE_MAX },
        onConfirm: (t) =>
          api.renameConversation(agentId, id, t).then(() => d.reloadConversations(agentId))
            .catch(fail),
      }),
    branch: async (id: string) => {
      if (!agentId) return;
      try {
        const c = await api.branchConversation(agentId, id);
        await d.reloadConversations(agentId, c?.id ?? id);
      } catch (err) {
        fail(err);
      }
    },
    remove: (id: string) =>
      agentId && d.ask({
        title: "Delete conversation?",
        message: `"${title(id) ?? "This conversation"}" and its history are deleted.`,
        confirmLabel: "Delete",
        danger: true,
        onConfirm: async () => {
          try {
            await api.deleteConversation(agentId, id);
            d.drafts.forget(id);
            await d.reloadConversations(agentId, d.convId === id ? null : d.convId);
          } catch (err) {
            fail(err);
          }
        },
      }),
  };
}
