/**
 * The signed-in workspace [UI-1..6]: composes where the operator is
 * (`useNavigation`), the open Conversation (`useConversation`), the composer's
 * per-Conversation or per-Agent draft, approvals (durable list + Run streams),
 * models, dialogs and errors, and lays out Sidebar, TopBar, MainPane and
 * RunDetails. Data access goes through `lib/endpoints` and live Runs through
 * one RunStore, so switching Conversations keeps every live Run, draft and
 * model choice.
 */
import { CompactionCard } from "./CompactionCard.ts";
import { html } from "htm/preact";
import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { AgentPanel, type AgentPanelTab } from "./AgentPanel.ts";
import { Dialog } from "./Dialog.ts";
import { ModelsView } from "./ModelsView.ts";
import { ExtensionsView } from "./ExtensionsView.ts";
import { TasksPanel } from "./TasksPanel.ts";
import { ErrorToast } from "./ErrorToast.ts";
import { MainPane } from "./MainPane.ts";
import { ModelBanner } from "./ModelBanner.ts";
import { RunDetails } from "./RunDetails.ts";
import { Sidebar } from "./Sidebar.ts";
import { TopBar } from "./TopBar.ts";
import { createDraftStore } from "./lib/drafts.ts";
import { createApi, errorCode, errorMessage, exportPath, type Requester } from "./lib/endpoints.ts";
import { agentDraftKey, startFirstTurn } from "./lib/first_turn.ts";
import { autoTitle, DEFAULT_TITLE } from "./lib/format.ts";
import { agentActions, conversationActions, type DialogRequest } from "./lib/management.ts";
import { describeError } from "./lib/messages.ts";
import { admittedTurn, effectAction, runBody } from "./lib/commands.ts";
import { useHistoryActions } from "./lib/use_history_actions.ts";
import { resolveCommandInput } from "./lib/command_input.ts";
import { pausedUntil } from "./lib/model_pause.ts";
import type { RunView } from "./lib/run_store.ts";
import { createMarkdownRenderer } from "./lib/sanitize.ts";
import type { CommandDescriptor, CommandResult } from "./lib/types.ts";
import { useApprovals } from "./lib/use_approvals.ts";
import { useComposerPrefs } from "./lib/use_composer_prefs.ts";
import { useConversation } from "./lib/use_conversation.ts";
import { useModelState } from "./lib/use_model_state.ts";
import { useNavigation } from "./lib/use_navigation.ts";
import { useRunRecords } from "./lib/use_run_records.ts";
import { useRunStore } from "./lib/use_run_store.ts";

export interface WorkspaceProps {
  request: Requester;
  /** The session's CSRF token, for uploads that need XHR progress [UI-12]. */
  csrf?: () => string | null;
  onLogout(): void;
}

export function Workspace({ request, onLogout, csrf }: WorkspaceProps) {
  const [compacting, setCompacting] = useState<
    { scope: string; convId: string; key: number } | null
  >(null);
  const api = useMemo(() => createApi(request), [request]);
  const renderer = useMemo(() => createMarkdownRenderer(window), []);
  const drafts = useMemo(() => createDraftStore(globalThis.sessionStorage), []);
  /**
   * The error toast. `scope` is the draft key (Conversation or Agent empty state) a command or
   * message failed in: such a toast shows only there and goes with the next command or message;
   * page-level errors (scope null) stay until dismissed.
   */
  const [error, setError] = useState<
    { message: string; code: string | null; scope: string | null } | null
  >(null);
  const failIn = useCallback((scope: string | null, err: unknown) => {
    const code = err instanceof TypeError ? "network_error" : errorCode(err);
    // A 401 already sends the app back to the login page (api.ts onUnauthorized).
    if (code === "unauthorized") return;
    setError({ message: describeError(code, errorMessage(err)), code, scope });
  }, []);
  const fail = useCallback((err: unknown) => failIn(null, err), [failIn]);
  const nav = useNavigation(api, fail);
  const { agents, agentId, conversations, convId, loadAgents, loadConversations } = nav;
  const model = useModelState(api, fail);
  const [commands, setCommands] = useState<CommandDescriptor[]>([]);
  /** The last command's result, kept with the draft key it ran in (shown only there). */
  const [commandResult, setCommandResult] = useState<
    { scope: string; result: CommandResult } | null
  >(null);
  const [detailsOpen, setDetailsOpen] = useState(false);
  const [detailsRun, setDetailsRun] = useState<string | null>(null);
  const [navOpen, setNavOpen] = useState(false);
  const [dialog, setDialog] = useState<DialogRequest | null>(null);
  const [modelsOpen, setModelsOpen] = useState(false);
  const [extensionsOpen, setExtensionsOpen] = useState(false);
  const [tasksOpen, setTasksOpen] = useState(false);
  const [agentPanel, setAgentPanel] = useState<AgentPanelTab | null>(null);
  const [sending, setSending] = useState(false);
  const [focusTick, setFocusTick] = useState(0);
  /** Draft key of the composer: the open Conversation, or the Agent's empty state. */
  const draftKey = convId ?? (agentId ? agentDraftKey(agentId) : "");
  const composerPrefs = useComposerPrefs(drafts, draftKey);
  const { prefs, patch: patchPrefs } = composerPrefs;
  const { store: runs, views: runViews } = useRunStore({
    onTerminal: (v) => onTerminal(v),
    // A stream refused with 401 means the session ended (logout elsewhere, token rotation):
    // one API request lets the client's 401 handler show the login page, as for any request.
    onLost: (v) => {
      if (v.lostReason === "http_401") api.listAgents().catch(fail);
    },
  });
  const conversation = useConversation(
    api,
    runs,
    agentId,
    convId,
    nav.open,
    (c) => drafts.get(c).modelId,
    fail,
  );
  const turnRuns = useMemo(
    () => new Set(conversation.turns.map((t) => t.runId).filter((r) => r !== null)),
    [conversation.turns],
  );
  const records = useRunRecords(api, agentId, conversation.turns, runViews);
  // Approvals belong to the Conversation whose Turn ran the asking Run.
  const approvals = useApprovals(api, agentId, convId, runViews, turnRuns, fail);

  // Per Agent: its commands.
  useEffect(() => {
    if (!agentId) return;
    setCommandResult(null);
    api.listCommands(agentId).then(setCommands, () => setCommands([]));
  }, [api, agentId]);

  // Navigation takes the last command's result and a command's toast away with it.
  useEffect(() => {
    setCommandResult(null);
    setError((e) => e && e.scope !== null ? null : e);
  }, [draftKey]);

  // The open Conversation was deleted elsewhere: re-read the list, which drops it and opens
  // the newest one (the toast says what happened).
  useEffect(() => {
    if (conversation.loadError === "conversation_not_found" && agentId) {
      loadConversations(agentId).catch(fail);
    }
  }, [conversation.loadError]);

  function onTerminal(v: RunView) {
    if (v.agentId === agentId && v.conversationId === convId) conversation.reload();
    if (v.agentId !== agentId) return;
    // Name an untitled Conversation after its first message, once its first Run ended.
    const c = conversations.find((x) => x.id === v.conversationId);
    const turns = conversation.turns;
    const first = v.conversationId === convId && turns.length === 1 ? turns[0] : null;
    const title = first && c?.title === DEFAULT_TITLE ? autoTitle(first.userMessage) : null;
    const rename = title ? api.renameConversation(agentId, v.conversationId, title) : null;
    (rename ?? Promise.resolve()).then(() => loadConversations(agentId)).catch(fail);
  }

  const activeRunId = useMemo(() => {
    const t = [...conversation.turns].reverse().find((t) => t.state === "running" && t.runId);
    if (!t) return null;
    return runViews.get(t.runId!)?.terminal ? null : t.runId;
  }, [conversation.turns, runViews]);

  const busyConversations = useMemo(() => {
    const s = new Set<string>();
    for (const c of conversations) if (c.activeRunId) s.add(c.id);
    for (const v of runViews.values()) {
      if (v.agentId === agentId && v.terminal === null && v.connection !== "lost") {
        s.add(v.conversationId);
      }
    }
    if (convId && activeRunId) s.add(convId);
    return s;
  }, [conversations, convId, activeRunId, runViews, agentId]);

  // Esc stops the active Run [UI-1], except where Esc already means something else: a dialog or
  // menu (closes it), an input or select (clears the filter, closes the list).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || !agentId || !activeRunId) return;
      if (document.querySelector("dialog[open], .menu-popover:popover-open")) return;
      if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
      e.preventDefault();
      stop(activeRunId);
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [agentId, activeRunId]);

  // ── Actions ──────────────────────────────────────────────────────────────
  const setDraft = (draft: string) => patchPrefs({ draft });

  const selectConversation = (id: string) => {
    nav.selectConversation(id);
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

  /** [UI-9] A download through a same-origin link (the session cookie authorises the GET). */
  const exportConversation = (id: string, format: "md" | "json") => {
    if (!agentId) return;
    const link = document.createElement("a");
    link.href = exportPath(agentId, id, format);
    link.download = "";
    link.click();
  };

  /** [UI-9] The file is sent as parsed; the server validates it and mints new ids. */
  const importConversation = async (file: File) => {
    if (!agentId) return;
    try {
      const text = await file.text();
      let doc: unknown = text;
      try {
        doc = JSON.parse(text);
      } catch { /* sent as a string: the server refuses it with import_invalid */ }
      const c = await api.importConversation(agentId, doc);
      await loadConversations(agentId, c.id);
      setNavOpen(false);
    } catch (err) {
      fail(err);
    }
  };

  /** Empty state: create the Conversation from the message and admit its first Turn. */
  const sendFirst = async (agent: string, text: string) => {
    const r = await startFirstTurn(api, agent, text, prefs);
    composerPrefs.forget(agentDraftKey(agent));
    // The model choice moves to the new Conversation; a refused Turn keeps its text there.
    composerPrefs.patchKey(r.conversation.id, { modelId: prefs.modelId, draft: r.ok ? "" : text });
    if (r.ok) runs.watch(agent, r.conversation.id, r.runId);
    await loadConversations(agent, r.conversation.id);
    if (!r.ok) throw r.error;
    if (detailsOpen) setDetailsRun(r.runId);
  };

  const submit = async (text: string) => {
    if (!agentId) return;
    const scope = draftKey;
    // The previous command's result and a toast from this place go with the next command.
    setCommandResult(null);
    setError((e) => e && e.scope !== null ? null : e);
    if (!convId && text.startsWith("/")) {
      setError({
        message: "Slash commands act on a conversation: send a message first.",
        code: null,
        scope,
      });
      return;
    }
    setSending(true);
    try {
      if (!convId) return await sendFirst(agentId, text);
      if (text.startsWith("/")) {
        const r = await api.runCommand(agentId, convId, resolveCommandInput(text, commands));
        setCommandResult({ scope, result: r });
        setDraft("");
        const action = effectAction(r.effect);
        if (action.kind === "prefs") {
          patchPrefs(action.patch);
          conversation.refreshProjection();
        } else if (action.kind === "compact_summary") {
          // [CX-9] The card asks for the model's summary; the operator keeps or drops it.
          setCompacting({ scope, convId, key: Date.now() });
        } else if (action.kind === "new_conversation") {
          // An empty Conversation is already fresh: reuse it instead of piling up empty ones.
          const empty = conversation.loaded && conversation.turns.length === 0;
          if (!empty) await createConversation();
        }
        return;
      }
      const { turnId, runId } = await api.startRun(agentId, convId, runBody(text, prefs));
      patchPrefs({ draft: "", compactNext: false });
      setCommandResult(null);
      conversation.addTurn(convId, (last) => admittedTurn(turnId, runId, text, last + 1));
      runs.watch(agentId, convId, runId);
      if (detailsOpen) setDetailsRun(runId);
    } catch (err) {
      // A refused first message opened its new Conversation: its toast goes along.
      failIn(convId ? scope : null, err);
    } finally {
      setSending(false);
    }
  };

  /** Stop (button, Esc, composer). A Run that finished meanwhile needs no stopping: no error. */
  function stop(runId: string) {
    if (!agentId) return;
    api.cancelRun(agentId, runId).catch((err) => errorCode(err) !== "run_not_active" && fail(err));
  }

  /** Retry puts the message back in the composer (never re-sends it) and focuses it. */
  const retry = (message: string) => {
    setDraft(message);
    setFocusTick((t) => t + 1);
  };

  const openDetails = (runId: string | null) => {
    const last = [...conversation.turns].reverse().find((t) => t.runId);
    setDetailsRun(runId ?? last?.runId ?? null);
    setDetailsOpen(true);
    setNavOpen(false);
  };

  // [UI-8, TL-11] edit/regenerate branch before a Turn and send there; rewind; ‹ i/n ›.
  const history = useHistoryActions({
    request,
    agentId,
    // Only once the open Conversation is known to be this Agent's (an Agent switch by URL
    // would otherwise ask for the previous Agent's Conversation under the new one: a 404).
    convId: nav.open ? convId : null,
    turns: conversation.turns,
    send: async (conv, text) => {
      if (!agentId) return;
      const { runId } = await api.startRun(agentId, conv, runBody(text, prefs));
      runs.watch(agentId, conv, runId);
    },
    open: (conv) => agentId ? loadConversations(agentId, conv) : Promise.resolve(),
    fail,
  });

  const agent = agents.find((a) => a.id === agentId) ?? null;
  const mgmt = {
    api,
    agent,
    agents,
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

  const conv = conversations.find((c) => c.id === convId) ?? null;
  const modelDown = model.health !== null && model.health.model !== "available";

  return html`
    <div class=${`workspace ${detailsOpen ? "with-details" : ""} ${navOpen ? "nav-open" : ""}`}
      data-testid="workspace">
      <div class="nav-scrim" onClick=${() => setNavOpen(false)} aria-hidden="true"></div>
      <${Sidebar} agents=${agents} agentId=${agentId} conversations=${conversations}
        conversationId=${convId} busyConversations=${busyConversations}
        awaitingConversations=${approvals.awaitingConversations}
        onSelectAgent=${nav.selectAgent} onCreateAgent=${agentDialogs.create}
        onRenameAgent=${agentDialogs.rename}
        onAgentPanel=${(
          tab: AgentPanelTab,
        ) => (setAgentPanel(tab), setNavOpen(false))} onRebuildAgent=${agentDialogs.rebuild}
        onDeleteAgent=${agentDialogs.remove} onSelectConversation=${selectConversation}
        onCreateConversation=${createConversation} onRenameConversation=${convDialogs.rename}
        onBranchConversation=${convDialogs.branch} onDeleteConversation=${convDialogs.remove}
        onSearch=${(q: string) => api.searchConversations(agentId ?? "", q)}
        onExportConversation=${exportConversation} onImportConversation=${importConversation}
        onLogout=${onLogout} />
      <main class="main" aria-label="Chat">
        <${TopBar} title=${conv?.title ?? (agent ? agent.name : "Agent Builder")}
          subtitle=${agent && conv ? agent.name : null} detailsOpen=${detailsOpen}
          onOpenNav=${() => (setNavOpen(true), setDetailsOpen(false))}
          onToggleDetails=${() => detailsOpen ? setDetailsOpen(false) : openDetails(detailsRun)}
          onOpenModels=${() => setModelsOpen(true)}
          onOpenExtensions=${() => setExtensionsOpen(true)}
          onOpenTasks=${agent ? () => setTasksOpen(true) : undefined} />
        ${modelDown &&
          html`<${ModelBanner} reason=${
            model.health?.reason ?? null
          } onRecheck=${model.refresh} request=${request} />`}
        ${error && (error.scope === null || error.scope === draftKey) && html`
          <${ErrorToast} message=${error.message} code=${error.code}
            onDismiss=${() => setError(null)} />
        `}
        ${compacting && agentId && compacting.convId === convId && html`
          <${CompactionCard} key=${compacting.key} request=${request} agentId=${agentId}
            convId=${compacting.convId} onChanged=${() => conversation.refreshProjection()}
            onClose=${() => setCompacting(null)} />
        `}
        <${MainPane} agentId=${agentId} agentName=${agent?.name ?? null}
          agentRunner=${agent?.runner ?? null} convId=${convId}
          conversation=${conversation} approvals=${approvals.forConversation} runs=${runViews}
          records=${records}
          renderer=${renderer} onCreateConversation=${createConversation}
          onDecide=${approvals.decide}
          onStop=${stop} onReconnect=${(runId: string) =>
            agentId && convId && runs.watch(agentId, convId, runId)}
          onRetry=${retry} onDetails=${openDetails} history=${history} composer=${{
            conversationOpen: convId !== null,
            focusTick,
            draft: prefs.draft,
            modelId: prefs.modelId,
            compactNext: prefs.compactNext,
            models: model.models,
            agentDefaultModel: agent?.defaultModelId ?? null,
            commands,
            commandResult: commandResult?.scope === draftKey ? commandResult.result : null,
            permissions: approvals.pending,
            conversationTitle: (id: string | null) =>
              conversations.find((c) => c.id === id)?.title ?? "another conversation",
            onDecide: approvals.decide,
            activeRunId,
            pausedUntil: convId ? pausedUntil(conversation.turns) : null,
            sending,
            onDraft: setDraft,
            onModel: (modelId: string | null) => {
              patchPrefs({ modelId });
              conversation.refreshProjection();
            },
            onClearCompact: () => patchPrefs({ compactNext: false }),
            onSubmit: submit,
            onStop: stop,
            onDismissResult: () => setCommandResult(null),
            attach: agentId && convId && csrf ? { agentId, conversationId: convId, csrf } : null,
          }} />
      </main>
      ${detailsOpen && agentId && html`
        <${RunDetails} api=${api} agentId=${agentId} runId=${detailsRun}
          live=${detailsRun ? runViews.get(detailsRun) : undefined} onClose=${() =>
            setDetailsOpen(false)} />
      `}
      ${dialog && html`<${Dialog} request=${dialog} onClose=${() => setDialog(null)} />`}
      ${agentPanel && agent && html`
        <${AgentPanel} api=${api} agent=${agent} models=${model.models} tab=${agentPanel}
          onTab=${setAgentPanel} onClose=${() => setAgentPanel(null)} request=${request}
          onAgentChanged=${() => loadAgents(agentId).catch(fail)} />
      `}
      ${tasksOpen && agent && html`
        <${TasksPanel} request=${request} agent=${agent} onClose=${() => setTasksOpen(false)}
          onOpenRun=${(conv: string, runId: string) => {
            setTasksOpen(false);
            nav.selectConversation(conv);
            setDetailsRun(runId);
            setDetailsOpen(true);
          }} />
      `}
      ${extensionsOpen && html`
        <${ExtensionsView} request=${request} agent=${agent}
          onClose=${() => setExtensionsOpen(false)} />
      `}
      ${modelsOpen && html`
        <${ModelsView} request=${request} onClose=${() => setModelsOpen(false)}
          agent=${agent} onAgentChanged=${() => loadAgents(agentId).catch(fail)}
          onChanged=${model.refresh} />
      `}
    </div>
  `;
}
