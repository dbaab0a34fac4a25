/**
 * [AG-5] One broken Agent never stops the server. Each Agent of one home is
 * damaged a different way while the real server is stopped — its
 * state.sqlite zeroed, overwritten, truncated or with damaged pages; a wrong mode, a foreign
 * owner or a symlink on its folder, workspace, runtime folder or WAL file; a
 * schema too new or not the migrations'; registry rows with a traversal id,
 * an upper-case UUID or an impossible generation — and the server, started
 * again on that home, must serve the healthy Agent and the system Agent, list
 * every broken one `unavailable` with its fixed reason, refuse work on it with
 * agent_unavailable, let `doctor` list it, and delete it without following a
 * link. A registry that lost its CHECK constraints is refused at start-up
 * with a fixed code and no stack trace.
 */
import { DatabaseSync } from "node:sqlite";
import { surrogateId } from "../../runtime/agents/availability.ts";
import { SYSTEM_AGENT_ID } from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { type Api, apiClient, codeOf } from "../helpers/agents_api.ts";
import { exists, makeTempHome } from "../helpers/home.ts";
import { login } from "../helpers/login.ts";
import { DENO, REPO, RUN_FLAGS, type ServerHandle, startTestServer } from "../helpers/server.ts";

const NOBODY = 65534;

function removeCompanions(db: string): void {
  for (const s of ["-wal", "-shm"]) {
    try {
      Deno.removeSync(db + s);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
}

interface Paths {
  folder: string;
  workspace: string;
  runtime: string;
  db: string;
  wal: string;
}

function pathsOf(home: string, id: string): Paths {
  const folder = `${home}/data/agents/${id}`;
  return {
    folder,
    workspace: `${folder}/workspace`,
    runtime: `${home}/.runtime/agents/${id}`,
    db: `${folder}/state.sqlite`,
    wal: `${folder}/state.sqlite-wal`,
  };
}

/** Replaces the directory at `path` by a symlink to its moved original; returns the target. */
function symlinkDir(home: string, path: string, tag: string): string {
  const target = `${home}/moved-${tag}`;
  Deno.renameSync(path, target);
  Deno.symlinkSync(target, path);
  return target;
}

interface DamageCase {
  name: string;
  reason: string;
  /** Damages the stopped home; returns paths that must survive the delete (link targets). */
  damage(home: string, p: Paths): string[];
}

const CASES: DamageCase[] = [
  {
    name: "zeroed state.sqlite",
    reason: "database_not_sqlite",
    damage: (_h, p) => {
      removeCompanions(p.db);
      Deno.writeFileSync(p.db, new Uint8Array(Deno.statSync(p.db).size));
      return [];
    },
  },
  {
    name: "garbage state.sqlite",
    reason: "database_not_sqlite",
    damage: (_h, p) => {
      removeCompanions(p.db);
      Deno.writeFileSync(p.db, crypto.getRandomValues(new Uint8Array(8192)));
      return [];
    },
  },
  {
    name: "truncated state.sqlite",
    reason: "database_corrupt",
    damage: (_h, p) => {
      removeCompanions(p.db);
      Deno.truncateSync(p.db, Math.floor(Deno.statSync(p.db).size / 2));
      return [];
    },
  },
  {
    name: "state.sqlite with a schema newer than the binary",
    reason: "database_too_new",
    damage: (_h, p) => {
      const db = new DatabaseSync(p.db);
      db.exec("PRAGMA user_version = 999");
      db.close();
      return [];
    },
  },
  {
    name: "state.sqlite with a table its migrations did not make",
    reason: "database_schema_mismatch",
    damage: (_h, p) => {
      const db = new DatabaseSync(p.db);
      db.exec("CREATE TABLE intruder (x)");
      db.close();
      return [];
    },
  },
  {
    // Opens, passes the schema check and the Turn recovery; fails in Run recovery.
    name: "state.sqlite with damaged Run-table pages",
    reason: "database_corrupt",
    damage: (_h, p) => {
      const db = new DatabaseSync(p.db);
      const size = (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
      const pages = db.prepare(
        `SELECT rootpage FROM sqlite_schema
         WHERE rootpage > 1 AND tbl_name NOT IN ('turns', 'conversations')`,
      ).all().map((r) => Number(r.rootpage));
      db.close();
      removeCompanions(p.db);
      const f = Deno.openSync(p.db, { read: true, write: true });
      try {
        for (const page of pages) {
          f.seekSync((page - 1) * size, Deno.SeekMode.Start);
          f.writeSync(new Uint8Array(size).fill(0xee));
        }
      } finally {
        f.close();
      }
      return [];
    },
  },
  {
    name: "world-writable Agent folder",
    reason: "agent_dir_unsafe",
    damage: (_h, p) => (Deno.chmodSync(p.folder, 0o777), []),
  },
  {
    name: "foreign-owned Agent folder",
    reason: "agent_dir_unsafe",
    damage: (_h, p) => (Deno.chownSync(p.folder, NOBODY, NOBODY), []),
  },
  {
    name: "symlinked Agent folder",
    reason: "agent_dir_unsafe",
    damage: (h, p) => [symlinkDir(h, p.folder, "folder")],
  },
  {
    name: "world-writable workspace",
    reason: "workspace_unsafe",
    damage: (_h, p) => (Deno.chmodSync(p.workspace, 0o777), []),
  },
  {
    name: "foreign-owned workspace",
    reason: "workspace_unsafe",
    damage: (_h, p) => (Deno.chownSync(p.workspace, NOBODY, NOBODY), []),
  },
  {
    name: "symlinked workspace",
    reason: "workspace_unsafe",
    damage: (h, p) => [symlinkDir(h, p.workspace, "workspace")],
  },
  {
    name: "group-writable runtime folder",
    reason: "runtime_dir_unsafe",
    damage: (_h, p) => (Deno.chmodSync(p.runtime, 0o770), []),
  },
  {
    name: "foreign-owned runtime folder",
    reason: "runtime_dir_unsafe",
    damage: (_h, p) => (Deno.chownSync(p.runtime, NOBODY, NOBODY), []),
  },
  {
    name: "symlinked runtime folder",
    reason: "runtime_dir_unsafe",
    damage: (h, p) => [symlinkDir(h, p.runtime, "runtime")],
  },
  {
    name: "shared-mode WAL file",
    reason: "database_unsafe",
    damage: (_h, p) => {
      Deno.writeFileSync(p.wal, new Uint8Array(0));
      Deno.chmodSync(p.wal, 0o644);
      return [];
    },
  },
  {
    name: "foreign-owned WAL file",
    reason: "database_unsafe",
    damage: (_h, p) => {
      Deno.writeFileSync(p.wal, new Uint8Array(0), { mode: 0o600 });
      Deno.chownSync(p.wal, NOBODY, NOBODY);
      return [];
    },
  },
  {
    name: "symlinked WAL file",
    reason: "database_unsafe",
    damage: (h, p) => {
      const target = `${h}/wal-target`;
      Deno.writeFileSync(target, new TextEncoder().encode("keep me"), { mode: 0o600 });
      Deno.symlinkSync(target, p.wal);
      return [target];
    },
  },
];

const TRAVERSAL_ID = "../../" + "x".repeat(30);

/** Registry rows that fail validation although they pass the CHECK constraints. */
function insertBadRows(home: string): { upper: string; badGeneration: string } {
  const upper = crypto.randomUUID().toUpperCase();
  const badGeneration = crypto.randomUUID();
  const db = new DatabaseSync(`${home}/data/agent-registry.sqlite`);
  const now = Date.now();
  const insert = db.prepare(
    `INSERT INTO agents (id, name, state, generation, pending_generation, is_system, created_at,
       updated_at) VALUES (?, ?, 'active', 1, ?, 0, ?, ?)`,
  );
  insert.run(TRAVERSAL_ID, "traversal", null, now, now);
  insert.run(upper, "upper-case", null, now, now);
  insert.run(badGeneration, "pending outside an upgrade", 5, now, now);
  db.close();
  // The folder an upper-case id names is one plain component: delete may remove it.
  Deno.mkdirSync(`${home}/data/agents/${upper}/workspace`, { recursive: true, mode: 0o700 });
  Deno.writeFileSync(`${home}/data/agents/${upper}/workspace/note.txt`, new Uint8Array([1]));
  return { upper, badGeneration };
}

async function session(server: ServerHandle): Promise<Api> {
  return apiClient(server, await login(server));
}

async function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/main.ts`, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

function unusedPort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
}

Deno.test("a server whose Agents are each damaged differently starts, serves the healthy ones, marks the broken ones and deletes them", async () => {
  const home = makeTempHome();
  let server = await startTestServer({ home });
  try {
    let api = await session(server);
    const healthy = (await api("POST", "/api/agents", { name: "healthy" })).body.agent.id;
    const conv = await api("POST", `/api/agents/${healthy}/sessions`, { title: "kept" });
    assertEquals(conv.status, 201);
    const ids: string[] = [];
    for (const c of CASES) {
      const r = await api("POST", "/api/agents", { name: c.name.slice(0, 64) });
      assertEquals(r.status, 201, c.name);
      ids.push(r.body.agent.id);
    }
    assertEquals(await server.stop(), 0);

    const survivors: string[] = [];
    CASES.forEach((c, i) => survivors.push(...c.damage(home, pathsOf(home, ids[i]))));
    const bad = insertBadRows(home);
    const expected = new Map<string, string>();
    CASES.forEach((c, i) => expected.set(ids[i], c.reason));
    const traversalView = surrogateId(TRAVERSAL_ID);
    const upperView = surrogateId(bad.upper);
    for (const id of [traversalView, upperView, bad.badGeneration]) {
      expected.set(id, "registry_row_invalid");
    }

    server = await startTestServer({ home });
    api = await session(server);
    // The operator's terminal names each broken Agent with its reason at start-up.
    const said = server.output();
    assert(said.includes(`${expected.size} Agent(s) unavailable`), said);
    for (const [id, reason] of expected) assert(said.includes(`  ${id}: ${reason}\n`), id);
    const listed = (await api("GET", "/api/agents")).body.agents as {
      id: string;
      state: string;
      unavailable_reason: string | null;
    }[];
    const byId = new Map(listed.map((a) => [a.id, a]));
    for (const [id, reason] of expected) {
      const a = byId.get(id);
      assert(a, `listed: ${id} (${reason})`);
      assertEquals([a.state, a.unavailable_reason], ["unavailable", reason], id);
    }
    for (const id of [healthy, SYSTEM_AGENT_ID]) {
      assertEquals([byId.get(id)?.state, byId.get(id)?.unavailable_reason], ["active", null]);
    }
    assertEquals(listed.length, expected.size + 2);

    // The healthy Agent and the system Agent serve.
    const sessions = (await api("GET", `/api/agents/${healthy}/sessions`)).body.sessions;
    assertEquals(sessions.map((s: { title: string }) => s.title), ["kept"]);
    assertEquals((await api("POST", "/api/sessions", { title: "system" })).status, 201);

    // Work on a broken Agent is refused with the fixed code; its view answers.
    for (const [id, reason] of expected) {
      const one = await api("GET", `/api/agents/${id}`);
      assertEquals([one.status, one.body.agent.unavailable_reason], [200, reason]);
      const s = await api("GET", `/api/agents/${id}/sessions`);
      assertEquals([s.status, codeOf(s)], [409, "agent_unavailable"], id);
      const create = await api("POST", `/api/agents/${id}/sessions`, { title: "x" });
      assertEquals(codeOf(create), "agent_unavailable");
      assertEquals(
        codeOf(await api("PATCH", `/api/agents/${id}`, { name: "n" })),
        "agent_unavailable",
      );
      assertEquals(codeOf(await api("POST", `/api/agents/${id}/upgrade`)), "agent_unavailable");
    }

    // doctor, beside the running server, lists every broken Agent with its reason.
    const doctor = await runCli([
      "doctor",
      "--json",
      "--home",
      home,
      "--ollama",
      `http://127.0.0.1:${unusedPort()}`,
    ]);
    const report = JSON.parse(doctor.stdout).agents;
    assertEquals(report.registry, "ok");
    const reported = new Map<string, string>(
      report.unavailable.map((u: { id: string; reason: string }) => [u.id, u.reason]),
    );
    // Compared as sorted pairs: rows created in the same millisecond list in id order.
    const sorted = (m: Map<string, string>) => [...m].sort((a, b) => a[0] < b[0] ? -1 : 1);
    assertEquals(sorted(reported), sorted(expected));
    const text = await runCli([
      "doctor",
      "--home",
      home,
      "--ollama",
      `http://127.0.0.1:${unusedPort()}`,
    ]);
    assert(
      text.stdout.includes(`${expected.size} of ${expected.size + 2} Agents unavailable`),
      text.stdout,
    );
    assert(text.stdout.includes(`${ids[0]} "zeroed state.sqlite": database_not_sqlite`));

    // Delete removes each one: its folders (never a link's target) and its row.
    for (const id of expected.keys()) {
      const del = await api("DELETE", `/api/agents/${id}`);
      assertEquals([del.status, del.body], [200, { id, deleted: true }], id);
      assertEquals(codeOf(await api("GET", `/api/agents/${id}`)), "agent_not_found");
    }
    for (const id of ids) {
      const p = pathsOf(home, id);
      assertEquals([exists(p.folder), exists(p.runtime)], [false, false], id);
    }
    assertEquals(exists(`${home}/data/agents/${bad.upper}`), false);
    for (const kept of survivors) assert(exists(kept), `link target kept: ${kept}`);
    assertEquals(Deno.readTextFileSync(`${home}/wal-target`), "keep me");
    assertEquals(
      (await api("GET", "/api/agents")).body.agents.map((a: { id: string }) => a.id).sort(),
      [healthy, SYSTEM_AGENT_ID].sort(),
    );
    assertEquals(await server.stop(), 0);

    // A clean restart: nothing unavailable, the healthy Agent's data intact.
    server = await startTestServer({ home });
    api = await session(server);
    const after = (await api("GET", "/api/agents")).body.agents;
    assertEquals(after.map((a: { state: string }) => a.state), ["active", "active"]);
    const kept = (await api("GET", `/api/agents/${healthy}/sessions`)).body.sessions;
    assertEquals(kept.length, 1);
  } finally {
    await server.stop();
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("a registry that lost its CHECK constraints is refused at start-up with a fixed code", async () => {
  const home = makeTempHome();
  try {
    const server = await startTestServer({ home });
    assertEquals(await server.stop(), 0);
    const db = new DatabaseSync(`${home}/data/agent-registry.sqlite`);
    db.exec(`
      CREATE TABLE agents_loose (id TEXT PRIMARY KEY, name TEXT, state TEXT, generation INTEGER,
        is_system INTEGER, created_at INTEGER, updated_at INTEGER, pending_generation INTEGER);
      INSERT INTO agents_loose SELECT id, name, state, generation, is_system, created_at,
        updated_at, pending_generation FROM agents;
      DROP TABLE agents;
      ALTER TABLE agents_loose RENAME TO agents;`);
    db.close();
    const r = await runCli(["serve", "--home", home, "--host", "127.0.0.1", "--port", "0"]);
    assertEquals(r.code, 1);
    assert(r.stderr.includes("database_schema_mismatch"), r.stderr);
    assert(!/\bat \w+ \(/.test(r.stderr), "no stack trace");
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("a zeroed registry is refused at start-up with a fixed code, not a crash", async () => {
  const home = makeTempHome();
  try {
    const server = await startTestServer({ home });
    assertEquals(await server.stop(), 0);
    const reg = `${home}/data/agent-registry.sqlite`;
    Deno.writeFileSync(reg, new Uint8Array(Deno.statSync(reg).size));
    const r = await runCli(["serve", "--home", home, "--host", "127.0.0.1", "--port", "0"]);
    assertEquals(r.code, 1);
    assert(
      r.stderr.includes("database_not_sqlite — data/agent-registry.sqlite"),
      r.stderr,
    );
    assert(!/\bat \w+ \(/.test(r.stderr), "no stack trace");
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});
