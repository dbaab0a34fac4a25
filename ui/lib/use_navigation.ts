/**
 * Where the operator is [UI-1, UI-5]: the Agents and the selected one, the
 * selected Agent's Conversations and the open one, kept in the URL
 * (`#/a/<agent>/c/<conv>`) so a reload returns to the same place, and a place
 * typed or pasted into the address bar opens that place. After an
 * Agent switch the previous Agent's Conversation id is never requested under
 * the new Agent (`open` stays false until the id is known to belong to it).
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
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
  // The place asked for by the URL: at load, then on every hash change.
  const wanted = useRef(parsePlace(location.hash));
  // The URL is rewritten only once a navigation has settled (the selected Agent's Conversation
  // list answered), so a reload meanwhile still finds the place that was asked for.
  const settled = useRef(false);
  const [placeTick, setPlaceTick] = useState(0);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agentId, setAgentId] = useState<string | null>(null);
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [convId, setConvIdState] = useState<string | null>(null);
  // The Agent selected in the latest render (read by answers that arrive later).
  const selectedAgent = useRef<string | null>(null);
  selectedAgent.current = agentId;
  // The Agent the selected Conversation belongs to.
  const convOwner = useRef<string | null>(null);
  const setConvId = (agent: string | null, id: string | null) => {
    convOwner.current = id === null ? null : agent;
    setConvIdState(id);
  };

  // Each load takes a ticket; only the latest one's answer may choose the place. An answer to a
  // load issued before the operator navigated (a hash typed, a click) is stale: it would open
  // its own default and write it into the URL over the place asked for since.
  // A later load without a preference (a refresh) carries the pending wish forward.
  const agentsTicket = useRef(0);
  const agentsWish = useRef<string | null | undefined>(undefined);
  const conversationsTicket = useRef(0);
  const conversationsWish = useRef<{ agent: string; prefer: string | null } | null>(null);

  const loadAgents = useCallback(async (prefer?: string | null) => {
    const ticket = ++agentsTicket.current;
    if (prefer !== undefined) agentsWish.current = prefer;
    else prefer = agentsWish.current;
    const list = await api.listAgents();
    if (ticket !== agentsTicket.current) return;
    agentsWish.current = undefined;
    setAgents(list);
    const pick = list.find((a) => a.id === prefer) ?? list.find((a) => a.id === agentId) ??
      list.find((a) => !a.system) ?? list[0] ?? null;
    setAgentId(pick ? pick.id : null);
  }, [api, agentId]);

  const loadConversations = useCallback(async (agent: string, prefer?: string | null) => {
    const ticket = ++conversationsTicket.current;
    const wish = conversationsWish.current;
    if (prefer !== undefined) conversationsWish.current = { agent, prefer };
    else if (wish?.agent === agent) prefer = wish.prefer;
    const list = await api.listConversations(agent);
    // Answered after the operator moved to another Agent: that Agent loads its own list.
    if (selectedAgent.current !== agent) return;
    // Superseded by a later load (which carries the newer wish): it decides the place.
    if (ticket !== conversationsTicket.current) return;
    conversationsWish.current = null;
    setConversations(list);
    setConvIdState((cur) => {
      const open = convOwner.current === agent ? cur : null;
      const next = list.find((c) => c.id === prefer)?.id ?? list.find((c) => c.id === open)?.id ??
        list[0]?.id ?? null;
      convOwner.current = next === null ? null : agent;
      return next;
    });
    settled.current = true;
    setPlaceTick((t) => t + 1);
  }, [api]);

  useEffect(() => {
    loadAgents(wanted.current.agentId).catch(fail);
  }, []);

  useEffect(() => {
    if (!agentId) return;
    settled.current = false;
    setConversations([]);
    setConvId(null, null);
    const w = wanted.current;
    loadConversations(agentId, agentId === w.agentId ? w.conversationId : null).catch(fail);
  }, [agentId]);

  // A hash typed or pasted into the address bar moves the workspace there. The listener reads
  // the latest rendered place (a ref), never the one of the render that registered it.
  const latest = useRef({ agentId, convId, loadAgents, loadConversations });
  latest.current = { agentId, convId, loadAgents, loadConversations };
  useEffect(() => {
    const onHash = (e: HashChangeEvent) => {
      // The event's URL, not location: a pending replaceState may already have rewritten it.
      const place = parsePlace(new URL(e.newURL).hash);
      const cur = latest.current;
      wanted.current = place;
      // Whatever opens (or, for an unknown place, stays), the URL then shows the real place.
      const rewrite = () => setPlaceTick((t) => t + 1);
      if (place.agentId === null) rewrite();
      else if (place.agentId !== cur.agentId) cur.loadAgents(place.agentId).then(rewrite, fail);
      else if (place.conversationId !== null && place.conversationId !== cur.convId) {
        cur.loadConversations(place.agentId, place.conversationId).catch(fail);
      } else rewrite();
    };
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  useEffect(() => {
    if (!settled.current) return;
    history.replaceState(null, "", formatPlace({ agentId, conversationId: convId }) || "#");
  }, [agentId, convId, placeTick]);

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
