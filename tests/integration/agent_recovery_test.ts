/**
 * [AG-1] Crash recovery: the real server is SIGKILLed at each lifecycle step
 * (armed through AGENT_BUILDER_TEST_FAULT, see tests/helpers/test_server_entry.ts),
 * the registry is checked to hold the half-done state, and a restart on the
 * same home must converge it: provisioning → active, upgrading → promoted to
 * the next generation, deleting → data and runtime dirs gone, row removed.
 */
import { DatabaseSync } from "node:sqlite";
import type { FaultPoint } from "../../runtime/agents/test_fault.ts";
import { FAULT_ENV } from "../helpers/test_server_entry.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { type Api, apiClient, codeOf } from "../helpers/agents_api.ts";
import { addTurn, openAgentState } from "../helpers/agent_state.ts";
import { login } from "../helpers/login.ts";
import { exists, makeTempHome } from "../helpers/home.ts";
import {
  DENO,
  RUN_FLAGS,
  type ServerHandle,
  startTestServer,
  TEST_ENTRY,
} from "../helpers/server.ts";

interface RegistryRow {
  id: string;
  state: string;
  generation: number;
  pending_generation: number | null;
}

function registryRows(home: string): RegistryRow[] {
  const db = new DatabaseSync(`${home}/data/agent-registry.sqlite`);
  try {
    return db.prepare(
      "SELECT id, state, generation, pending_generation FROM agents WHERE is_system = 0",
    ).all() as unknown as RegistryRow[];
  } finally {
    db.close();
  }
}

async function session(server: ServerHandle): Promise<Api> {
  return apiClient(server, await login(server));
}

/** Sends the request the fault interrupts; the server must die without answering. */
async function crashOn(
  server: ServerHandle,
  api: Api,
  method: string,
  path: string,
  body?: unknown,
) {
  let answered: number | null = null;
  try {
    answered = (await api(method, path, body)).status;
  } catch (err) {
    if (!(err instanceof TypeError)) throw err; // connection reset by the SIGKILL
  }
  assertEquals(answered, null, "the server answered instead of crashing");
  const status = await server.child.status;
  assertEquals(status.signal, "SIGKILL");
  await server.kill();
}

interface Case {
  point: FaultPoint;
  /** Before the crash: create what the operation needs; returns the agent id (if any). */
  prepare(api: Api, home: string): Promise<string | null>;
  crash(server: ServerHandle, api: Api, agentId: string | null): Promise<void>;
  /** The half-done state the registry must show after the crash. */
  halfDone(rows: RegistryRow[], home: string): void;
  /** After restart: converged. */
  converged(api: Api, home: string, agentId: string): Promise<void>;
}

async function agentWithConversation(api: Api, home: string): Promise<string> {
  const a = (await api("POST", "/api/agents", { name: "victim" })).body.agent.id as string;
  const c = (await api("POST", `/api/agents/${a}/sessions`, { title: "keep me" })).body.session.id;
  const db = openAgentState(home, a);
  try {
    addTurn(db, c);
  } finally {
    db.close();
  }
  return a;
}

async function expectActive(api: Api, home: string, id: string, generation: number) {
  const a = (await api("GET", `/api/agents/${id}`)).body.agent;
  assertEquals([a.state, a.generation], ["active", generation]);
  assert(exists(`${home}/data/agents/${id}/workspace/agent-builder.md`));
  assert(exists(`${home}/data/agents/${id}/state.sqlite`));
  assert(exists(`${home}/.runtime/agents/${id}`));
  const manifest = JSON.parse(Deno.readTextFileSync(`${home}/data/agents/${id}/manifest.json`));
  assertEquals(manifest.generation, generation);
}

async function expectGone(api: Api, home: string, id: string) {
  assertEquals(codeOf(await api("GET", `/api/agents/${id}`)), "agent_not_found");
  assert(!exists(`${home}/data/agents/${id}`));
  assert(!exists(`${home}/.runtime/agents/${id}`));
  assertEquals(registryRows(home).filter((r) => r.id === id), []);
}

const CASES: Case[] = [
  {
    point: "agent.create.after_insert",
    prepare: () => Promise.resolve(null),
    crash: (s, api) => crashOn(s, api, "POST", "/api/agents", { name: "new" }),
    halfDone(rows, home) {
      assertEquals(rows.map((r) => r.state), ["provisioning"]);
      assert(!exists(`${home}/data/agents/${rows[0].id}`));
    },
    converged: (api, home, id) => expectActive(api, home, id, 1),
  },
  {
    point: "agent.create.after_provisioning",
    prepare: () => Promise.resolve(null),
    crash: (s, api) => crashOn(s, api, "POST", "/api/agents", { name: "new" }),
    halfDone(rows, home) {
      assertEquals(rows.map((r) => r.state), ["provisioning"]);
      assert(exists(`${home}/data/agents/${rows[0].id}/state.sqlite`));
    },
    converged: (api, home, id) => expectActive(api, home, id, 1),
  },
  {
    point: "agent.upgrade.after_fence",
    prepare: agentWithConversation,
    crash: (s, api, id) => crashOn(s, api, "POST", `/api/agents/${id}/upgrade`),
    halfDone(rows) {
      assertEquals(rows.map((r) => [r.state, r.generation, r.pending_generation]), [[
        "upgrading",
        1,
        2,
      ]]);
    },
    async converged(api, home, id) {
      await expectActive(api, home, id, 2);
      const sessions = (await api("GET", `/api/agents/${id}/sessions`)).body.sessions;
      assertEquals(sessions.map((c: { title: string }) => c.title), ["keep me"]);
    },
  },
  {
    point: "agent.upgrade.after_stage",
    prepare: agentWithConversation,
    crash: (s, api, id) => crashOn(s, api, "POST", `/api/agents/${id}/upgrade`),
    halfDone(rows, home) {
      assertEquals(rows.map((r) => [r.state, r.pending_generation]), [["upgrading", 2]]);
      const m = JSON.parse(
        Deno.readTextFileSync(`${home}/data/agents/${rows[0].id}/manifest.json`),
      );
      assertEquals(m.generation, 2);
    },
    async converged(api, home, id) {
      await expectActive(api, home, id, 2);
      const sessions = (await api("GET", `/api/agents/${id}/sessions`)).body.sessions;
      const detail = await api("GET", `/api/agents/${id}/sessions/${sessions[0].id}`);
      assertEquals(detail.body.turns.length, 1);
    },
  },
  {
    point: "agent.delete.after_fence",
    prepare: agentWithConversation,
    crash: (s, api, id) => crashOn(s, api, "DELETE", `/api/agents/${id}`),
    halfDone(rows, home) {
      assertEquals(rows.map((r) => r.state), ["deleting"]);
      assert(exists(`${home}/data/agents/${rows[0].id}`));
    },
    converged: expectGone,
  },
  {
    point: "agent.delete.after_remove_data",
    prepare: agentWithConversation,
    crash: (s, api, id) => crashOn(s, api, "DELETE", `/api/agents/${id}`),
    halfDone(rows, home) {
      assertEquals(rows.map((r) => r.state), ["deleting"]);
      assert(!exists(`${home}/data/agents/${rows[0].id}`));
      assert(exists(`${home}/.runtime/agents/${rows[0].id}`));
    },
    converged: expectGone,
  },
];

for (const c of CASES) {
  Deno.test(`a crash at ${c.point} is converged by the next start`, async () => {
    const home = makeTempHome();
    try {
      // First start (unarmed) provisions the system Agent and whatever the case needs.
      const setup = await startTestServer({ home });
      let agentId: string | null;
      try {
        agentId = await c.prepare(await session(setup), home);
      } finally {
        await setup.stop();
      }
      const armed = await startTestServer({ home, env: { [FAULT_ENV]: c.point } });
      try {
        await c.crash(armed, await session(armed), agentId);
      } catch (err) {
        await armed.kill();
        throw err;
      }
      const rows = registryRows(home);
      c.halfDone(rows, home);
      agentId ??= rows[0].id;
      const second = await startTestServer({ home });
      try {
        await c.converged(await session(second), home, agentId);
      } finally {
        await second.stop();
      }
    } finally {
      Deno.removeSync(home, { recursive: true });
    }
  });
}

Deno.test("a crash while the first start provisions the system Agent is converged", async () => {
  const home = makeTempHome();
  try {
    // The armed first start dies inside recovery, before it ever listens.
    const child = new Deno.Command(DENO, {
      args: [...RUN_FLAGS, TEST_ENTRY, "serve", "--port", "0", "--home", home],
      stdin: "null",
      stdout: "null",
      stderr: "null",
      env: { DENO_NO_UPDATE_CHECK: "1", [FAULT_ENV]: "agent.create.after_provisioning" },
    }).spawn();
    assertEquals((await child.status).signal, "SIGKILL");
    const db = new DatabaseSync(`${home}/data/agent-registry.sqlite`);
    const states = db.prepare("SELECT state FROM agents WHERE is_system = 1").all();
    db.close();
    assertEquals(states.map((r) => r.state), ["provisioning"]);
    const server = await startTestServer({ home });
    try {
      const api = await session(server);
      const sys = (await api("GET", "/api/agents")).body.agents;
      assertEquals(sys.map((a: { state: string; is_system: boolean }) => [a.state, a.is_system]), [
        ["active", true],
      ]);
      assert(exists(`${home}/data/agents/${sys[0].id}/workspace/agent-builder.md`));
    } finally {
      await server.stop();
    }
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("an unknown fault name arms nothing", async () => {
  const server = await startTestServer({ env: { [FAULT_ENV]: "agent.create.nowhere" } });
  try {
    const api = await session(server);
    const r = await api("POST", "/api/agents", { name: "fine" });
    assertEquals(r.status, 201);
  } finally {
    await server.stop();
    Deno.removeSync(server.home, { recursive: true });
  }
});
