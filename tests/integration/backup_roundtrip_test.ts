/**
 * [OP-1] End to end with the real server and the real CLI: a backup taken
 * while the server serves (plain and gzip) restores into a fresh home and
 * over the original home, and the restored home serves exactly the same
 * Agents, Conversations and Turns over the HTTP API. The replaced data is
 * kept, complete, in .runtime/recovery/.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { type Api, apiClient } from "../helpers/agents_api.ts";
import { addTurn, openAgentState } from "../helpers/agent_state.ts";
import { makeTempHome } from "../helpers/home.ts";
import { login } from "../helpers/login.ts";
import { type ServerHandle, startTestServer } from "../helpers/server.ts";
import { runCli, seedHome, treeSnapshot } from "./backup_fixture.ts";

/** Everything the API shows about Agents, Conversations and Turns (cursors are per-server). */
async function apiView(api: Api): Promise<unknown> {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.entries(v).filter(([k]) => !k.includes("cursor")).map(([k, x]) => [k, strip(x)]),
      );
    }
    return v;
  };
  const agents = (await api("GET", "/api/agents")).body.agents as { id: string }[];
  const out: unknown[] = [];
  for (const a of agents) {
    const sessions = (await api("GET", `/api/agents/${a.id}/sessions`)).body.sessions as {
      id: string;
    }[];
    const details = [];
    for (const s of sessions) {
      details.push((await api("GET", `/api/agents/${a.id}/sessions/${s.id}`)).body);
    }
    out.push({ agent: a, sessions, details });
  }
  return strip(out);
}

async function viewOf(home: string): Promise<{ view: unknown; health: unknown }> {
  const server = await startTestServer({ home });
  try {
    const health = await (await fetch(`${server.url}/health`)).json();
    return { view: await apiView(apiClient(server, await login(server))), health };
  } finally {
    await server.stop();
  }
}

async function populate(server: ServerHandle): Promise<{ view: unknown; agents: string[] }> {
  const api = apiClient(server, await login(server));
  const agents: string[] = [];
  for (const name of ["Researcher", "Coder"]) {
    const agent = (await api("POST", "/api/agents", { name })).body.agent.id as string;
    agents.push(agent);
    for (const title of ["plan", "build"]) {
      const conv = (await api("POST", `/api/agents/${agent}/sessions`, { title })).body.session
        .id as string;
      const db = openAgentState(server.home, agent);
      try {
        for (let i = 0; i < 3; i++) addTurn(db, conv, "completed", `${name} ${title} ${i}`);
      } finally {
        db.close();
      }
    }
    Deno.writeTextFileSync(
      `${server.home}/data/agents/${agent}/workspace/notes.md`,
      `notes of ${name}\n`,
      { mode: 0o600 },
    );
  }
  const view = await apiView(api) as { details: { turns: unknown[] }[] }[];
  // The view is real data, not error bodies: system Agent + 2, each new one 2 × 3 Turns.
  assertEquals(view.length, 3);
  assertEquals(view.slice(1).map((a) => a.details.map((d) => d.turns.length)), [[3, 3], [3, 3]]);
  return { view, agents };
}

Deno.test("a backup taken while serving restores to a home that serves the same Agents, Conversations and Turns", async (t) => {
  const server = await startTestServer();
  const home = server.home;
  const fresh = makeTempHome();
  const freshGz = makeTempHome();
  let stopped = false;
  try {
    const { view, agents } = await populate(server);

    await t.step("backup succeeds while the server runs, with private modes", async () => {
      const r = await runCli(["backup", "nightly", "--home", home]);
      assertEquals(r.code, 0, r.stderr);
      assertMatch(r.stdout, /^Backup written: backups\/nightly\.tar \(/);
      const gz = await runCli(["backup", "nightly-gz", "--gzip", "--home", home]);
      assertEquals(gz.code, 0, gz.stderr);
      assertEquals(Deno.statSync(`${home}/backups`).mode! & 0o777, 0o700);
      assertEquals(Deno.statSync(`${home}/backups/nightly.tar`).mode! & 0o777, 0o600);
      assertEquals(Deno.statSync(`${home}/backups/nightly-gz.tar.gz`).mode! & 0o777, 0o600);
      assertEquals([...Deno.readDirSync(`${home}/backups`)].length, 2, "no temp files left");
    });

    await t.step("an existing name is refused (exit 4) and the archive is untouched", async () => {
      const before = Deno.readFileSync(`${home}/backups/nightly.tar`);
      for (const args of [["nightly"], ["nightly", "--gzip"], ["nightly-gz"]]) {
        const r = await runCli(["backup", ...args, "--home", home]);
        assertEquals(r.code, 4);
        assertMatch(r.stderr, /already exists/);
      }
      assertEquals(Deno.readFileSync(`${home}/backups/nightly.tar`), before);
    });

    await t.step("invalid names are refused with exit 4", async () => {
      for (const name of [".hidden", "a/b", "x".repeat(65), "with space", "n.tar", ""]) {
        const r = await runCli(["backup", name, "--home", home]);
        assertEquals(r.code, 4, name);
      }
      assertEquals((await runCli(["backup", "x".repeat(64), "--home", home])).code, 0);
    });

    await server.stop();
    stopped = true;

    await t.step("a dry run validates, says what it would do, and changes nothing", async () => {
      const before = treeSnapshot(home);
      const r = await runCli(["restore", `${home}/backups/nightly.tar`, "--home", home]);
      assertEquals(r.code, 0, r.stderr);
      assertMatch(r.stdout, /The archive is valid: \d+ files, \d+ directories/);
      assertMatch(r.stdout, /Dry run: nothing was changed\. Re-run with --yes to restore\./);
      assertEquals(treeSnapshot(home), before);
    });

    await t.step("restore into a fresh home serves the same data", async () => {
      const r = await runCli(["restore", `${home}/backups/nightly.tar`, "--yes", "--home", fresh]);
      assertEquals(r.code, 0, r.stderr);
      const restored = treeSnapshot(`${fresh}/data`);
      assertEquals(Object.keys(restored).filter((p) => /-(wal|shm|journal)$/.test(p)), []);
      assert(Object.values(restored).every((v) => /^(dir 700|file 600 )/.test(v)), "private modes");
      const got = await viewOf(fresh);
      assertEquals((got.health as { status: string }).status, "ok");
      assertEquals(got.view, view);
      assertEquals(
        Deno.readTextFileSync(`${fresh}/data/agents/${agents[1]}/workspace/notes.md`),
        "notes of Coder\n",
      );
    });

    await t.step("the gzip backup restores to the same data", async () => {
      const file = `${home}/backups/nightly-gz.tar.gz`;
      assertEquals((await runCli(["restore", file, "--yes", "--home", freshGz])).code, 0);
      assertEquals((await viewOf(freshGz)).view, view);
    });

    await t.step(
      "restore over the original keeps the replaced data in .runtime/recovery",
      async () => {
        // Changes made after the backup: an extra workspace file and an extra Turn.
        const ws = `${home}/data/agents/${agents[0]}/workspace`;
        Deno.writeTextFileSync(`${ws}/after-backup.txt`, "later\n", { mode: 0o600 });
        const db = openAgentState(home, agents[0]);
        const conv =
          (db.prepare("SELECT id FROM conversations LIMIT 1").get() as { id: string }).id;
        addTurn(db, conv, "completed", "after the backup");
        db.close();
        const replaced = treeSnapshot(`${home}/data`);

        const r = await runCli(["restore", `${home}/backups/nightly.tar`, "--yes", "--home", home]);
        assertEquals(r.code, 0, r.stderr);
        const m = r.stdout.match(/kept in (\.runtime\/recovery\/\d{8}T\d{6}Z\/data);/);
        assert(m, r.stdout);
        const recovery = `${home}/${m[1]}`;
        assertEquals(treeSnapshot(recovery), replaced, "the previous data/ is kept byte for byte");
        const note = JSON.parse(Deno.readTextFileSync(`${recovery}/../restore.json`));
        assertEquals([note.archive, note.previous_data], ["nightly.tar", "data/"]);
        assertEquals(Deno.statSync(recovery).mode! & 0o777, 0o700);
        let gone = false;
        try {
          Deno.statSync(`${home}/data/agents/${agents[0]}/workspace/after-backup.txt`);
        } catch (err) {
          gone = err instanceof Deno.errors.NotFound;
        }
        assert(gone, "the restored data/ is the archive's, not a merge");
        assertEquals((await viewOf(home)).view, view);
        const leftovers = [...Deno.readDirSync(`${home}/.runtime`)].filter((e) =>
          e.name.startsWith("restore-")
        );
        assertEquals(leftovers, [], "no staging directory is left behind");
      },
    );
  } finally {
    if (!stopped) await server.stop();
    for (const h of [home, fresh, freshGz]) Deno.removeSync(h, { recursive: true });
  }
});

Deno.test("when the previous data cannot be moved to recovery, it is kept where it is and the error says so", async () => {
  const home = makeTempHome();
  const src = makeTempHome();
  try {
    seedHome(src);
    assertEquals((await runCli(["backup", "b", "--home", src])).code, 0);
    seedHome(home);
    const previous = treeSnapshot(`${home}/data`);
    // A regular file where the recovery directory belongs makes the final move fail.
    Deno.removeSync(`${home}/.runtime/recovery`);
    Deno.writeTextFileSync(`${home}/.runtime/recovery`, "not a directory", { mode: 0o600 });

    const r = await runCli(["restore", `${src}/backups/b.tar`, "--yes", "--home", home]);
    assertEquals(r.code, 1);
    const m = r.stderr.match(
      /kept, complete, in (\.runtime\/restore-[0-9TZ]+-[0-9a-f]{16}\/data)\.$/m,
    );
    assert(m, r.stderr);
    assertEquals(treeSnapshot(`${home}/${m[1]}`), previous, "nothing of the previous data is lost");
    assertEquals(
      Object.keys(treeSnapshot(`${home}/data`)).filter((k) => k.endsWith(".sqlite")).length,
      3,
      "data/ holds the restored tree",
    );
  } finally {
    Deno.removeSync(home, { recursive: true });
    Deno.removeSync(src, { recursive: true });
  }
});
