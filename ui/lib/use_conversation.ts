/**
 * The open Conversation's state as a hook [UI-2, UI-4]: its Turn page, the
 * server's `before` cursor for upward paging, the context projection of the
 * next Turn, and re-attaching to every running Turn's Run after a switch or a
 * reload. Reads go through the injected Api; live Runs through the RunStore.
 */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type Api, errorCode } from "./endpoints.ts";
import { mergeTurns } from "./format.ts";
import { loadOlderTurns } from "./history.ts";
import type { RunStore } from "./run_store.ts";
import { type ContextProjection, type Turn, unavailableProjection } from "./types.ts";

export interface ConversationState {
  turns: Turn[];
  /** False until the first page of the open Conversation has arrived. */
  loaded: boolean;
  /** The fixed code when the first page could not be read (then `loaded` stays false). */
  loadError: string | null;
  hasOlder: boolean;
  loadingOlder: boolean;
  projection: ContextProjection | null;
  /**
   * Adds a Turn admitted by `POST …/runs` in `conversationId` until the server's copy replaces
   * it; nothing when another Conversation is on screen by then.
   */
  addTurn(conversationId: string, make: (lastSeq: number) => Turn): void;
  /** Re-reads the latest page (after a Run ended), keeping older Turns on screen. */
  reload(): void;
  refreshProjection(): void;
  loadOlder(): Promise<void>;
}

/**
 * `open` is false while the selected id may still belong to another Agent
 * (right after an Agent switch): nothing is requested then.
 */
export function useConversation(
  api: Api,
  runs: RunStore,
  agentId: string | null,
  convId: string | null,
  open: boolean,
  /** This Conversation's chosen model (read fresh: it changes without a re-render). */
  modelOf: (convId: string) => string | null,
  fail: (err: unknown) => void,
): ConversationState {
  const [turns, setTurns] = useState<Turn[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [before, setBefore] = useState<string | null>(null);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [projection, setProjection] = useState<ContextProjection | null>(null);

  // The Conversation on screen in the latest render: an answer (re-read, older page, admitted
  // Turn) that arrives after the operator opened another one is dropped, never merged into it.
  const shown = useRef<string | null>(null);
  shown.current = agentId && convId && open ? convId : null;

  const watchRunning = (agent: string, conv: string, list: readonly Turn[]) => {
    for (const t of list) if (t.state === "running" && t.runId) runs.watch(agent, conv, t.runId);
  };

  // Only the newest projection request may land: an answer for the previous Conversation (or
  // model choice) that arrives late must not show its numbers for this one.
  const projectionRequest = useRef(0);
  const refreshProjection = useCallback(() => {
    const mine = ++projectionRequest.current;
    if (!agentId || !convId || !open) return;
    api.contextPreview(agentId, convId, modelOf(convId)).then(
      (p) => mine === projectionRequest.current && setProjection(p),
      (err) =>
        mine === projectionRequest.current && setProjection(unavailableProjection(errorCode(err))),
    );
  }, [api, agentId, convId, open]);

  useEffect(() => {
    setTurns([]);
    setLoaded(false);
    setLoadError(null);
    setBefore(null);
    setProjection(null);
    if (!agentId || !convId || !open) return;
    let current = true;
    api.getConversation(agentId, convId).then((page) => {
      if (!current) return; // another Conversation was opened meanwhile
      // A Turn admitted while the page was in flight stays until the server's copy replaces it.
      setTurns((cur) => mergeTurns(cur, page.turns));
      setBefore(page.before);
      setLoaded(true);
      watchRunning(agentId, convId, page.turns);
    }, (err) => {
      if (!current) return;
      setLoadError(err instanceof TypeError ? "network_error" : errorCode(err));
      fail(err);
    });
    refreshProjection();
    return () => {
      current = false;
    };
  }, [agentId, convId, open]);

  const reload = () => {
    if (!agentId || !convId || !open) return;
    api.getConversation(agentId, convId).then((page) => {
      if (shown.current !== convId) return;
      setTurns((cur) => {
        const first = page.turns[0];
        if (!cur.length || !first) return page.turns;
        const kept = cur.filter((t) => page.turns.some((p) => p.id === t.id) || t.seq < first.seq);
        return mergeTurns(kept, page.turns);
      });
      // A new Turn changes the conversation revision, which retires older cursors [CV-3]:
      // always keep the freshest one (loadOlder skips pages that are already shown).
      setBefore(page.before);
      watchRunning(agentId, convId, page.turns);
    }, fail);
    refreshProjection();
  };

  /** Older pages already on screen are skipped (bounded) so each click shows new Turns. */
  const loadOlder = async () => {
    if (!agentId || !convId || !before) return;
    setLoadingOlder(true);
    try {
      const r = await loadOlderTurns((b) => api.getConversation(agentId, convId, b), turns, before);
      if (shown.current !== convId) return;
      setTurns((cur) => mergeTurns(r.turns, cur));
      setBefore(r.before);
    } catch (err) {
      fail(err);
    } finally {
      setLoadingOlder(false);
    }
  };

  return {
    turns,
    loaded,
    loadError,
    hasOlder: before !== null,
    loadingOlder,
    projection,
    addTurn: (conversationId, make) => {
      if (shown.current === conversationId) setTurns((cur) => [...cur, make(cur.at(-1)?.seq ?? 0)]);
    },
    reload,
    refreshProjection,
    loadOlder,
  };
}
