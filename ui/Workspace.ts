/**
 * The signed-in workspace [UI-1..6]: owns the page state (Agents,
 * Conversations, the open Conversation's Turn page, models, context
 * projection, approvals, dialogs, errors) and wires the Sidebar, ChatView,
 * Composer and RunDetails together. Data access goes through `lib/endpoints`
 * and live Runs through one RunStore, so switching Conversations keeps every
 * live Run, draft and model choice.
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApprovalList } from "./ApprovalList.ts";
import { ChatView } from "./ChatView.ts";
import { Composer } from "./Composer.ts";
import { Dialog } from "./Dialog.ts";
import { EmptyMain } from "./EmptyMain.ts";
import { ErrorToast } from "./ErrorToast.ts";
import { ModelBanner } from "./ModelBanner.ts";
import { RunDetails } from "./RunDetails.ts";
import { Sidebar } from "./Sidebar.ts";
import { TopBar } from "./TopBar.ts";
import { type ConversationPrefs, createDraftStore } from "./lib/drafts.ts";
import { createApi, errorCode, type Requester } from "./lib/endpoints.ts";
import { autoTitle, DEFAULT_TITLE, mergeTurns } from "./lib/format.ts";
import { agentActions, conversationActions, type DialogRequest } from "./lib/management.ts";
import { describeError } from "./lib/messages.ts";
import { formatPlace, parsePlace } from "./lib/route.ts";
import { loadOlderTurns } from "./lib/history.ts";
import { admittedTurn, effectAction, runBody } from "./lib/commands.ts";
import { createRunStore, type RunView } from "./lib/run_store.ts";
import { createMarkdownRenderer } from "./lib/sanitize.ts";
import type {
  Agent,
  CommandDescriptor,
  CommandResult,
  ContextProjection,
  Conversation,
  ModelProfile,
  PendingPermission,
  Turn,
} from "./lib/types.ts";
import { unavailableProjection } from "./lib/types.ts";

export interface WorkspaceProps {
  request: Requester;
  onLogout(): void;
}

const PERMISSION_POLL_MS = 2000;

export function Workspace({ request, onLogout }: WorkspaceProps) {
  const api = useMemo(() => createApi(request), [request]);
  const renderer = useMemo(() => createMarkdownRenderer(window), []);
  const drafts = useMemo(() => createDraftStore(globalThis.sessionStorage), []);
  const onTerminalRef = useRef<(v: RunView) => void>(() => {});
  const runs = useMemo(() => createRunStore((v) => onTerminalRef.current(v)), []);

  const initial = useMemo(() => parsePlace(location.hash), []);
  const [agents, setAgents] = useState<Agent[]>([]);
  const [agentId, setAgentId] = useState<string | null>(null);
  const [conversations, setConversations] = useState<Conversation[]>([]);
  const [convId, setConvIdState] = useState<string | null>(null);
  // The Agent the selected Conversation belongs to: after an Agent switch the
  // old id must never be requested under the new Agent.
  const convOwner = useRef<string | null>(null);
  const setConvId = (agent: string | null, id: string | null) => {
    convOwner.current = id === null ? null : agent;
    setConvIdState(id);
  };
  const [turns, setTurns] = useState<Turn[]>([]);
  const [before, setBefore] = useState<string | null>(null);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [models, setModels] = useState<ModelProfile[]>([]);
  const [health, setHealth] = useState<{ model: string; reason: string | null } | null>(null);
  const [projection, setProjection] = useState<ContextProjection | null>(null);
  const [commands, setCommands] = useState<CommandDescriptor[]>([]);
  const [commandResult, setCommandResult] = useState<CommandResult | null>(null);
  const [permissions, setPermissions] = useState<PendingPermission[]>([]);
  const [detailsOpen, setDetailsOpen] = useState(false);
  const [detailsRun, setDetailsRun] = useState<string | null>(null);
  const [navOpen, setNavOpen] = useState(false);
  const [dialog, setDialog] = useState<DialogRequest | null>(null);
  const [error, setError] = useState<{ message: string; code: string | null } | null>(null);
  const [tick, setTick] = useState(0);
  const [sending, setSending] = useState(false);
  const [prefs, setPrefs] = useState(() => drafts.get(""));

  useEffect(() => {
    const unsubscribe = runs.subscribe(() => setTick((t) => t + 1));
    return () => (unsubscribe(), runs.closeAll());
  }, [runs]);

  const fail = useCallback((err: unknown) => {
    const code = err instanceof TypeError ? "network_error" : errorCode(err);
    // A 401 already sends the app back to the login page (api.ts onUnauthorized).
    if (code === "unauthorized") return;
    setError({ message: describeError(code), code });
  }, []);

  const refreshHealth = useCallback(() => {
    api.health().then(setHealth, fail);
    api.listModels().then(setModels, () => setModels([]));
  }, [api, fail]);

  // ── Agents ────────────────────────────────────────────────────────────────
  const loadAgents = useCallback(async (prefer?: string | null) => {
    const list = await api.listAgents();
    setAgents(list);
    const pick = list.find((a) => a.id === prefer) ?? list.find((a) => a.id === agentId) ??
      list.find((a) => !a.system) ?? list[0] ?? null;
    setAgentId(pick ? pick.id : null);
  }, [api, agentId]);

  useEffect(() => {
    loadAgents(initial.agentId).catch(fail);
    refreshHealth();
  }, []);

  // ── Conversations of the Agent ───────────────────────────────────────────
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
    if (!agentId) return;
    setConversations([]);
    setConvId(null, null);
    setCommandResult(null);
    loadConversations(agentId, agentId === initial.agentId ? initial.conversationId : null)
      .catch(fail);
    api.listCommands(agentId).then(setCommands, () => setCommands([]));
    api.listPermissions(agentId).then(setPermissions, () => setPermissions([]));
  }, [agentId]);

  useEffect(() => {
    history.replaceState(null, "", formatPlace({ agentId, conversationId: convId }) || "#");
  }, [agentId, convId]);

  // ── The open Conversation ────────────────────────────────────────────────
  const loadPage = useCallback(async (agent: string, conv: string) => {
    const page = await api.getConversation(agent, conv);
    setTurns((
      cur,
    ) => (cur.length && cur[0] && page.turns.length
      ? mergeTurns(
        cur.filter((t) => page.turns.some((p) => p.id === t.id) || t.seq < page.turns[0].seq),
        page.turns,
      )
      : page.turns)
    );
    // A new Turn changes the conversation revision, which retires older cursors [CV-3]:
    // always keep the freshest one (loadOlder skips pages that are already shown).
    setBefore(page.before);
    for (const t of page.turns) {
      if (t.state === "running" && t.runId) runs.watch(agent, conv, t.runId);
    }
  }, [api, runs]);

  const refreshProjection = useCallback((agent: string, conv: string) => {
    api.contextPreview(agent, conv, drafts.get(conv).modelId).then(
      setProjection,
      (err) => setProjection(unavailableProjection(errorCode(err))),
    );
  }, [api]);

  useEffect(() => {
    setTurns([]);
    setBefore(null);
    setProjection(null);
    setCommandResult(null);
    setPrefs(drafts.get(convId ?? ""));
    if (!agentId || !convId || convOwner.current !== agentId) return;
    api.getConversation(agentId, convId).then((page) => {
      setTurns(page.turns);
      setBefore(page.before);
      for (const t of page.turns) {
        if (t.state === "running" && t.runId) runs.watch(agentId, convId, t.runId);
      }
    }, fail);
    refreshProjection(agentId, convId);
  }, [agentId, convId]);

  onTerminalRef.current = (v: RunView) => {
    if (v.agentId === agentId && v.conversationId === convId) {
      loadPage(v.agentId, v.conversationId).catch(fail);
      refreshProjection(v.agentId, v.conversationId);
    }
    if (v.agentId !== agentId) return;
    // Name an untitled Conversation after its first message, once its first Run ended.
    const c = conversations.find((x) => x.id === v.conversationId);
    const first = v.conversationId === convId && turns.length === 1 ? turns[0] : null;
    const title = first && c?.title === DEFAULT_TITLE ? autoTitle(first.userMessage) : null;
    const rename = title ? api.renameConversation(agentId, v.conversationId, title) : null;
    (rename ?? Promise.resolve()).then(() => loadConversations(agentId)).catch(fail);
  };

  const activeRunId = useMemo(() => {
    const t = [...turns].reverse().find((t) => t.state === "running" && t.runId);
    if (!t) return null;
    return runs.get(t.runId!)?.terminal ? null : t.runId;
  }, [turns, tick]);

  const busyConversations = useMemo(() => {
    const s = new Set<string>();
    for (const c of conversations) if (c.activeRunId) s.add(c.id);
    for (const v of runs.live()) if (v.agentId === agentId) s.add(v.conversationId);
    if (convId && activeRunId) s.add(convId);
    return s;
  }, [conversations, convId, activeRunId, tick, agentId]);

  // Approvals: poll while a Run is active in this Conversation.
  useEffect(() => {
    if (!agentId || !activeRunId) return;
    const t = setInterval(() => {
      api.listPermissions(agentId).then(setPermissions, () => {});
    }, PERMISSION_POLL_MS);
    return () => clearInterval(t);
  }, [agentId, activeRunId]);

  // Esc stops the active Run [UI-1].
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || !agentId || !activeRunId) return;
      if (document.querySelector("dialog[open], .menu-popover:popover-open")) return;
      e.preventDefault();
      api.cancelRun(agentId, activeRunId).catch(fail);
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [agentId, activeRunId]);

  // ── Actions ──────────────────────────────────────────────────────────────
  /** Updates this Conversation's draft/model/compaction, in memory and in the store. */
  const patchPrefs = (patch: Partial<ConversationPrefs>) => {
    if (convId) drafts.set(convId, patch);
    setPrefs((p) => ({ ...p, ...patch }));
  };
  const setDraft = (draft: string) => patchPrefs({ draft });

  const selectConversation = (id: string) => {
    setConvId(agentId, id);
    setNavOpen(false);
  };

  const createConversation = async () => {
    if (!agentId) return;
    try {
      const c = await api.createConversation(agentId);
      await loadConversations(agentId, c.id);
      setNavOpen(false);
    } catch (err) {
      fail(err);
    }
  };

  const submit = async (text: string) => {
    if (!agentId) return;
    if (!convId) {
      setError({ message: "Create a conversation first.", code: null });
      return;
    }
    setSending(true);
    try {
      if (text.startsWith("/")) {
        const r = await api.runCommand(agentId, convId, text);
        setCommandResult(r);
        setDraft("");
        const action = effectAction(r.effect);
        if (action.kind === "prefs") {
          patchPrefs(action.patch);
          refreshProjection(agentId, convId);
        } else if (action.kind === "new_conversation") await createConversation();
        return;
      }
      const { turnId, runId } = await api.startRun(agentId, convId, runBody(text, prefs));
      patchPrefs({ draft: "", compactNext: false });
      setCommandResult(null);
      setTurns((cur) => [...cur, admittedTurn(turnId, runId, text, (cur.at(-1)?.seq ?? 0) + 1)]);
      runs.watch(agentId, convId, runId);
      if (detailsOpen) setDetailsRun(runId);
    } catch (err) {
      fail(err);
    } finally {
      setSending(false);
    }
  };

  const decide = async (id: string, d: "approve" | "deny") => {
    if (!agentId) return;
    try {
      await api.decidePermission(agentId, id, d);
      setPermissions(await api.listPermissions(agentId));
    } catch (err) {
      fail(err);
    }
  };

  const stop = (runId: string) => {
    if (agentId) api.cancelRun(agentId, runId).catch(fail);
  };

  /** Older pages already on screen are skipped (bounded) so each click shows new Turns. */
  const loadOlder = async () => {
    if (!agentId || !convId || !before) return;
    setLoadingOlder(true);
    try {
      const r = await loadOlderTurns((b) => api.getConversation(agentId, convId, b), turns, before);
      setTurns((cur) => mergeTurns(r.turns, cur));
      setBefore(r.before);
    } catch (err) {
      fail(err);
    } finally {
      setLoadingOlder(false);
    }
  };

  const openDetails = (runId: string | null) => {
    setDetailsRun(runId ?? [...turns].reverse().find((t) => t.runId)?.runId ?? null);
    setDetailsOpen(true);
    setNavOpen(false);
  };

  const agent = agents.find((a) => a.id === agentId) ?? null;
  const mgmt = {
    api,
    agent,
    agentId,
    convId,
    conversations,
    drafts,
    ask: setDialog,
    reloadAgents: loadAgents,
    reloadConversations: loadConversations,
    closeNav: () => setNavOpen(false),
    fail,
  };
  const agentDialogs = agentActions(mgmt);
  const convDialogs = conversationActions(mgmt);

  // Approvals belong to the Conversation whose Turn ran the asking Run.
  const convPermissions = permissions.filter((p) =>
    p.conversationId === convId || turns.some((t) => t.runId !== null && t.runId === p.runId)
  );
  const conv = conversations.find((c) => c.id === convId) ?? null;
  const modelDown = health !== null && health.model !== "available";

  return html`
    <div class=${`workspace ${detailsOpen ? "with-details" : ""} ${navOpen ? "nav-open" : ""}`}
      data-testid="workspace">
      <div class="nav-scrim" onClick=${() => setNavOpen(false)} aria-hidden="true"></div>
      <${Sidebar} agents=${agents} agentId=${agentId} conversations=${conversations}
        conversationId=${convId} busyConversations=${busyConversations}
        onSelectAgent=${(id: string) => setAgentId(id)} onCreateAgent=${agentDialogs.create}
        onRenameAgent=${agentDialogs.rename} onRebuildAgent=${agentDialogs.rebuild}
        onDeleteAgent=${agentDialogs.remove} onSelectConversation=${selectConversation}
        onCreateConversation=${createConversation} onRenameConversation=${convDialogs.rename}
        onBranchConversation=${convDialogs.branch} onDeleteConversation=${convDialogs.remove}
        onLogout=${onLogout} />
      <main class="main" aria-label="Chat">
        <${TopBar} title=${conv?.title ?? (agent ? agent.name : "Agent Builder")}
          subtitle=${agent && conv ? agent.name : null} detailsOpen=${detailsOpen}
          onOpenNav=${() => {
            setNavOpen(true);
            setDetailsOpen(false);
          }}
          onToggleDetails=${() => (detailsOpen
            ? setDetailsOpen(false)
            : openDetails(detailsRun))} />
        ${modelDown &&
          html`<${ModelBanner} reason=${health?.reason ?? null} onRecheck=${refreshHealth} />`}
        ${error && html`
          <${ErrorToast} message=${error.message} code=${error.code}
            onDismiss=${() => setError(null)} />
        `}
        ${convId
          ? html`
            <${ChatView} conversationId=${convId} turns=${turns} hasOlder=${before !== null}
              loadingOlder=${loadingOlder} runs=${runs} liveTick=${tick} renderer=${renderer}
              awaitingRuns=${new Set(convPermissions.map((p) => p.runId).filter((r) => r !== null))}
              onLoadOlder=${loadOlder} onStop=${stop}
              onReconnect=${(runId: string) =>
                agentId && convId && runs.watch(agentId, convId, runId)} onRetry=${setDraft}
              onDetails=${openDetails} />
            <${ApprovalList} permissions=${convPermissions} onDecide=${decide} />
            <${Composer} conversationId=${convId} draft=${prefs.draft} modelId=${prefs.modelId}
              compactNext=${prefs
                .compactNext}
              models=${models} projection=${projection} commands=${commands}
              commandResult=${commandResult} activeRunId=${activeRunId} sending=${sending}
              onDraft=${setDraft} onModel=${(modelId: string | null) => {
                patchPrefs({ modelId });
                if (agentId && convId) refreshProjection(agentId, convId);
              }}
              onClearCompact=${() => patchPrefs({ compactNext: false })}
              onSubmit=${submit} onStop=${stop} onDismissResult=${() => setCommandResult(null)} />
          `
          : html`
            <${EmptyMain} agentName=${agent?.name ??
              null} onCreateConversation=${createConversation} />
          `}
      </main>
      ${detailsOpen && agentId && html`
        <${RunDetails} api=${api} agentId=${agentId} runId=${detailsRun}
          live=${detailsRun ? runs.get(detailsRun) : undefined} onClose=${() =>
            setDetailsOpen(false)} />
      `}
      ${dialog && html`<${Dialog} request=${dialog} onClose=${() => setDialog(null)} />`}
    </div>
  `;
}
