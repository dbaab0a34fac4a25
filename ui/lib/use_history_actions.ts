/**
 * The open Conversation's history actions as a hook [UI-8, TL-11]: its
 * alternatives (re-read when its Turns change), edit-and-send and regenerate
 * (each a branch before the Turn, then an ordinary Run admission there), the
 * rewind dialog's state (plan, then confirmation), and navigation between
 * alternatives. What it needs from the Workspace is injected.
 */
import { useEffect, useState } from "preact/hooks";
import {
  branchBefore,
  type BranchGroupJson,
  listBranches,
  rewind,
  type RewindAnswer,
} from "./branching.ts";
import type { Requester } from "./endpoints.ts";
import type { Turn } from "./types.ts";

export interface HistoryDeps {
  request: Requester;
  agentId: string | null;
  convId: string | null;
  turns: readonly Turn[];
  /** Admits `text` as a new Turn of `conv` (and watches its Run). */
  send(conv: string, text: string): Promise<void>;
  /** Reloads the Conversation list and opens `conv`. */
  open(conv: string): Promise<void>;
  fail(err: unknown): void;
}

export interface RewindDialogState {
  turn: Turn;
  plan: RewindAnswer | null;
  /** After the confirmation: what was done. */
  done: RewindAnswer | null;
  busy: boolean;
}

export interface HistoryActions {
  groups: BranchGroupJson[];
  /** After ‹ or ›: the Turn to bring into view once that Conversation shows it. */
  focus: { conv: string; turnId: string } | null;
  onFocused(): void;
  rewinding: RewindDialogState | null;
  onEdit(turn: Turn, text: string): Promise<void>;
  onRegenerate(turn: Turn): Promise<void>;
  onRewind(turn: Turn): void;
  onConfirmRewind(): Promise<void>;
  onCloseRewind(): void;
  onNavigate(conv: string, turnId: string | null): void;
}

export function useHistoryActions(d: HistoryDeps): HistoryActions {
  const [groups, setGroups] = useState<BranchGroupJson[]>([]);
  const [rewinding, setRewinding] = useState<RewindDialogState | null>(null);
  const [focus, setFocus] = useState<HistoryActions["focus"]>(null);
  const key = d.turns.map((t) => t.id).join(",");
  useEffect(() => {
    setGroups([]);
    if (!d.agentId || !d.convId) return;
    let live = true;
    listBranches(d.request, d.agentId, d.convId).then(
      (g) => live && setGroups(g),
      // A Conversation deleted meanwhile simply has no alternatives to show.
      () => live && setGroups([]),
    );
    return () => {
      live = false;
    };
  }, [d.agentId, d.convId, key]);

  const branchAndSend = async (turn: Turn, text: string) => {
    if (!d.agentId || !d.convId) return;
    try {
      const id = await branchBefore(d.request, d.agentId, d.convId, turn.id);
      // Admitted first, then opened: the branch's first page already holds the running Turn.
      try {
        await d.send(id, text);
      } finally {
        await d.open(id);
      }
    } catch (err) {
      d.fail(err);
    }
  };

  return {
    groups,
    focus,
    onFocused: () => setFocus(null),
    rewinding,
    onEdit: (turn, text) => branchAndSend(turn, text),
    onRegenerate: (turn) => branchAndSend(turn, turn.userMessage),
    onRewind: (turn) => {
      if (!d.agentId || !d.convId) return;
      setRewinding({ turn, plan: null, done: null, busy: true });
      rewind(d.request, d.agentId, d.convId, turn.id, false).then(
        (plan) => setRewinding({ turn, plan, done: null, busy: false }),
        (err) => {
          setRewinding(null);
          d.fail(err);
        },
      );
    },
    onConfirmRewind: async () => {
      const r = rewinding;
      if (!r || !d.agentId || !d.convId) return;
      setRewinding({ ...r, busy: true });
      try {
        const done = await rewind(d.request, d.agentId, d.convId, r.turn.id, true);
        setRewinding({ ...r, done, busy: false });
        if (done.session) await d.open(done.session.id);
      } catch (err) {
        setRewinding(null);
        d.fail(err);
      }
    },
    onCloseRewind: () => setRewinding(null),
    onNavigate: (conv, turnId) => {
      // In place: the alternative opens at the same point of the conversation.
      setFocus(turnId === null ? null : { conv, turnId });
      d.open(conv).catch(d.fail);
    },
  };
}
