import { DatabaseSync } from "node:sqlite";
import { openDatabase, transaction } from "../../runtime/store/sqlite.ts";
import { applyMigrations, schemaVersion } from "../../runtime/store/migrate.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { STATE_DB_JOURNAL_SIZE_LIMIT, STATE_DB_MAX_BYTES } from "../../runtime/limits.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { expectCode } from "../helpers/errors.ts";
import { withTempHome } from "../helpers/home.ts";

const REL = "data/agent-registry.sqlite";

Deno.test("openDatabase creates a private WAL database with the fixed pragmas", () =>
  withTempHome((home) => {
    const db = openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS });
    try {
      const get = (p: string) => Object.values(db.prepare(`PRAGMA ${p}`).get()!)[0];
      assertEquals(get("journal_mode"), "wal");
      assertEquals(get("synchronous"), 1); // NORMAL
      assertEquals(get("foreign_keys"), 1);
      assertEquals(get("journal_size_limit"), STATE_DB_JOURNAL_SIZE_LIMIT);
      const pageSize = get("page_size") as number;
      assertEquals(get("max_page_count"), Math.floor(STATE_DB_MAX_BYTES / pageSize));
      assertEquals(schemaVersion(db), REGISTRY_MIGRATIONS.length);
      db.exec(
        "INSERT INTO agents (id, name, state, generation, is_system, created_at, updated_at) VALUES ('00000000-0000-4000-8000-000000000001','x','active',1,1,0,0)",
      );
      for (const suffix of ["", "-wal", "-shm"]) {
        const st = Deno.lstatSync(`${home}/${REL}${suffix}`);
        assert(st.isFile);
        assertEquals(st.mode! & 0o777, 0o600, `mode of ${suffix || "db"}`);
      }
      assertEquals(Deno.statSync(`${home}/data`).mode! & 0o777, 0o700);
    } finally {
      db.close();
    }
  }));

Deno.test("migrations are applied once and re-opening is idempotent", () =>
  withTempHome((home) => {
    const rel = "data/agents/x/state.sqlite";
    openDatabase({ root: home, relative: rel, migrations: AGENT_MIGRATIONS }).close();
    const db = openDatabase({ root: home, relative: rel, migrations: AGENT_MIGRATIONS });
    try {
      assertEquals(applyMigrations(db, AGENT_MIGRATIONS), 0);
      assertEquals(schemaVersion(db), AGENT_MIGRATIONS.length);
      const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type='table' ORDER BY name")
        .all().map((r) => r.name);
      assert(tables.includes("conversations") && tables.includes("turns"));
    } finally {
      db.close();
    }
  }));

Deno.test("a failing migration rolls back entirely and records no version", () => {
  const db = new DatabaseSync(":memory:");
  const bad = [{ version: 1, sql: "CREATE TABLE a(x); CREATE TABLE a(y);" }];
  assertThrows(() => applyMigrations(db, bad));
  assertEquals(schemaVersion(db), 0);
  assertEquals(db.prepare("SELECT count(*) n FROM sqlite_schema").get()!.n, 0);
  db.close();
});

Deno.test("a database newer than the binary is refused", () =>
  withTempHome((home) => {
    openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }).close();
    const raw = new DatabaseSync(`${home}/${REL}`);
    raw.exec(`PRAGMA user_version = ${REGISTRY_MIGRATIONS.length + 1}`);
    raw.close();
    assertThrows(
      () => openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }),
      expectCode("database_too_new"),
    );
  }));

Deno.test("a database file replaced by a symlink is refused", () =>
  withTempHome((home) => {
    openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }).close();
    Deno.renameSync(`${home}/${REL}`, `${home}/elsewhere.sqlite`);
    // A clean close checkpoints and removes the WAL companions, so only the main file moves.
    Deno.symlinkSync(`${home}/elsewhere.sqlite`, `${home}/${REL}`);
    assertThrows(
      () => openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }),
      expectCode("database_unsafe"),
    );
  }));

Deno.test("a shared-mode or hard-linked database file is refused", () =>
  withTempHome((home) => {
    openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }).close();
    Deno.chmodSync(`${home}/${REL}`, 0o644);
    assertThrows(
      () => openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }),
      expectCode("database_unsafe"),
    );
    Deno.chmodSync(`${home}/${REL}`, 0o600);
    Deno.linkSync(`${home}/${REL}`, `${home}/data/alias`);
    assertThrows(
      () => openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }),
      expectCode("database_unsafe"),
    );
  }));

Deno.test("a database under a symlinked directory is refused", () =>
  withTempHome((home) => {
    Deno.mkdirSync(`${home}/real`, { mode: 0o700 });
    Deno.symlinkSync(`${home}/real`, `${home}/data`);
    assertThrows(
      () => openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS }),
      expectCode("unsafe_path"),
    );
  }));

Deno.test("transaction commits on success and rolls back on throw", () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t(x)");
  transaction(db, () => db.exec("INSERT INTO t VALUES (1)"));
  assertThrows(() =>
    transaction(db, () => {
      db.exec("INSERT INTO t VALUES (2)");
      throw new Error("boom");
    })
  );
  assertEquals(db.prepare("SELECT count(*) n FROM t").get()!.n, 1);
  db.close();
});
