/**
 * Pending tool approvals of the open Agent as a hook [UI-4, TL-2]: the
 * durable list read once per Agent attach, folded with the watched Runs'
 * `permission.*` events (`approvals.ts`), minus what this browser decided.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { approvalsFor, pendingApprovals } from "./approvals.ts";
import type { Api } from "./endpoints.ts";
import type { RunView } from "./run_store.ts";
import type { PendingPermission } from "./types.ts";

export interface ApprovalsState {
  /** Every pending approval of the Agent. */
  pending: PendingPermission[];
  /** Those of the open Conversation (by id, or by a Run of one of its Turns). */
  forConversation: PendingPermission[];
  /** Conversations with a pending approval (marked in the list). */
  awaitingConversations: ReadonlySet<string>;
  /** "always": approve and add the approval's narrowed allow rule [TL-10]. */
  decide(id: string, decision: "approve" | "deny" | "always"): Promise<void>;
}

export function useApprovals(
  api: Api,
  agentId: string | null,
  convId: string | null,
  views: ReadonlyMap<string, RunView>,
  turnRuns: ReadonlySet<string>,
  fail: (err: unknown) => void,
): ApprovalsState {
  const [fetched, setFetched] = useState<PendingPermission[]>([]);
  const [decided, setDecided] = useState<ReadonlySet<string>>(new Set());

  useEffect(() => {
    if (!agentId) return;
    setDecided(new Set());
    let current = true;
    api.listPermissions(agentId).then(
      (list) => current && setFetched(list),
      () => current && setFetched([]),
    );
    return () => {
      current = false;
    };
  }, [api, agentId]);

  const pending = useMemo(
    () =>
      pendingApprovals(fetched, [...views.values()].filter((v) => v.agentId === agentId), decided),
    [fetched, views, decided, agentId],
  );
  const forConversation = useMemo(() => approvalsFor(pending, convId, turnRuns), [
    pending,
    convId,
    turnRuns,
  ]);
  const awaitingConversations = useMemo(
    () => new Set(pending.map((p) => p.conversationId).filter((c): c is string => c !== null)),
    [pending],
  );

  const decide = async (id: string, decision: "approve" | "deny" | "always") => {
    if (!agentId) return;
    try {
      // A delegate's approval is decided with its own Agent's route (and "always" is that
      // Agent's rule) [LC-2].
      const owner = pending.find((p) => p.id === id)?.agentId ?? agentId;
      await api.decidePermission(
        owner,
        id,
        decision === "deny" ? "deny" : "approve",
        decision === "always",
      );
      setDecided((cur) => new Set([...cur, id]));
    } catch (err) {
      fail(err);
    }
  };

  return { pending, forConversation, awaitingConversations, decide };
}
