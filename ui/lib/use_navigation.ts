/**
 * Where the operator is [UI-1, UI-5]: the Agents and the selected one, the
 * selected Agent's Conversations and the open one, kept in the URL
 * (`#/a/<agent>/c/<conv>`) so a reload returns to the same place. After an
 * Agent switch the previous Agent's Conversation id is never requested under
 * the new Agent (`open` stays false until the id is known to belong to it).
 */
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Api } from "./endpoints.ts";
import { formatPlace, parsePlace } from "./route.ts";
import type { Agent, Conversation } from "./types.ts";

export interface Navigation {
  agents: Agent[];
  agentId: string | null;
  conversations: Conversation[];
  convId: string | null;
  /** The open Conversation is known to belong to the selected Agent. */
  open: boolean;
  selectAgent(id: string): void;
  selectConversation(id: string): void;
  /** Reloads the Agents, selecting `prefer`, else the current, else the first non-system one. */
  loadAgents(prefer?: string | null): Promise<void>;
  /** Reloads an Agent's Conversations, opening `prefer`, else the open one, else the newest. */
  loadConversations(agent: string, prefer?: string | null): Promise<void>;
}

export function useNavigation(api: Api, fail: (err: unknown) => void): Navigation {
  const initial = useMemo(() => parsePlace(location.hash), []);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agentId, setAgentId] = useState<string | null>(null);
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [convId, setConvIdState] = useState<string | null>(null);
  // The Agent the selected Conversation belongs to.
  const convOwner = useRef<string | null>(null);
  const setConvId = (agent: string | null, id: string | null) => {
    convOwner.current = id === null ? null : agent;
    setConvIdState(id);
  };

  const loadAgents = useCallback(async (prefer?: string | null) => {
    const list = await api.listAgents();
    setAgents(list);
    const pick = list.find((a) => a.id === prefer) ?? list.find((a) => a.id === agentId) ??
      list.find((a) => !a.system) ?? list[0] ?? null;
    setAgentId(pick ? pick.id : null);
  }, [api, agentId]);

  const loadConversations = useCallback(async (agent: string, prefer?: string | null) => {
    const list = await api.listConversations(agent);
    setConversations(list);
    setConvIdState((cur) => {
      const want = prefer ?? (convOwner.current === agent ? cur : null);
      const next = list.find((c) => c.id === want)?.id ?? list[0]?.id ?? null;
      convOwner.current = next === null ? null : agent;
      return next;
    });
  }, [api]);

  useEffect(() => {
    loadAgents(initial.agentId).catch(fail);
  }, []);

  useEffect(() => {
    if (!agentId) return;
    setConversations([]);
    setConvId(null, null);
    loadConversations(agentId, agentId === initial.agentId ? initial.conversationId : null)
      .catch(fail);
  }, [agentId]);

  useEffect(() => {
    history.replaceState(null, "", formatPlace({ agentId, conversationId: convId }) || "#");
  }, [agentId, convId]);

  return {
    agents,
    agentId,
    conversations,
    convId,
    open: convId !== null && convOwner.current === agentId,
    selectAgent: setAgentId,
    selectConversation: (id) => setConvId(agentId, id),
    loadAgents,
    loadConversations,
  };
}
