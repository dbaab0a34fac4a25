/**
 * [PF-5] An opened database reuses its prepared statements by SQL text and
 * keeps at most SQLITE_STATEMENTS_CACHED of them (least recently used out), so
 * a long-running server no longer mints ~40 native statements per Turn; reuse
 * never holds a read snapshot, and a lazy iteration can take a statement of its own.
 */
import { openDatabase, prepareUncached } from "../../runtime/store/sqlite.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { SQLITE_STATEMENTS_CACHED } from "../../runtime/limits.ts";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { withTempHome } from "../helpers/home.ts";

const REL = "data/agent-registry.sqlite";
const open = (home: string) =>
  openDatabase({ root: home, relative: REL, migrations: REGISTRY_MIGRATIONS });

Deno.test("the same SQL text gets the same prepared statement back", () =>
  withTempHome((home) => {
    const db = open(home);
    try {
      const a = db.prepare("SELECT 1 AS n");
      assert(db.prepare("SELECT 1 AS n") === a);
      assertEquals(a.get()!.n, 1);
      assertEquals(db.prepare("SELECT 1 AS n").get()!.n, 1);
      assert(db.prepare("SELECT 2 AS n") !== a);
    } finally {
      db.close();
    }
  }));

Deno.test("the statement cache keeps exactly SQLITE_STATEMENTS_CACHED statements, least recently used out", () =>
  withTempHome((home) => {
    const db = open(home);
    try {
      const first = db.prepare("SELECT 0 AS n");
      const kept = db.prepare("SELECT -1 AS n");
      // At the limit: `first`, `kept` and N − 2 others are all still cached.
      for (let i = 1; i <= SQLITE_STATEMENTS_CACHED - 2; i++) {
        db.prepare(`SELECT ${i} AS n`);
        if (i === 1) assert(db.prepare("SELECT -1 AS n") === kept); // used: now most recent
      }
      assert(db.prepare("SELECT 0 AS n") === first);
      // `first` is now the most recent; the least recently used is `SELECT 1`, then `kept`.
      db.prepare(`SELECT ${SQLITE_STATEMENTS_CACHED - 1} AS n`); // one past the limit: `SELECT 1` out
      const again = db.prepare("SELECT 1 AS n"); // prepared anew, which pushes `kept` out
      assert(db.prepare("SELECT 1 AS n") === again);
      assertEquals(again.get()!.n, 1);
      assert(db.prepare("SELECT 0 AS n") === first);
      assert(db.prepare("SELECT -1 AS n") !== kept);
      // Filling the cache with new texts evicts everything that is not used again.
      for (let i = 0; i < SQLITE_STATEMENTS_CACHED; i++) db.prepare(`SELECT ${1000 + i} AS n`);
      assert(db.prepare("SELECT 0 AS n") !== first);
    } finally {
      db.close();
    }
  }));

Deno.test("a cached statement holds no read snapshot: another connection's commit is seen at once", () =>
  withTempHome((home) => {
    const a = open(home);
    const b = open(home);
    try {
      a.exec("CREATE TABLE t(x)");
      a.exec("INSERT INTO t VALUES (1), (2)");
      const count = () => a.prepare("SELECT count(*) AS n FROM t").get()!.n;
      assertEquals(a.prepare("SELECT x FROM t ORDER BY x").get()!.x, 1); // one row of two read
      assertEquals(count(), 2);
      b.exec("INSERT INTO t VALUES (3)");
      assertEquals(count(), 3);
      assertEquals(a.isTransaction, false);
    } finally {
      a.close();
      b.close();
    }
  }));

Deno.test("prepareUncached gives a lazy iteration a statement that other uses of the SQL cannot reset", () =>
  withTempHome((home) => {
    const db = open(home);
    try {
      db.exec("CREATE TABLE t(x)");
      db.exec("INSERT INTO t VALUES (1), (2), (3)");
      const sql = "SELECT x FROM t ORDER BY x";
      const it = prepareUncached(db, sql).iterate();
      assertEquals((it.next().value as { x: number }).x, 1);
      assertEquals(db.prepare(sql).get()!.x, 1);
      assertEquals((it.next().value as { x: number }).x, 2);
      // The cached statement, by contrast, is shared: a second use resets a running iteration.
      const shared = db.prepare(sql).iterate();
      shared.next();
      db.prepare(sql).get();
      assertThrows(() => shared.next());
      assertEquals((it.next().value as { x: number }).x, 3);
    } finally {
      db.close();
    }
  }));
