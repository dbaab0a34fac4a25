/**
 * The Control Plane's composition root: opens the home, its databases and
 * services, and assembles the route table. Everything here is passed down
 * explicitly (no module singletons) so tests can build an App on a temp home.
 */
import { createModelTokenizers } from "./context/model_tokenizers.ts";
import { createCompactService } from "./commands/compact_service.ts";
import { createGitCollector } from "./context/git_collector.ts";
import { compactionRoutes } from "./http/compaction_routes.ts";
import { REGISTRY_MIGRATIONS } from "../migrations/registry/index.ts";
import { agentDataRel, ensureHomeSkeleton, type HomeLayout } from "./home.ts";
import type { Logger } from "./log.ts";
import { authRoutes } from "./http/auth_routes.ts";
import { createAgentDbPool } from "./agents/db_pool.ts";
import { type AgentService, createAgentService } from "./agents/service.ts";
import { type FaultInjector, NO_FAULTS } from "./agents/test_fault.ts";
import { createCursorCodec } from "./conversations/cursor.ts";
import { type ConversationService, createConversationService } from "./conversations/service.ts";
import { agentRoutes, withSystemAgentAliases } from "./http/agent_routes.ts";
import { conversationRoutes } from "./http/conversation_routes.ts";
import { historyRoutes } from "./http/history_routes.ts";
import { rewindRoutes } from "./http/rewind_routes.ts";
import { ensureDefaultInstructionFile } from "./workspace/instruction_file.ts";
import { sweepStaleWriteTemps } from "./workspace/startup_cleanup.ts";
import { createGateway, type WebGateway } from "./http/gateway.ts";
import type { ProductRoute } from "./http/router.ts";
import { staticRoutes } from "./http/static_routes.ts";
import { modelHealth, modelRoutes } from "./http/model_routes.ts";
import { createBroker } from "./model/broker.ts";
import { PullManager } from "./model/pulls.ts";
import {
  type CatalogOptions,
  createCatalog,
  endpointUrl,
  parseOllamaUrl,
} from "./model/catalog.ts";
import type { ModelBroker } from "./model/types.ts";
import { isSelectableModel } from "./http/model_routes.ts";
import { type DatabaseSync, openDatabase } from "./store/sqlite.ts";
import { createCommandPorts, runCommandDeps } from "./app_ports.ts";
import { createCommandService } from "./commands/service.ts";
import { commandRoutes } from "./http/command_routes.ts";
import { runRoutes } from "./http/run_routes.ts";
import { policyRoutes } from "./http/policy_routes.ts";
import { createPolicyService } from "./tools/policy_service.ts";
import { sealCatalog } from "./tools/catalog.ts";
import { changeRoutes } from "./http/change_routes.ts";
import { delegationRoutes } from "./http/delegation_routes.ts";
import { workspaceRoutes } from "./http/workspace_routes.ts";
import { runCommand } from "./exec/runner.ts";
import { TaskManager } from "./tasks/task_manager.ts";
import { taskRoutes } from "./http/task_routes.ts";
import { documentsPort } from "./documents/documents.ts";
import { attachmentRoutes } from "./http/attachment_routes.ts";
import { extractText } from "./documents/extract.ts";
import { createExtensionService, type ExtensionService } from "./extensions/service.ts";
import { extensionRoutes } from "./http/extension_routes.ts";
import { createSkillService, type SkillService } from "./skills/service.ts";
import { skillRoutes } from "./http/skill_routes.ts";
import { runBoundedBash, runRuntimeCompile } from "./exec/exec_run.ts";
import { createRunQueries } from "./runs/run_queries.ts";
import { createRunService, type RunService } from "./runs/run_service.ts";
import { NO_RUN_TEST_HOOKS, type RunTestHooks } from "./runs/test_hooks.ts";
import { type AcpService, createAcpService } from "./acp/service.ts";
import type { RunnerSpec } from "./acp/runners.ts";
import { runnerRoutes } from "./http/runner_routes.ts";
import { fileToolPool } from "./tools/file_tool_pool.ts";

export interface AppOptions {
  home: HomeLayout;
  log: Logger;
  /** Ollama base URL from the operator (--ollama). */
  ollamaUrl: string;
  /** Test-only crash injection (only the test entry passes one). @default NO_FAULTS */
  faults?: FaultInjector;
  /** Test-only Run hooks (only the test entry passes any). @default NO_RUN_TEST_HOOKS */
  runTestHooks?: RunTestHooks;
  /** Test entry only: a shorter background-Task wall limit (≤ TASK_WALL_MAX_MS) [EX-6]. */
  taskWallMs?: number | null;
  /** `--model` (repeatable), `--default-model`, `--max-window` [MB-10]. */
  catalog?: Omit<CatalogOptions, "ollamaUrl" | "timeouts">;
  /** `--mcp NAME=URL` servers and `--mcp-allow-ip` literals [LC-5]. @default none */
  extensions?: { cli: { name: string; url: string; ca?: string }[]; allowIps: string[] };
  /** `--acp-runner NAME=COMMAND` runners [LC-6]. @default none */
  acpRunners?: readonly RunnerSpec[];
  /** `--worker-pool N`: pre-warmed Workers [PF-1]. @default 0 */
  workerPool?: number;
}

export interface App {
  home: HomeLayout;
  log: Logger;
  registryDb: DatabaseSync;
  gateway: WebGateway;
  /** Agent registry, lifecycle, admission fence and the per-Agent state.sqlite pool. */
  agents: AgentService;
  conversations: ConversationService;
  /** The Model Broker [MB]: qualification, chat streams, /health model status. */
  model: ModelBroker;
  /** Runs: admission, confined Workers, journal, live SSE, recovery [CV, EV, SB-5]. */
  runs: RunService;
  /** Model pulls [MB-13]: cancelled on shutdown before the HTTP server drains. */
  pulls: PullManager;
  /** MCP servers and per-Agent enablement [LC-5]. */
  extensions: ExtensionService;
  /** Installed skills per Agent [LC-3]. */
  skills: SkillService;
  /** External ACP runners, their processes and scoped gateway [LC-6]. */
  acp: AcpService;
  routes: ProductRoute[];
  /** Stops background work and closes databases. */
  close(): Promise<void>;
}

export function createApp(opts: AppOptions): App {
  ensureHomeSkeleton(opts.home);
  const registryDb = openDatabase({
    root: opts.home.root,
    relative: "data/agent-registry.sqlite",
    migrations: REGISTRY_MIGRATIONS,
  });
  const gateway = createGateway({ root: opts.home.root, log: opts.log });
  const agentDbs = createAgentDbPool(opts.home.root);
  const agents = createAgentService({
    registryDb,
    pool: agentDbs,
    capsule: { root: opts.home.root, ensureInstructionFile: ensureDefaultInstructionFile },
    log: opts.log,
    faults: opts.faults ?? NO_FAULTS,
  });
  // Converge half-done lifecycle transitions before any request is served [AG-1].
  agents.recover();
  // [TL-6] Write temps left by a crash are swept (≤ 16 per workspace) before serving.
  // [AG-5] Unavailable Agents are left exactly as found.
  const serving = agents.list().filter((a) => a.state !== "unavailable").map((a) => a.id);
  sweepStaleWriteTemps(opts.home.root, serving, opts.log);
  const conversations = createConversationService({ agents, cursors: createCursorCodec() });
  // Qualification starts in the background; Runs fail closed until it succeeds [MB-2].
  const model = createBroker({
    catalog: createCatalog({ ...opts.catalog, ollamaUrl: opts.ollamaUrl }),
    log: opts.log,
  });
  // Pulls and deletes on the operator's Ollama [MB-13]; success ⇒ discovery again.
  const pulls = new PullManager({
    addr: () => model.admin(),
    rediscover: () => model.refresh(),
    log: opts.log,
  });
  const extensions = createExtensionService({
    registryDb,
    allowIps: opts.extensions?.allowIps ?? [],
    cli: opts.extensions?.cli ?? [],
    log: opts.log,
  });
  extensions.start();
  const skills = createSkillService({
    stateDb: (id) => {
      agents.requireUsable(id);
      return agents.pool.get(id);
    },
  });
  const acp = createAcpService({ runners: opts.acpRunners ?? [], log: opts.log });
  // [EX-6] Background Tasks: the server's, not a Run's; left-over ones become interrupted.
  const tasks = new TaskManager({
    root: opts.home.root,
    db: (id) => (agents.requireUsable(id), agentDbs.get(id)),
    workspaceDir: (id) => `${opts.home.root}/${agentDataRel(id)}/workspace`,
    runner: { runCommand, runBoundedBash, runRuntimeCompile },
    log: opts.log,
    wallMs: opts.taskWallMs ?? null,
  });
  tasks.recover(agents.list().filter((a) => a.state === "active").map((a) => a.id));
  const tokenizers = createModelTokenizers(model);
  // Per-Agent policy [TL-9]: this server always has the runner, so the exec tools are offered.
  const policy = createPolicyService({
    registryDb,
    agents,
    catalog: sealCatalog(),
    runner: true,
    // The policy view lists the Agent's skills [LC-3] and MCP tools [LC-5] beside the built-ins.
    extensionSpecs: (id) => [...skills.specsFor(id), ...extensions.specsFor(id)],
    log: opts.log,
  });
  const runs = createRunService({
    home: opts.home,
    agents,
    broker: model,
    log: opts.log,
    testHooks: opts.runTestHooks ?? NO_RUN_TEST_HOOKS,
    runner: { runCommand, runBoundedBash, runRuntimeCompile },
    mcp: extensions,
    tokenizers, // exact counting where the model's vocabulary is verified [CX-7]
    git: createGitCollector({ home: opts.home, runCommand }), // [CX-9]
    skills,
    acp,
    documents: documentsPort({
      enabled: (id) => agents.get(id).documents,
      extract: extractText,
    }),
    tasks,
    workerPool: opts.workerPool,
    policy,
  });
  agents.attachRunControl({
    cancelAgentWork: async (id, why) => {
      await tasks.cancelAgent(id);
      await runs.cancelAgentWork(id, why);
    },
  });
  // [CV-6] Runs left running by a previous process become interrupted before serving.
  runs.recover();
  const runQueries = createRunQueries(runs, policy);
  const routes: ProductRoute[] = [
    ...staticRoutes(modelHealth(model)),
    ...modelRoutes(model, {
      pulls,
      modelInUse: (id) => runs.modelInUse(id),
      endpointUrl: endpointUrl(parseOllamaUrl(opts.ollamaUrl)),
    }),
    ...authRoutes(gateway),
    ...agentRoutes({
      agents,
      models: { isKnown: (id) => isSelectableModel(model, id) },
      runners: acp,
    }),
    ...runnerRoutes({ acp }),
    ...conversationRoutes({ conversations }),
    ...historyRoutes({ conversations }),
    ...rewindRoutes({ conversations, homeRoot: opts.home.root }),
    ...runRoutes({ runs, queries: runQueries }),
    ...policyRoutes({ policy }),
    // [CX-9] /compact: the model's summary of older history, kept or dropped by the operator.
    ...compactionRoutes({
      compact: createCompactService({
        broker: model,
        prepare: (a, c, m) => runs.read.prepare(a, c, m),
        defaultModelId: (a) => runs.read.defaultModelId(a),
        stateDb: (a) => runs.read.stateDb(a),
      }),
    }),
    ...changeRoutes({ stateDb: (id) => runs.read.stateDb(id) }),
    ...delegationRoutes({ agents, stateDb: (id) => runs.read.stateDb(id) }),
    ...workspaceRoutes({ agents, home: opts.home }),
    ...extensionRoutes({ extensions, agents }),
    ...skillRoutes({ skills }),
    ...taskRoutes({ tasks }),
    ...attachmentRoutes({ agents, conversations, home: opts.home }),
  ];
  // Slash commands [SC-1]: read-only ports plus cancel; never a Turn or a model call.
  const commandPorts = createCommandPorts({
    agents,
    conversations,
    model,
    runs: runCommandDeps(runs, runQueries),
  });
  routes.push(...commandRoutes(createCommandService(commandPorts), commandPorts));
  return {
    home: opts.home,
    log: opts.log,
    registryDb,
    gateway,
    agents,
    conversations,
    model,
    runs,
    pulls,
    extensions,
    skills,
    acp,
    routes: withSystemAgentAliases(routes),
    async close() {
      await runs.shutdown();
      await acp.close();
      await tasks.shutdown();
      await pulls.close();
      await model.close();
      tokenizers.close();
      await fileToolPool.close();
      agentDbs.closeAll();
      registryDb.close();
      return Promise.resolve();
    },
  };
}
