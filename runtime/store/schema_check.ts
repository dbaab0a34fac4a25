/**
 * Schema verification [AG-5, OP-4]: a product database must carry exactly the
 * schema its migrations produce at its recorded version — every table,
 * index and CHECK constraint as written — before this binary trusts it. A
 * database whose tables were re-created without their constraints (a
 * hand-edited or hostile registry, say) fails here, so the invariants the
 * stores rely on (one system Agent, the state enum, id lengths …) are never
 * assumed of a file that does not enforce them.
 *
 * The expected schema is computed by applying the same embedded migrations to
 * an in-memory database, so a new migration needs no change here. `serve`
 * (openDatabase) and `restore` call the same function.
 */
import { DatabaseSync } from "node:sqlite";
import { applyMigrations, type Migration, schemaVersion } from "./migrate.ts";

export type SchemaVerdict = "ok" | "too_new" | "mismatch";

const expectedCache = new WeakMap<readonly Migration[], Map<number, string>>();

/** The sqlite_schema rows that define a schema, in a canonical order, as one string. */
function schemaText(db: DatabaseSync): string {
  const rows = db.prepare(
    `SELECT type, name, tbl_name, sql FROM sqlite_schema
     WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name`,
  ).all();
  return JSON.stringify(rows.map((r) => [r.type, r.name, r.tbl_name, r.sql]));
}

/** What migrations 1..version produce (memoised per migration list and version). */
function expectedSchema(migrations: readonly Migration[], version: number): string {
  let byVersion = expectedCache.get(migrations);
  if (!byVersion) expectedCache.set(migrations, byVersion = new Map());
  const cached = byVersion.get(version);
  if (cached !== undefined) return cached;
  const mem = new DatabaseSync(":memory:");
  try {
    applyMigrations(mem, migrations.slice(0, version));
    const text = schemaText(mem);
    byVersion.set(version, text);
    return text;
  } finally {
    mem.close();
  }
}

/**
 * Compares `db`'s schema with what its recorded version's migrations produce.
 * Throws the SQLite error when the file cannot be read (not a database, corrupt).
 */
export function verifySchema(db: DatabaseSync, migrations: readonly Migration[]): SchemaVerdict {
  const version = schemaVersion(db);
  if (version > migrations.length) return "too_new";
  return schemaText(db) === expectedSchema(migrations, version) ? "ok" : "mismatch";
}
