/**
 * Typed calls for every §13 route the workspace uses, over an injected
 * `Requester` (the CSRF-carrying fetch wrapper of `ui/api.ts` in the browser).
 * Paths are built here only, with every id URI-encoded; every response is
 * parsed with its route's schema (runtime/protocol/api.ts) through `types.ts`.
 */
import {
  AgentResponse,
  AgentsResponse,
  BranchResponse,
  CapabilityAuditResponse,
  ConversationResponse,
  ConversationsResponse,
  HealthResponse,
  ImportResponse,
  InstructionsResponse,
  InstructionsWriteResponse,
  ModelsResponse,
  PermissionDiffResponse,
  PermissionsResponse,
  PolicyResponse,
  type PolicyResponseJson,
  ReplayResponse,
  RunContextResponse,
  type RunnerAccessJson,
  type SearchHitJson,
  SearchResponse,
  SubmitRunResponse,
  WorkspaceFileResponse,
  WorkspaceListResponse,
} from "../../runtime/protocol/api.ts";
import {
  type Agent,
  type CommandDescriptor,
  type CommandResult,
  type ContextProjection,
  type Conversation,
  type ConversationPage,
  type EventEnvelope,
  type Instructions,
  type ModelProfile,
  parse,
  type PendingPermission,
  type PolicyRule,
  toAgent,
  toCommandResult,
  toCommands,
  toConversation,
  toModel,
  toPage,
  toPermission,
  toProjection,
  type WorkspaceEntry,
  type WorkspaceFile,
} from "./types.ts";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
/** Performs one API request; rejects with an error carrying the fixed `code`. */
/** One audit-lite row of an external runner's access [LC-6]. */
export type RunnerAccessRow = RunnerAccessJson;

export type Requester = (method: Method, path: string, body?: unknown) => Promise<unknown>;

const e = encodeURIComponent;
const agentPath = (a: string) => `/api/agents/${e(a)}`;
const convPath = (a: string, c: string) => `${agentPath(a)}/sessions/${e(c)}`;

/** Where a Conversation's export downloads from (a same-origin GET with the session cookie). */
export function exportPath(agent: string, conv: string, format: "md" | "json"): string {
  return `${convPath(agent, conv)}/export?format=${format}`;
}

type Obj = Record<string, unknown>;
function obj(v: unknown): Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Obj : {};
}

/** The fixed error code of a failed request (`unknown_error` when it carries none). */
export function errorCode(err: unknown): string {
  const code = obj(err).code;
  return typeof code === "string" ? code : "unknown_error";
}

/** The fixed public message of a failed request's error envelope [GW-6], if it has one. */
export function errorMessage(err: unknown): string | null {
  const m = obj(obj(obj(err).body).error).message;
  return typeof m === "string" && m.length > 0 && m.length <= 200 ? m : null;
}

export interface Api {
  listAgents(): Promise<Agent[]>;
  createAgent(name: string): Promise<Agent>;
  renameAgent(id: string, name: string): Promise<void>;
  upgradeAgent(id: string): Promise<void>;
  deleteAgent(id: string): Promise<void>;
  listConversations(agent: string): Promise<Conversation[]>;
  createConversation(agent: string, title?: string): Promise<Conversation>;
  getConversation(agent: string, conv: string, before?: string | null): Promise<ConversationPage>;
  renameConversation(agent: string, conv: string, title: string): Promise<void>;
  deleteConversation(agent: string, conv: string): Promise<void>;
  branchConversation(agent: string, conv: string): Promise<Conversation | null>;
  /** Full-text search over the Agent's titles and messages [UI-9]. */
  searchConversations(agent: string, q: string): Promise<SearchHitJson[]>;
  /** Imports an export document as a new Conversation [UI-9]. */
  importConversation(agent: string, doc: unknown): Promise<Conversation>;
  startRun(
    agent: string,
    conv: string,
    body: { message: string; model_id?: string; compact?: boolean },
  ): Promise<{ turnId: string; runId: string }>;
  cancelRun(agent: string, run: string): Promise<void>;
  contextPreview(agent: string, conv: string, modelId?: string | null): Promise<ContextProjection>;
  runContext(agent: string, run: string): Promise<RunContextResponse>;
  /** An external runner's audit-lite rows of a Run (first page of its capability audit) [LC-6]. */
  runnerAccess(agent: string, run: string): Promise<RunnerAccessRow[]>;
  replay(
    agent: string,
    run: string,
    cursor?: number,
  ): Promise<{ events: EventEnvelope[]; next: number | null }>;
  listModels(): Promise<ModelProfile[]>;
  listPermissions(agent: string): Promise<PendingPermission[]>;
  decidePermission(
    agent: string,
    id: string,
    decision: "approve" | "deny",
    alwaysAllow?: boolean,
  ): Promise<void>;
  /** The full diff of an approval [TL-12]. */
  permissionDiff(agent: string, id: string): Promise<string>;
  /** The Agent's policy view [TL-9]. */
  getPolicy(agent: string): Promise<PolicyResponseJson>;
  putPolicy(agent: string, rules: PolicyRule[]): Promise<PolicyResponseJson>;
  listCommands(agent: string): Promise<CommandDescriptor[]>;
  runCommand(agent: string, conv: string, input: string): Promise<CommandResult>;
  listWorkspace(
    agent: string,
    path: string,
  ): Promise<{ path: string; entries: WorkspaceEntry[]; truncated: boolean }>;
  readWorkspaceFile(agent: string, path: string): Promise<WorkspaceFile>;
  getInstructions(agent: string): Promise<Instructions>;
  saveInstructions(
    agent: string,
    body: { text: string; base_digest: string | null; dry_run?: boolean },
  ): Promise<{ diff: string; committed: boolean; digest: string }>;
  health(): Promise<{ model: HealthResponse["model"]; reason: string | null }>;
}

export function createApi(request: Requester): Api {
  const ok = async (p: Promise<unknown>) => {
    await p;
  };
  return {
    listAgents: async () =>
      parse(AgentsResponse, await request("GET", "/api/agents"), "agents").agents.map(toAgent),
    createAgent: async (name) =>
      toAgent(parse(AgentResponse, await request("POST", "/api/agents", { name }), "agent").agent),
    renameAgent: (id, name) => ok(request("PATCH", agentPath(id), { name })),
    upgradeAgent: (id) => ok(request("POST", `${agentPath(id)}/upgrade`)),
    deleteAgent: (id) => ok(request("DELETE", agentPath(id))),
    listConversations: async (a) =>
      parse(ConversationsResponse, await request("GET", `${agentPath(a)}/sessions`), "sessions")
        .sessions.map(toConversation),
    createConversation: async (a, title) => {
      const r = await request("POST", `${agentPath(a)}/sessions`, title ? { title } : {});
      return toConversation(parse(ConversationResponse, r, "session").session);
    },
    getConversation: async (a, c, before) => {
      const q = before ? `?before=${e(before)}` : "";
      return toPage(await request("GET", `${convPath(a, c)}${q}`));
    },
    renameConversation: (a, c, title) => ok(request("PATCH", convPath(a, c), { title })),
    deleteConversation: (a, c) => ok(request("DELETE", convPath(a, c))),
    branchConversation: async (a, c) => {
      const r = await request("POST", `${convPath(a, c)}/continue`, { mode: "branch" });
      return toConversation(parse(BranchResponse, r, "branch").session);
    },
    searchConversations: async (a, q) =>
      parse(SearchResponse, await request("GET", `${agentPath(a)}/search?q=${e(q)}`), "search")
        .results,
    importConversation: async (a, doc) =>
      toConversation(
        parse(
          ImportResponse,
          await request("POST", `${agentPath(a)}/sessions/import`, doc),
          "import",
        )
          .session,
      ),
    startRun: async (a, c, body) => {
      const r = parse(
        SubmitRunResponse,
        await request("POST", `${convPath(a, c)}/runs`, body),
        "run",
      );
      return { turnId: r.turn_id, runId: r.run_id };
    },
    cancelRun: (a, run) => ok(request("POST", `${agentPath(a)}/runs/${e(run)}/cancel`)),
    contextPreview: async (a, c, modelId) => {
      const q = modelId ? `?model_id=${e(modelId)}` : "";
      return toProjection(await request("GET", `${convPath(a, c)}/context-preview${q}`));
    },
    runnerAccess: async (a, run) =>
      parse(
        CapabilityAuditResponse,
        await request("GET", `${agentPath(a)}/runs/${e(run)}/capability-audit`),
        "capability audit",
      ).runner_access ?? [],
    runContext: async (a, run) =>
      parse(
        RunContextResponse,
        await request("GET", `${agentPath(a)}/runs/${e(run)}/context`),
        "context",
      ),
    replay: async (a, run, cursor) => {
      const q = cursor ? `?cursor=${cursor}` : "";
      const r = parse(
        ReplayResponse,
        await request("GET", `${agentPath(a)}/runs/${e(run)}/replay${q}`),
        "replay",
      );
      return { events: r.events, next: r.next_cursor };
    },
    listModels: async () =>
      parse(ModelsResponse, await request("GET", "/api/models"), "models").models.map(toModel),
    listPermissions: async (a) =>
      parse(PermissionsResponse, await request("GET", `${agentPath(a)}/permissions`), "pending")
        .pending.map(toPermission),
    decidePermission: (a, id, decision, alwaysAllow) =>
      ok(
        request(
          "POST",
          `${agentPath(a)}/permissions/${e(id)}`,
          alwaysAllow ? { decision, always_allow: true } : { decision },
        ),
      ),
    permissionDiff: async (a, id) =>
      parse(
        PermissionDiffResponse,
        await request("GET", `${agentPath(a)}/permissions/${e(id)}/diff`),
        "diff",
      ).diff,
    getPolicy: async (a) =>
      parse(PolicyResponse, await request("GET", `${agentPath(a)}/policy`), "policy"),
    putPolicy: async (a, rules) =>
      parse(PolicyResponse, await request("PUT", `${agentPath(a)}/policy`, { rules }), "policy"),
    listCommands: async (a) => toCommands(await request("GET", `${agentPath(a)}/commands`)),
    runCommand: async (a, c, input) =>
      toCommandResult(await request("POST", `${convPath(a, c)}/commands`, { input })),
    listWorkspace: async (a, path) => {
      const r = parse(
        WorkspaceListResponse,
        await request("GET", `${agentPath(a)}/workspace/list?path=${e(path)}`),
        "workspace list",
      );
      return {
        path: r.path,
        truncated: r.truncated,
        entries: r.entries.map((x) => ({
          name: x.name,
          kind: x.kind,
          size: x.size,
          modifiedMs: x.modified_ms,
        })),
      };
    },
    readWorkspaceFile: async (a, path) => {
      const r = parse(
        WorkspaceFileResponse,
        await request("GET", `${agentPath(a)}/workspace/file?path=${e(path)}`),
        "workspace file",
      );
      return { path: r.path, size: r.size, modifiedMs: r.modified_ms, text: r.text };
    },
    getInstructions: async (a) =>
      parse(InstructionsResponse, await request("GET", `${agentPath(a)}/instructions`), "file"),
    saveInstructions: async (a, body) =>
      parse(
        InstructionsWriteResponse,
        await request("POST", `${agentPath(a)}/instructions`, body),
        "file write",
      ),
    health: async () => {
      const r = parse(HealthResponse, await request("GET", "/health"), "health");
      return { model: r.model, reason: r.reason ?? null };
    },
  };
}
