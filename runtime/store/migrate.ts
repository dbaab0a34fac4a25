/**
 * Migration runner: applies numbered, embedded SQL migrations in one
 * transaction, records the version in `PRAGMA user_version`, and refuses a
 * database whose version is newer than this binary knows.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";

export interface Migration {
  /** 1, 2, 3 … without gaps. */
  version: number;
  sql: string;
}

/** Returns the number of migrations applied (0 when already current). */
export function applyMigrations(db: DatabaseSync, migrations: readonly Migration[]): number {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`migration ${m.version} out of sequence`);
  });
  const latest = migrations.length;
  db.exec("BEGIN IMMEDIATE");
  try {
    const { user_version: current } = db.prepare("PRAGMA user_version").get() as {
      user_version: number;
    };
    if (current > latest) {
      throw new AppError("database_too_new", `schema ${current} > ${latest}`);
    }
    for (const m of migrations.slice(current)) db.exec(m.sql);
    if (latest !== current) db.exec(`PRAGMA user_version = ${latest}`);
    db.exec("COMMIT");
    return latest - current;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/** The schema version recorded in a database. */
export function schemaVersion(db: DatabaseSync): number {
  return (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
}
