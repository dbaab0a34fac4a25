/**
 * [AG-1..4] Agent lifecycle on a real temp home: Capsule provisioning, the
 * admission fence, drain via the Run service's callback, upgrade generations,
 * delete with residual audit, the protected system Agent, the Agent cap, and
 * recovery of each half-done state written straight into the registry.
 */
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { createAgentDbPool } from "../../runtime/agents/db_pool.ts";
import { type AgentService, createAgentService } from "../../runtime/agents/service.ts";
import { NO_FAULTS } from "../../runtime/agents/test_fault.ts";
import { ensureHomeSkeleton, resolveHome } from "../../runtime/home.ts";
import { AGENT_AUDIT_ROWS_MAX, AGENTS_MAX, SYSTEM_AGENT_ID } from "../../runtime/limits.ts";
import type { Logger } from "../../runtime/log.ts";
import { listAudit } from "../../runtime/store/registry_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { ensureDefaultInstructionFile } from "../../runtime/workspace/instruction_file.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import { exists, withTempHome } from "../helpers/home.ts";

const quietLog: Logger = {
  info() {},
  warn() {},
  error() {},
  flush() {},
  close() {},
};

interface Env {
  root: string;
  registry: DatabaseSync;
  agents: AgentService;
  reopen(): AgentService;
}

function withAgents(fn: (env: Env) => Promise<void> | void, drainTimeoutMs = 2000) {
  return withTempHome(async (dir) => {
    const home = resolveHome(dir);
    ensureHomeSkeleton(home);
    const registry = openDatabase({
      root: home.root,
      relative: "data/agent-registry.sqlite",
      migrations: REGISTRY_MIGRATIONS,
    });
    const pools: ReturnType<typeof createAgentDbPool>[] = [];
    const make = () => {
      const pool = createAgentDbPool(home.root);
      pools.push(pool);
      const svc = createAgentService({
        registryDb: registry,
        pool,
        capsule: { root: home.root, ensureInstructionFile: ensureDefaultInstructionFile },
        log: quietLog,
        faults: NO_FAULTS,
        drainTimeoutMs,
      });
      svc.recover();
      return svc;
    };
    try {
      await fn({ root: home.root, registry, agents: make(), reopen: make });
    } finally {
      for (const p of pools) p.closeAll();
      registry.close();
    }
  });
}

Deno.test("the system Agent exists after recovery and refuses rename, upgrade and delete", () =>
  withAgents(async ({ agents }) => {
    const sys = agents.get(SYSTEM_AGENT_ID);
    assertEquals([sys.state, sys.is_system, sys.generation], ["active", true, 1]);
    assertThrows(() => agents.rename(SYSTEM_AGENT_ID, "x"), expectCode("agent_protected"));
    await assertRejects(() => agents.upgrade(SYSTEM_AGENT_ID), expectCode("agent_protected"));
    await assertRejects(() => agents.delete(SYSTEM_AGENT_ID), expectCode("agent_protected"));
  }));

Deno.test("create provisions the Capsule: workspace, instruction file, state.sqlite, runtime dir, manifest", () =>
  withAgents(({ root, agents }) => {
    const a = agents.create("Alpha");
    assertEquals([a.state, a.generation, a.name], ["active", 1, "Alpha"]);
    for (
      const rel of [
        `data/agents/${a.id}/workspace/agent-builder.md`,
        `data/agents/${a.id}/state.sqlite`,
        `data/agents/${a.id}/manifest.json`,
        `.runtime/agents/${a.id}`,
      ]
    ) assert(exists(`${root}/${rel}`), rel);
    assertEquals(Deno.statSync(`${root}/data/agents/${a.id}`).mode! & 0o777, 0o700);
  }));

Deno.test("startup never overwrites an edited instruction file, and re-adds a missing one", () =>
  withAgents(({ root, agents, reopen }) => {
    const a = agents.create("Alpha");
    const file = `${root}/data/agents/${a.id}/workspace/agent-builder.md`;
    Deno.writeTextFileSync(file, "operator text\n");
    reopen();
    assertEquals(Deno.readTextFileSync(file), "operator text\n");
    Deno.removeSync(file);
    reopen();
    assert(exists(file));
  }));

Deno.test("rename changes the name only: no new generation", () =>
  withAgents(({ agents }) => {
    const a = agents.create("Alpha");
    const r = agents.rename(a.id, "Beta");
    assertEquals([r.name, r.generation, r.state], ["Beta", 1, "active"]);
  }));

Deno.test("upgrade fences admission, cancels through the Run service, drains, then promotes", () =>
  withAgents(async ({ agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    assertEquals(adm.generation, 1);
    const calls: string[] = [];
    agents.attachRunControl({
      cancelAgentWork(id, reason) {
        calls.push(`${reason}:${id}`);
        // While fenced: no new admission, and the old generation is no longer current.
        assertThrows(() => agents.admit(a.id), expectCode("agent_busy"));
        assertEquals(agents.get(a.id).state, "upgrading");
        assertEquals(agents.isCurrentGeneration(a.id, 1), false);
        setTimeout(() => adm.release(), 20);
        return Promise.resolve();
      },
    });
    const up = await agents.upgrade(a.id);
    assertEquals(calls, [`upgrade:${a.id}`]);
    assertEquals([up.state, up.generation], ["active", 2]);
    assertEquals(agents.activeAdmissions(a.id), 0);
    assertEquals(agents.admit(a.id).generation, 2);
  }));

Deno.test("an upgrade whose Runs do not drain in time lifts the fence at the old generation", () =>
  withAgents(async ({ agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    await assertRejects(() => agents.upgrade(a.id), expectCode("agent_busy"));
    const after = agents.get(a.id);
    assertEquals([after.state, after.generation], ["active", 1]);
    adm.release();
    adm.release(); // idempotent
    assertEquals(agents.activeAdmissions(a.id), 0);
  }, 50));

Deno.test("delete fences, cancels, removes data and runtime dirs and records a clean residual audit", () =>
  withAgents(async ({ root, registry, agents }) => {
    const a = agents.create("Alpha");
    assert(agents.pool.isOpen(a.id));
    const reasons: string[] = [];
    agents.attachRunControl({
      cancelAgentWork(_id, reason) {
        reasons.push(reason);
        return Promise.resolve();
      },
    });
    await agents.delete(a.id);
    assertEquals(reasons, ["delete"]);
    assert(!agents.pool.isOpen(a.id));
    assert(!exists(`${root}/data/agents/${a.id}`));
    assert(!exists(`${root}/.runtime/agents/${a.id}`));
    assertThrows(() => agents.get(a.id), expectCode("agent_not_found"));
    const audit = listAudit(registry, a.id, 10).map((r) => [r.event, r.residue]);
    assertEquals(audit.at(-1), ["deleted", 0]);
    assertEquals(audit.map((e) => e[0]), ["created", "delete_fenced", "deleted"]);
  }));

Deno.test("lifecycle operations on a fenced Agent are refused as busy", () =>
  withAgents(async ({ registry, agents }) => {
    const a = agents.create("Alpha");
    registry.prepare("UPDATE agents SET state = 'upgrading', pending_generation = 2 WHERE id = ?")
      .run(a.id);
    assertThrows(() => agents.admit(a.id), expectCode("agent_busy"));
    await assertRejects(() => agents.delete(a.id), expectCode("agent_busy"));
    registry.prepare("UPDATE agents SET state = 'deleting', pending_generation = NULL WHERE id = ?")
      .run(a.id);
    assertThrows(() => agents.admit(a.id), expectCode("agent_busy"));
    await assertRejects(() => agents.upgrade(a.id), expectCode("agent_busy"));
    assertThrows(() => agents.rename(a.id, "Beta"), expectCode("agent_busy"));
  }));

Deno.test("the Agent cap counts every Agent including the system Agent", () =>
  withAgents(({ agents }) => {
    for (let i = 1; i < AGENTS_MAX; i++) agents.create(`a${i}`);
    assertThrows(() => agents.create("one too many"), expectCode("agent_limit"));
    assertEquals(agents.list().length, AGENTS_MAX);
  }));

Deno.test("recovery converges provisioning, upgrading and deleting rows left by a crash", () =>
  withAgents(({ root, registry, agents, reopen }) => {
    const p = agents.create("prov");
    const u = agents.create("upg");
    const d = agents.create("del");
    agents.pool.closeAll();
    // Simulate crashes between steps: the registry says half-done; the disk is partial.
    registry.prepare("UPDATE agents SET state = 'provisioning' WHERE id = ?").run(p.id);
    Deno.removeSync(`${root}/data/agents/${p.id}/workspace`, { recursive: true });
    registry.prepare("UPDATE agents SET state = 'upgrading', pending_generation = 2 WHERE id = ?")
      .run(u.id);
    registry.prepare("UPDATE agents SET state = 'deleting' WHERE id = ?").run(d.id);
    Deno.removeSync(`${root}/data/agents/${d.id}`, { recursive: true });
    const again = reopen();
    assertEquals([again.get(p.id).state, again.get(p.id).generation], ["active", 1]);
    assert(exists(`${root}/data/agents/${p.id}/workspace/agent-builder.md`));
    assertEquals([again.get(u.id).state, again.get(u.id).generation], ["active", 2]);
    assertThrows(() => again.get(d.id), expectCode("agent_not_found"));
    assert(!exists(`${root}/.runtime/agents/${d.id}`));
  }));

Deno.test("a Capsule directory without a registry row is reported, never deleted", () =>
  withAgents(({ root, registry, reopen }) => {
    const stray = crypto.randomUUID();
    Deno.mkdirSync(`${root}/data/agents/${stray}`, { mode: 0o700 });
    reopen();
    assert(exists(`${root}/data/agents/${stray}`));
    assertEquals(listAudit(registry, stray, 5).map((r) => r.event).includes("orphan_found"), true);
  }));

Deno.test("a delete whose Runs do not drain stays fenced, and a retry after release completes it", () =>
  withAgents(async ({ root, agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    await assertRejects(() => agents.delete(a.id), expectCode("agent_busy"));
    assertEquals(agents.get(a.id).state, "deleting");
    assertThrows(() => agents.admit(a.id), expectCode("agent_busy"));
    assert(exists(`${root}/data/agents/${a.id}`), "nothing removed while a Run is admitted");
    adm.release();
    await agents.delete(a.id);
    assertThrows(() => agents.get(a.id), expectCode("agent_not_found"));
  }, 50));

Deno.test("delete never follows a symlink planted inside the workspace", () =>
  withAgents(async ({ root, agents }) => {
    const a = agents.create("Alpha");
    const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
    try {
      Deno.writeTextFileSync(`${outside}/precious.txt`, "keep");
      Deno.symlinkSync(outside, `${root}/data/agents/${a.id}/workspace/escape`);
      Deno.symlinkSync(`${outside}/precious.txt`, `${root}/.runtime/agents/${a.id}/file-link`);
      await agents.delete(a.id);
      assertEquals(Deno.readTextFileSync(`${outside}/precious.txt`), "keep");
      assert(!exists(`${root}/data/agents/${a.id}`));
    } finally {
      Deno.removeSync(outside, { recursive: true });
    }
  }));

Deno.test("a Capsule directory replaced by a symlink refuses the delete and keeps the target", () =>
  withAgents(async ({ root, agents }) => {
    const a = agents.create("Alpha");
    const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
    try {
      Deno.writeTextFileSync(`${outside}/precious.txt`, "keep");
      agents.pool.close(a.id);
      Deno.removeSync(`${root}/.runtime/agents/${a.id}`, { recursive: true });
      Deno.symlinkSync(outside, `${root}/.runtime/agents/${a.id}`);
      await assertRejects(() => agents.delete(a.id), expectCode("unsafe_path"));
      assertEquals(Deno.readTextFileSync(`${outside}/precious.txt`), "keep");
      assertEquals(agents.get(a.id).state, "deleting");
    } finally {
      Deno.removeSync(outside, { recursive: true });
    }
  }));

Deno.test("two deletes racing on one draining Agent: one removes it, the other finds it gone", () =>
  withAgents(async ({ registry, agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    const first = agents.delete(a.id);
    const second = agents.delete(a.id); // a double click: resumes the fenced delete
    adm.release();
    const [r1, r2] = await Promise.allSettled([first, second]);
    assertEquals(r1.status, "fulfilled");
    assert(r2.status === "rejected");
    expectCode("agent_not_found")(r2.reason);
    const events = listAudit(registry, a.id, 10).map((r) => r.event);
    assertEquals(events, ["created", "delete_fenced", "deleted"], "no residue is recorded");
  }));

Deno.test("a Run that ignores cancellation cannot hold an upgrade or delete past the drain timeout", () =>
  withAgents(async ({ agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    // The Run service's cancel never completes (a stuck Run): only the drain bound ends the wait.
    agents.attachRunControl({ cancelAgentWork: () => new Promise<void>(() => {}) });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const hung = new Promise<"hung">((r) => timer = setTimeout(() => r("hung"), 5000));
    try {
      const outcome = (op: Promise<unknown>) =>
        Promise.race([op.then(() => "done", (e: unknown) => e), hung]);
      const up = await outcome(agents.upgrade(a.id));
      expectCode("agent_busy")(up);
      assertEquals([agents.get(a.id).state, agents.get(a.id).generation], ["active", 1]);
      const del = await outcome(agents.delete(a.id));
      expectCode("agent_busy")(del);
      assertEquals(agents.get(a.id).state, "deleting");
    } finally {
      clearTimeout(timer);
      adm.release();
    }
  }, 50));

Deno.test("an upgrade whose staging failed stays fenced and a retry completes it", () =>
  withAgents(async ({ root, agents }) => {
    const a = agents.create("Alpha");
    const runtime = `${root}/.runtime/agents/${a.id}`;
    const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
    try {
      // A tampered runtime dir makes staging refuse; the fence stays up (no Run admitted).
      Deno.removeSync(runtime, { recursive: true });
      Deno.symlinkSync(outside, runtime);
      await assertRejects(() => agents.upgrade(a.id), expectCode("unsafe_path"));
      assertEquals([agents.get(a.id).state, agents.get(a.id).generation], ["upgrading", 1]);
      assertThrows(() => agents.admit(a.id), expectCode("agent_busy"));
      // Once the cause is gone, retrying the upgrade resumes it instead of refusing as busy.
      Deno.removeSync(runtime);
      const up = await agents.upgrade(a.id);
      assertEquals([up.state, up.generation], ["active", 2]);
      assert(exists(runtime));
    } finally {
      Deno.removeSync(outside, { recursive: true });
    }
  }));

Deno.test("while an upgrade drains, a second upgrade or a delete is refused as busy", () =>
  withAgents(async ({ agents }) => {
    const a = agents.create("Alpha");
    const adm = agents.admit(a.id);
    const first = agents.upgrade(a.id);
    await assertRejects(() => agents.upgrade(a.id), expectCode("agent_busy"));
    await assertRejects(() => agents.delete(a.id), expectCode("agent_busy"));
    adm.release();
    assertEquals((await first).generation, 2);
  }));

Deno.test("the lifecycle audit keeps at most AGENT_AUDIT_ROWS_MAX rows: an orphan seen on every start cannot grow it", () =>
  withAgents(({ root, registry, reopen }) => {
    const stray = crypto.randomUUID();
    Deno.mkdirSync(`${root}/data/agents/${stray}`, { mode: 0o700 });
    // A long history already at the bound (filled in one statement).
    registry.exec(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${AGENT_AUDIT_ROWS_MAX})
       INSERT INTO agent_audit (agent_id, event, at) SELECT '${stray}', 'orphan_found', i FROM n`,
    );
    for (let i = 0; i < 3; i++) reopen();
    const count = () =>
      (registry.prepare("SELECT count(*) AS n FROM agent_audit").get() as { n: number }).n;
    assertEquals(count(), AGENT_AUDIT_ROWS_MAX);
    const newest = registry.prepare("SELECT at FROM agent_audit ORDER BY id DESC LIMIT 1")
      .get() as {
        at: number;
      };
    assert(newest.at > AGENT_AUDIT_ROWS_MAX, "the oldest rows are the ones trimmed");
  }));

Deno.test("a registry that says the system Agent is being deleted never purges it on start", () =>
  withAgents(({ root, registry, agents, reopen }) => {
    const file = `${root}/data/agents/${SYSTEM_AGENT_ID}/workspace/agent-builder.md`;
    Deno.writeTextFileSync(file, "operator text\n");
    agents.pool.closeAll();
    // Only a hand-edited (or restored, crafted) registry can hold this row: nothing fences it.
    registry.prepare("UPDATE agents SET state = 'deleting' WHERE id = ?").run(SYSTEM_AGENT_ID);
    const again = reopen();
    const sys = again.get(SYSTEM_AGENT_ID);
    assertEquals([sys.state, sys.is_system], ["active", true]);
    assertEquals(Deno.readTextFileSync(file), "operator text\n", "its Capsule is kept");
  }));

Deno.test("an Agent whose create failed while provisioning can be deleted without a restart", () =>
  withAgents(async ({ root, registry, agents }) => {
    const failing = createAgentService({
      registryDb: registry,
      pool: agents.pool,
      capsule: {
        root,
        ensureInstructionFile: () => {
          throw new Deno.errors.PermissionDenied("disk refused");
        },
      },
      log: quietLog,
      faults: NO_FAULTS,
    });
    assertThrows(() => failing.create("Broken"), (e) => {
      assert(e instanceof Deno.errors.PermissionDenied, String(e));
    });
    const broken = agents.list().find((a) => a.name === "Broken")!;
    assertEquals(broken.state, "provisioning");
    assertThrows(() => agents.admit(broken.id), expectCode("agent_busy"));
    await agents.delete(broken.id);
    assertThrows(() => agents.get(broken.id), expectCode("agent_not_found"));
    assert(!exists(`${root}/data/agents/${broken.id}`));
    assert(!exists(`${root}/.runtime/agents/${broken.id}`));
  }));
