/**
 * Typed calls for every §13 route the workspace uses, over an injected
 * `Requester` (the CSRF-carrying fetch wrapper of `ui/api.ts` in the browser).
 * Paths are built here only, with every id URI-encoded; responses go through
 * the normalizers of `types.ts`.
 */
import {
  type Agent,
  type CommandDescriptor,
  type CommandResult,
  type ContextProjection,
  type Conversation,
  type ConversationPage,
  type Instructions,
  list,
  type ModelProfile,
  num,
  obj,
  type PendingPermission,
  str,
  strOrNull,
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

export type Method = "GET" | "POST" | "PATCH" | "DELETE";
/** Performs one API request; rejects with an error carrying the fixed `code`. */
export type Requester = (method: Method, path: string, body?: unknown) => Promise<unknown>;

const e = encodeURIComponent;
const agentPath = (a: string) => `/api/agents/${e(a)}`;
const convPath = (a: string, c: string) => `${agentPath(a)}/sessions/${e(c)}`;

/** The fixed error code of a failed request (`unknown_error` when it carries none). */
export function errorCode(err: unknown): string {
  const o = obj(err);
  const code = o.code ?? obj(obj(o.body).error).code;
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
  startRun(
    agent: string,
    conv: string,
    body: { message: string; model_id?: string; compact?: boolean },
  ): Promise<{ turnId: string; runId: string }>;
  cancelRun(agent: string, run: string): Promise<void>;
  contextPreview(agent: string, conv: string, modelId?: string | null): Promise<ContextProjection>;
  runContext(agent: string, run: string): Promise<Record<string, unknown>>;
  replay(
    agent: string,
    run: string,
    cursor?: number,
  ): Promise<{ events: unknown[]; next: number | null }>;
  listModels(): Promise<ModelProfile[]>;
  listPermissions(agent: string): Promise<PendingPermission[]>;
  decidePermission(agent: string, id: string, decision: "approve" | "deny"): Promise<void>;
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
  health(): Promise<{ model: string; reason: string | null }>;
}

export function createApi(request: Requester): Api {
  const ok = async (p: Promise<unknown>) => {
    await p;
  };
  return {
    listAgents: async () => list(await request("GET", "/api/agents"), "agents").map(toAgent),
    createAgent: async (name) => {
      const r = obj(await request("POST", "/api/agents", { name }));
      return toAgent(r.agent ?? r);
    },
    renameAgent: (id, name) => ok(request("PATCH", agentPath(id), { name })),
    upgradeAgent: (id) => ok(request("POST", `${agentPath(id)}/upgrade`)),
    deleteAgent: (id) => ok(request("DELETE", agentPath(id))),
    listConversations: async (a) =>
      list(await request("GET", `${agentPath(a)}/sessions`), "sessions", "conversations")
        .map(toConversation),
    createConversation: async (a, title) => {
      const r = obj(await request("POST", `${agentPath(a)}/sessions`, title ? { title } : {}));
      return toConversation(r.session ?? r.conversation ?? r);
    },
    getConversation: async (a, c, before) => {
      const q = before ? `?before=${e(before)}` : "";
      return toPage(await request("GET", `${convPath(a, c)}${q}`));
    },
    renameConversation: (a, c, title) => ok(request("PATCH", convPath(a, c), { title })),
    deleteConversation: (a, c) => ok(request("DELETE", convPath(a, c))),
    branchConversation: async (a, c) => {
      const r = obj(await request("POST", `${convPath(a, c)}/continue`, { mode: "branch" }));
      const conv = r.session ?? r.conversation ?? (typeof r.id === "string" ? r : null);
      return conv ? toConversation(conv) : null;
    },
    startRun: async (a, c, body) => {
      const r = obj(await request("POST", `${convPath(a, c)}/runs`, body));
      return { turnId: str(r.turn_id), runId: str(r.run_id) };
    },
    cancelRun: (a, run) => ok(request("POST", `${agentPath(a)}/runs/${e(run)}/cancel`)),
    contextPreview: async (a, c, modelId) => {
      const q = modelId ? `?model_id=${e(modelId)}` : "";
      return toProjection(await request("GET", `${convPath(a, c)}/context-preview${q}`));
    },
    runContext: async (a, run) =>
      obj(await request("GET", `${agentPath(a)}/runs/${e(run)}/context`)),
    replay: async (a, run, cursor) => {
      const q = cursor ? `?cursor=${cursor}` : "";
      const r = obj(await request("GET", `${agentPath(a)}/runs/${e(run)}/replay${q}`));
      const next = r.next_cursor ?? r.next ?? null;
      return { events: list(r, "events"), next: typeof next === "number" ? next : null };
    },
    listModels: async () => list(await request("GET", "/api/models"), "models").map(toModel),
    listPermissions: async (a) =>
      list(await request("GET", `${agentPath(a)}/permissions`), "permissions", "pending")
        .map(toPermission),
    decidePermission: (a, id, decision) =>
      ok(request("POST", `${agentPath(a)}/permissions/${e(id)}`, { decision })),
    listCommands: async (a) => toCommands(await request("GET", `${agentPath(a)}/commands`)),
    runCommand: async (a, c, input) =>
      toCommandResult(await request("POST", `${convPath(a, c)}/commands`, { input })),
    listWorkspace: async (a, path) => {
      const r = obj(await request("GET", `${agentPath(a)}/workspace/list?path=${e(path)}`));
      return {
        path: str(r.path, "."),
        truncated: r.truncated === true,
        entries: list(r, "entries").map((x) => {
          const o = obj(x);
          const kind = o.kind === "file" || o.kind === "directory" ? o.kind : "other";
          return { name: str(o.name), kind, size: num(o.size), modifiedMs: num(o.modified_ms) };
        }),
      };
    },
    readWorkspaceFile: async (a, path) => {
      const r = obj(await request("GET", `${agentPath(a)}/workspace/file?path=${e(path)}`));
      return {
        path: str(r.path),
        size: num(r.size) ?? 0,
        modifiedMs: num(r.modified_ms),
        text: typeof r.text === "string" ? r.text : null,
      };
    },
    getInstructions: async (a) => {
      const r = obj(await request("GET", `${agentPath(a)}/instructions`));
      return { present: r.present === true, text: str(r.text), digest: strOrNull(r.digest) };
    },
    saveInstructions: async (a, body) => {
      const r = obj(await request("POST", `${agentPath(a)}/instructions`, body));
      return { diff: str(r.diff), committed: r.committed === true, digest: str(r.digest) };
    },
    health: async () => {
      const r = obj(await request("GET", "/health"));
      return {
        model: str(r.model, "unavailable"),
        reason: typeof r.reason === "string" ? r.reason : null,
      };
    },
  };
}
