/**
 * Opening SQLite databases (node:sqlite, compiled into the Deno runtime) with
 * the product's fixed settings [CV-1]: WAL, synchronous=NORMAL, foreign keys,
 * busy timeout, a 16 MiB journal size limit and a 512 MiB page-count cap.
 *
 * SECURITY: the database file and its -wal/-shm companions are verified as
 * private regular files owned by us, reached through safe directories, on
 * every open; a symlink or foreign/shared file refuses the open.
 */
import { backup, DatabaseSync, type StatementSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import {
  SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_PAGE_SIZE,
  SQLITE_STATEMENTS_CACHED,
  STATE_DB_JOURNAL_SIZE_LIMIT,
  STATE_DB_MAX_BYTES,
} from "../limits.ts";
import { checkManagedPath, currentUid, ensurePrivateDir } from "../path_safety.ts";
import { applyMigrations, type Migration, schemaVersion } from "./migrate.ts";
import { verifySchema } from "./schema_check.ts";

export type { DatabaseSync };

export interface OpenDatabaseOptions {
  /** Home root; `relative` is checked below it component by component. */
  root: string;
  /** Path of the database file below `root`, e.g. `data/agent-registry.sqlite`. */
  relative: string;
  /** Embedded migrations to apply (in order). */
  migrations: readonly Migration[];
  /** Create the file (and its private directories) when missing. @default true */
  create?: boolean;
  /** The file's size cap [CV-1]. @default STATE_DB_MAX_BYTES */
  maxBytes?: number;
}

function checkDbFile(path: string, uid: number): void {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  if (info.isSymlink || !info.isFile) throw new AppError("database_unsafe", `not regular: ${path}`);
  if (info.uid !== uid) throw new AppError("database_unsafe", `foreign owner: ${path}`);
  if (info.mode === null || (info.mode & 0o077) !== 0) {
    throw new AppError("database_unsafe", `not private: ${path}`);
  }
  if (info.nlink !== null && info.nlink !== 1) {
    throw new AppError("database_unsafe", `hard-linked: ${path}`);
  }
}

/**
 * Checks a database file and its -wal/-shm/-journal companions (those present)
 * below `root` without opening anything: regular, ours, private, one link.
 * Throws database_unsafe (the file) or unsafe_path (a directory on the way).
 */
export function checkDatabaseFiles(root: string, relative: string): void {
  const slash = relative.lastIndexOf("/");
  if (slash > 0) checkManagedPath(root, relative.slice(0, slash), "dir");
  const uid = currentUid();
  for (const suffix of ["", "-wal", "-shm", "-journal"]) {
    checkDbFile(`${root}/${relative}${suffix}`, uid);
  }
}

/** Opens (and migrates) a product database with the fixed settings. */
export function openDatabase(opts: OpenDatabaseOptions): DatabaseSync {
  const uid = currentUid();
  const slash = opts.relative.lastIndexOf("/");
  const dirRel = slash > 0 ? opts.relative.slice(0, slash) : "";
  if (opts.create ?? true) {
    if (dirRel) ensurePrivateDir(opts.root, dirRel);
  } else if (!checkManagedPath(opts.root, opts.relative, "file", true)) {
    throw new AppError("database_unsafe", `missing: ${opts.relative}`);
  }
  if (dirRel) checkManagedPath(opts.root, dirRel, "dir");
  const path = `${opts.root}/${opts.relative}`;
  for (const suffix of ["", "-wal", "-shm", "-journal"]) checkDbFile(path + suffix, uid);
  const exists = checkManagedPath(opts.root, opts.relative, "file", true);
  if (!exists) {
    // Create the file ourselves with mode 0600 so SQLite never creates it with the umask's mode.
    Deno.openSync(path, { write: true, createNew: true, mode: 0o600 }).close();
  }
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path);
  } catch (err) {
    throw asDatabaseError(err, opts.relative) ?? err;
  }
  cacheStatements(db);
  const maxPages = () => Math.floor((opts.maxBytes ?? STATE_DB_MAX_BYTES) / pageSizeOf(db));
  try {
    configure(db);
    db.exec(`PRAGMA max_page_count = ${maxPages()}`);
    // [AG-5, OP-4] The file must carry exactly the schema its version's migrations made.
    const verdict = verifySchema(db, opts.migrations);
    if (verdict === "too_new") throw new AppError("database_too_new", opts.relative);
    if (verdict === "mismatch") throw new AppError("database_schema_mismatch", opts.relative);
  } catch (err) {
    db.close();
    throw asDatabaseError(err, opts.relative) ?? err;
  }
  try {
    migrateWithHeadroom(db, opts.migrations, maxPages());
  } catch (err) {
    db.close();
    if (err instanceof AppError) throw err;
    throw new AppError("database_migration_failed", `${opts.relative}: ${errText(err)}`);
  }
  // WAL companions are created by SQLite with the db file's mode; re-verify them.
  for (const suffix of ["-wal", "-shm"]) checkDbFile(path + suffix, uid);
  return db;
}

type Prepare = (sql: string) => StatementSync;
const uncachedPrepare = new WeakMap<DatabaseSync, Prepare>();

/**
 * [PF-5] Every `db.prepare(sql)` of an opened database returns a statement
 * cached by its SQL text (least recently used first out, at most
 * SQLITE_STATEMENTS_CACHED per connection). node:sqlite finalizes a statement
 * only when its JS object is garbage-collected and V8 does not see the native
 * memory behind it, so the ~40 fresh statements of every Turn piled up in the
 * C heap between major collections and left it fragmented: the server's RSS
 * grew with every Turn. A cached statement is reset by each get/all/run, so
 * reuse is safe for those; a lazy `iterate()` that may interleave with another
 * use of the same SQL must take `prepareUncached` instead. Prepare options
 * bypass the cache.
 */
function cacheStatements(db: DatabaseSync): void {
  const prepare = db.prepare.bind(db) as (sql: string, options?: object) => StatementSync;
  uncachedPrepare.set(db, (sql) => prepare(sql));
  const cache = new Map<string, StatementSync>();
  db.prepare = (sql: string, options?: object): StatementSync => {
    if (options !== undefined) return prepare(sql, options);
    let stmt = cache.get(sql);
    if (stmt) {
      cache.delete(sql); // re-inserted below as the most recently used
    } else {
      stmt = prepare(sql);
      if (cache.size >= SQLITE_STATEMENTS_CACHED) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, stmt);
    return stmt;
  };
}

/** A statement of its own (never shared through the cache), for a lazy `iterate()`. */
export function prepareUncached(db: DatabaseSync, sql: string): StatementSync {
  return (uncachedPrepare.get(db) ?? ((s: string) => db.prepare(s)))(sql);
}

/** SQLite's primary result code of an error thrown by node:sqlite (null for other errors). */
export function sqliteErrcode(err: unknown): number | null {
  const e = err as { code?: unknown; errcode?: unknown } | null;
  if (!(err instanceof Error) || typeof e?.code !== "string") return null;
  if (!e.code.startsWith("ERR_SQLITE") || typeof e.errcode !== "number") return null;
  return e.errcode & 0xff;
}

const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_CORRUPT = 11;
const SQLITE_NOTADB = 26;

function errText(err: unknown): string {
  return err instanceof Error ? err.message.slice(0, 200) : "unknown";
}

/**
 * A damaged file as a fixed code: "file is not a database" (zeroed, garbage, a
 * truncated header) is database_not_sqlite; "malformed" (a truncated or
 * scrambled body) is database_corrupt. Null for anything else.
 */
function asDatabaseError(err: unknown, relative: string): AppError | null {
  switch (sqliteErrcode(err)) {
    case SQLITE_NOTADB:
      return new AppError("database_not_sqlite", relative);
    case SQLITE_CORRUPT:
      return new AppError("database_corrupt", `${relative}: ${errText(err)}`);
    default:
      return null;
  }
}

function configure(db: DatabaseSync): void {
  db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // Takes effect only while the file is still empty (a new database) [PF-4].
  db.exec(`PRAGMA page_size = ${SQLITE_PAGE_SIZE}`);
  const mode = db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
  if (mode.journal_mode !== "wal") throw new AppError("database_unsafe", "WAL not available");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec(`PRAGMA journal_size_limit = ${STATE_DB_JOURNAL_SIZE_LIMIT}`);
  db.exec("PRAGMA trusted_schema = OFF");
}

function pageSizeOf(db: DatabaseSync): number {
  return (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
}

function pageCountOf(db: DatabaseSync): number {
  return (db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
}

/**
 * Applies the pending migrations with room above the cap [CV-1]: a migration
 * that rebuilds a table (0019 and 0022 copy `run_events`) holds the old and the
 * new copy until it commits, so a database near its cap could not be migrated,
 * and an Agent that cannot migrate does not open at all. While migrating, the
 * cap is raised by the file's own size (the most a rebuild can add); after it,
 * the cap applies again, and a file the rebuild left above it (the old copy's
 * pages are free, not returned) is vacuumed back to what it holds. Nothing is
 * raised when no migration is pending.
 */
function migrateWithHeadroom(
  db: DatabaseSync,
  migrations: readonly Migration[],
  maxPages: number,
): void {
  if (schemaVersion(db) >= migrations.length) {
    applyMigrations(db, migrations); // refuses a newer schema, writes nothing otherwise
    return;
  }
  db.exec(`PRAGMA max_page_count = ${maxPages + pageCountOf(db)}`);
  try {
    applyMigrations(db, migrations);
    if (pageCountOf(db) > maxPages) vacuumUnlessBusy(db);
  } finally {
    // SQLite keeps the cap at the file's size when that is larger still (content over the cap).
    db.exec(`PRAGMA max_page_count = ${maxPages}`);
  }
}

/**
 * VACUUM, unless another connection holds the write lock past the busy timeout (in WAL mode a
 * reader does not stop it). The migrations have committed by then: a file left above its cap only
 * holds free pages, which later writes reuse, so a busy file is left as it is rather than failing
 * the open.
 */
function vacuumUnlessBusy(db: DatabaseSync): void {
  try {
    db.exec("VACUUM");
  } catch (err) {
    if (sqliteErrcode(err) !== SQLITE_BUSY && sqliteErrcode(err) !== SQLITE_LOCKED) throw err;
  }
}

/** Runs `fn` inside BEGIN IMMEDIATE … COMMIT, rolling back on any throw. */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const out = fn();
    db.exec("COMMIT");
    return out;
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw err;
  }
}

/**
 * A state transition is one conditional UPDATE/DELETE that must move exactly
 * one row; matching none (the row is gone or already in another state) is a
 * bug or a lost race, never a silent no-op: `state_transition_missed`, with
 * `what` (a fixed name, never data) in the log detail.
 */
export function expectOneChange(r: { changes: number | bigint }, what: string): void {
  if (Number(r.changes) !== 1) throw new AppError("state_transition_missed", what);
}

/**
 * Opens a database file only to read and check it (inspection, backups):
 * SECURITY: trusted_schema=OFF and query_only=ON, so reading a file never runs
 * its triggers or writes to it.
 */
export function openForReading(path: string, opts: { cellSizeCheck?: boolean } = {}): DatabaseSync {
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA trusted_schema = OFF");
    db.exec("PRAGMA query_only = ON");
    if (opts.cellSizeCheck) db.exec("PRAGMA cell_size_check = ON");
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** `PRAGMA quick_check` finds nothing wrong. */
export function passesQuickCheck(db: DatabaseSync): boolean {
  const rows = db.prepare("PRAGMA quick_check").all() as { quick_check: string }[];
  return rows.length === 1 && rows[0].quick_check === "ok";
}

/** What `integrity_check` and `foreign_key_check` found in a database no one else uses. */
export type IntegrityVerdict =
  | { ok: true; userVersion: number }
  | { ok: false; failed: "integrity_check" | "foreign_key_check" };

export function checkDatabaseIntegrity(path: string): IntegrityVerdict {
  const db = openForReading(path, { cellSizeCheck: true });
  try {
    const rows = db.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[];
    if (rows.length !== 1 || rows[0].integrity_check !== "ok") {
      return { ok: false, failed: "integrity_check" };
    }
    if (db.prepare("PRAGMA foreign_key_check").all().length > 0) {
      return { ok: false, failed: "foreign_key_check" };
    }
    const { user_version } = db.prepare("PRAGMA user_version").get() as { user_version: number };
    return { ok: true, userVersion: user_version };
  } finally {
    db.close();
  }
}

/**
 * Copies the live database at `path` into `outPath` with SQLite's online
 * backup in ONE step (rate -1): one read transaction, so the copy is exactly
 * one committed state even under concurrent WAL writers.
 */
export async function backupDatabase(path: string, outPath: string): Promise<void> {
  const db = new DatabaseSync(path);
  try {
    db.exec(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    db.exec("PRAGMA trusted_schema = OFF");
    await backup(db, outPath, { rate: -1 });
  } finally {
    db.close();
  }
}
