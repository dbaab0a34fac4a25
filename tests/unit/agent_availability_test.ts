/**
 * [AG-5] The pure parts of Agent availability — registry-row validation, the
 * surrogate id of a malformed row, the error → reason table — and, on a real
 * temp home through the Agent service, the cases the server test does not
 * stage: a broken system Agent (unavailable, never deletable), a half-done
 * upgrade or delete whose files are broken (unavailable instead of a crash),
 * and a migration that throws (its fixed code).
 */
import { DatabaseSync } from "node:sqlite";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import {
  isRemovableRawId,
  reasonOf,
  surrogateId,
  validateRegistryRow,
  viewIdOf,
} from "../../runtime/agents/availability.ts";
import { createAgentDbPool } from "../../runtime/agents/db_pool.ts";
import { createAgentService } from "../../runtime/agents/service.ts";
import { NO_FAULTS } from "../../runtime/agents/test_fault.ts";
import { AppError } from "../../runtime/errors.ts";
import { ensureHomeSkeleton, resolveHome } from "../../runtime/home.ts";
import { SYSTEM_AGENT_ID } from "../../runtime/limits.ts";
import { silentLogger } from "../../runtime/log.ts";
import { isValidId } from "../../runtime/path_safety.ts";
import { openDatabase } from "../../runtime/store/sqlite.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import { withTempHome } from "../helpers/home.ts";

const ID = "5b8d034d-e9eb-4dd7-aeee-da5664d1566b";
const GOOD = {
  id: ID,
  name: "Alpha",
  state: "active",
  generation: 3,
  pending_generation: null,
  is_system: 0,
  created_at: 1,
  updated_at: 2,
};

Deno.test("validateRegistryRow accepts exactly the rows this binary relies on", () => {
  const cases: [string, Record<string, unknown>, boolean][] = [
    ["a valid active row", {}, true],
    ["an upgrading row with the next generation pending", {
      state: "upgrading",
      pending_generation: 4,
    }, true],
    ["the system Agent", { id: SYSTEM_AGENT_ID, is_system: 1 }, true],
    ["a traversal id", { id: "../../" + "x".repeat(30) }, false],
    ["an upper-case UUID", { id: ID.toUpperCase() }, false],
    ["a UUID that is not v4", { id: "5b8d034d-e9eb-1dd7-aeee-da5664d1566b" }, false],
    ["a numeric id", { id: 7 }, false],
    ["an unknown state", { state: "exploded" }, false],
    ["generation 0", { generation: 0 }, false],
    ["a fractional generation", { generation: 1.5 }, false],
    ["a pending generation outside an upgrade", { pending_generation: 4 }, false],
    ["a pending generation that skips one", { state: "upgrading", pending_generation: 9 }, false],
    ["the system flag on another id", { is_system: 1 }, false],
    ["the system id without the flag", { id: SYSTEM_AGENT_ID }, false],
    ["an empty name", { name: "" }, false],
    ["a timestamp past the Date range", { created_at: 8.64e15 + 1 }, false],
    ["a negative timestamp", { updated_at: -1 }, false],
  ];
  for (const [name, edit, ok] of cases) {
    assertEquals(validateRegistryRow({ ...GOOD, ...edit }) !== null, ok, name);
  }
});

Deno.test("a malformed stored id gets a stable UUIDv4 surrogate; a valid one keeps its id", () => {
  const raw = "../../" + "x".repeat(30);
  assert(isValidId(surrogateId(raw)));
  assertEquals(surrogateId(raw), surrogateId(raw));
  assert(surrogateId(raw) !== surrogateId(raw + "y"));
  assertEquals(viewIdOf(ID), ID);
  assertEquals(viewIdOf(ID.toUpperCase()), surrogateId(ID.toUpperCase()));
  assertEquals(isRemovableRawId(ID.toUpperCase()), true);
  assertEquals(isRemovableRawId(raw), false);
  assertEquals(isRemovableRawId(`${ID.slice(0, 35)}/`), false);
});

Deno.test("every start-up failure maps to one fixed reason", () => {
  const sqlite = (errcode: number) =>
    Object.assign(new Error("x"), { code: "ERR_SQLITE_ERROR", errcode });
  const cases: [unknown, string][] = [
    [new AppError("database_unsafe"), "database_unsafe"],
    [new AppError("database_not_sqlite"), "database_not_sqlite"],
    [new AppError("database_corrupt"), "database_corrupt"],
    [new AppError("database_too_new"), "database_too_new"],
    [new AppError("database_schema_mismatch"), "database_schema_mismatch"],
    [new AppError("database_migration_failed"), "migration_failed"],
    [new AppError("unsafe_path"), "agent_dir_unsafe"],
    [new AppError("path_symlink"), "workspace_unsafe"],
    [new AppError("file_hardlinked"), "workspace_unsafe"],
    [new AppError("storage_full"), "open_failed"],
    [sqlite(26), "database_not_sqlite"],
    [sqlite(11), "database_corrupt"],
    [sqlite(11 | (1 << 8)), "database_corrupt"],
    [sqlite(5), "open_failed"],
    [new TypeError("bug"), "open_failed"],
  ];
  for (const [err, reason] of cases) assertEquals(reasonOf(err), reason, String(err));
});

Deno.test("a migration that throws is refused with database_migration_failed", () =>
  withTempHome((home) => {
    const migrations = [
      { version: 1, sql: "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (1);" },
      { version: 2, sql: "CREATE UNIQUE INDEX t_x ON t(x);" },
    ];
    openDatabase({ root: home, relative: "m.sqlite", migrations: migrations.slice(0, 1) })
      .close();
    assertThrows(
      () => openDatabase({ root: home, relative: "m.sqlite", migrations }),
      expectCode("database_migration_failed"),
    );
    assertEquals(reasonOf(new AppError("database_migration_failed")), "migration_failed");
  }));

function service(root: string, registry: DatabaseSync) {
  const pool = createAgentDbPool(root);
  const svc = createAgentService({
    registryDb: registry,
    pool,
    capsule: { root },
    log: silentLogger,
    faults: NO_FAULTS,
  });
  svc.recover();
  return { svc, pool };
}

Deno.test("a broken system Agent is unavailable, refuses work and cannot be deleted", () =>
  withTempHome(async (dir) => {
    const home = resolveHome(dir);
    ensureHomeSkeleton(home);
    const registry = openDatabase({
      root: home.root,
      relative: "data/agent-registry.sqlite",
      migrations: REGISTRY_MIGRATIONS,
    });
    try {
      const first = service(home.root, registry);
      const other = first.svc.create("Other").id;
      first.pool.closeAll();
      Deno.writeFileSync(
        `${home.root}/data/agents/${SYSTEM_AGENT_ID}/state.sqlite`,
        new Uint8Array(4096),
      );
      const { svc, pool } = service(home.root, registry);
      try {
        assertEquals(svc.get(SYSTEM_AGENT_ID).unavailable_reason, "database_not_sqlite");
        assertThrows(() => svc.requireUsable(SYSTEM_AGENT_ID), expectCode("agent_unavailable"));
        assertThrows(() => svc.admit(SYSTEM_AGENT_ID), expectCode("agent_unavailable"));
        // Nothing reaches its files by skipping the registry check: the pool refuses too.
        assertThrows(() => pool.get(SYSTEM_AGENT_ID), expectCode("agent_unavailable"));
        await assertRejects(() => svc.delete(SYSTEM_AGENT_ID), expectCode("agent_protected"));
        assertEquals(svc.get(other).state, "active");
        svc.admit(other).release();
      } finally {
        pool.closeAll();
      }
    } finally {
      registry.close();
    }
  }));

Deno.test("a half-done upgrade or delete whose files are broken is unavailable, then deletable", () =>
  withTempHome(async (dir) => {
    const home = resolveHome(dir);
    ensureHomeSkeleton(home);
    const registry = openDatabase({
      root: home.root,
      relative: "data/agent-registry.sqlite",
      migrations: REGISTRY_MIGRATIONS,
    });
    try {
      const first = service(home.root, registry);
      const upgrading = first.svc.create("Upgrading").id;
      const deleting = first.svc.create("Deleting").id;
      first.pool.closeAll();
      registry.prepare(
        "UPDATE agents SET state = 'upgrading', pending_generation = 2 WHERE id = ?",
      ).run(upgrading);
      registry.prepare("UPDATE agents SET state = 'deleting' WHERE id = ?").run(deleting);
      Deno.chmodSync(`${home.root}/.runtime/agents/${upgrading}`, 0o777);
      // The delete cannot finish: the folder it would remove is foreign-owned.
      Deno.chownSync(`${home.root}/data/agents/${deleting}`, 65534, 65534);
      const { svc, pool } = service(home.root, registry);
      try {
        assertEquals(svc.get(upgrading).unavailable_reason, "runtime_dir_unsafe");
        assertEquals(svc.get(deleting).unavailable_reason, "agent_dir_unsafe");
        await svc.delete(upgrading);
        await svc.delete(deleting);
        assertEquals(svc.list().map((a) => a.id), [SYSTEM_AGENT_ID]);
        for (const id of [upgrading, deleting]) {
          for (const rel of [`data/agents/${id}`, `.runtime/agents/${id}`]) {
            assertThrows(() => Deno.lstatSync(`${home.root}/${rel}`), (e) => {
              assert(e instanceof Deno.errors.NotFound, `${rel} still exists`);
            });
          }
        }
      } finally {
        pool.closeAll();
      }
    } finally {
      registry.close();
    }
  }));

Deno.test("a row that held the system flag under another id is deletable and the system Agent returns", () =>
  withTempHome(async (dir) => {
    const home = resolveHome(dir);
    ensureHomeSkeleton(home);
    const registry = openDatabase({
      root: home.root,
      relative: "data/agent-registry.sqlite",
      migrations: REGISTRY_MIGRATIONS,
    });
    try {
      service(home.root, registry).pool.closeAll();
      const impostor = crypto.randomUUID().toUpperCase();
      registry.prepare("DELETE FROM agents WHERE id = ?").run(SYSTEM_AGENT_ID);
      registry.prepare(
        `INSERT INTO agents (id, name, state, generation, is_system, created_at, updated_at)
         VALUES (?, 'impostor', 'active', 1, 1, 1, 1)`,
      ).run(impostor);
      const { svc, pool } = service(home.root, registry);
      try {
        // The unique system flag is taken: start-up cannot create the system Agent, and goes on.
        assertEquals(svc.list().map((a) => [a.id, a.unavailable_reason]), [
          [surrogateId(impostor), "registry_row_invalid"],
        ]);
        await svc.delete(surrogateId(impostor));
        assertEquals(svc.get(SYSTEM_AGENT_ID).state, "active");
        assertEquals(svc.list().map((a) => a.id), [SYSTEM_AGENT_ID]);
      } finally {
        pool.closeAll();
      }
    } finally {
      registry.close();
    }
  }));

Deno.test("the system Agent's id is never deleted, even when its row is invalid", () =>
  withTempHome(async (dir) => {
    const home = resolveHome(dir);
    ensureHomeSkeleton(home);
    const registry = openDatabase({
      root: home.root,
      relative: "data/agent-registry.sqlite",
      migrations: REGISTRY_MIGRATIONS,
    });
    try {
      service(home.root, registry).pool.closeAll();
      registry.prepare("UPDATE agents SET is_system = 0 WHERE id = ?").run(SYSTEM_AGENT_ID);
      const { svc, pool } = service(home.root, registry);
      try {
        assertEquals(svc.get(SYSTEM_AGENT_ID).unavailable_reason, "registry_row_invalid");
        await assertRejects(() => svc.delete(SYSTEM_AGENT_ID), expectCode("agent_protected"));
        assert(Deno.statSync(`${home.root}/data/agents/${SYSTEM_AGENT_ID}`).isDirectory);
      } finally {
        pool.closeAll();
      }
    } finally {
      registry.close();
    }
  }));
