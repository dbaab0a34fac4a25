/**
 * `restore FILE --yes` [OP-1]: replaces `data/` with a validated backup.
 *
 * Enforces, in this order:
 * 1. never while a server serves the home: the instance lock is taken (and
 *    held until the end, so no server can start mid-restore) or the restore
 *    is refused with restore_refused;
 * 2. the WHOLE archive is validated before the home's data is touched: it is
 *    extracted into a private staging directory under `.runtime/`
 *    (extract.ts), then every database must pass integrity and foreign-key
 *    checks and carry a schema version this binary can migrate from; then
 *    [OP-4] the staged tree gets the very checks `serve` applies at start-up
 *    (agents/inspect.ts): the registry's schema with its CHECK constraints,
 *    every registry row (ids, states, generations), every Agent's folders and
 *    database — an archive in which any Agent would start `unavailable`, or
 *    that `serve` would refuse outright, is refused;
 * 3. without `apply` (no --yes) the staging copy is removed and nothing else
 *    changes;
 * 4. with `apply`, the restored tree and the current `data/` are swapped with
 *    one atomic renameat2(RENAME_EXCHANGE), and the previous data is moved to
 *    `.runtime/recovery/<timestamp>/data` with a note — nothing is deleted.
 * Any failure before step 4 removes only the staging directory.
 */
import { inspectHome } from "../agents/inspect.ts";
import { AppError } from "../errors.ts";
import { acquireInstanceLock } from "../instance.ts";
import { checkManagedPath, ensurePrivateDir, fsyncDir } from "../path_safety.ts";
import { ArchiveError } from "./archive_error.ts";
import { type ExpansionLimits, extractArchive } from "./extract.ts";
import { exchangePaths, randomSuffix, renameNoReplace, timestampName } from "./fs.ts";
import { compareDatabases, type ManifestDatabase } from "./manifest.ts";
import { databaseKind, migrationsFor } from "./paths.ts";
import { checkDatabaseFile } from "./snapshot.ts";
import type { TarLimits } from "./tar_parser.ts";

export interface RestoreOptions {
  /** Home root (absolute, resolved). */
  root: string;
  /** The archive to restore. */
  file: string;
  /** false = dry run: validate and report, change nothing. */
  apply: boolean;
  onProgress?: (read: number, size: number) => void;
  /** @default the BACKUP_* constants */
  limits?: TarLimits;
  /** @default DEFAULT_EXPANSION (extract.ts) */
  expansion?: ExpansionLimits;
  /** @default () => new Date() */
  now?: () => Date;
}

export interface RestoreResult {
  applied: boolean;
  gzip: boolean;
  createdAt: string;
  release: string;
  dirs: number;
  files: number;
  dataBytes: number;
  databases: ManifestDatabase[];
  /** Whether the home had a data/ directory to replace. */
  hadData: boolean;
  /** Where the previous data/ now lives (applied restores only), relative to the home. */
  recoveryRel: string | null;
}

/**
 * data/ was swapped for the restored tree, but a later step (moving the
 * previous data into .runtime/recovery/, or syncing it) failed. The previous
 * data is complete at `keptAt` (relative to the home); nothing was deleted.
 */
export class PreviousDataMisplaced extends Error {
  readonly keptAt: string;

  constructor(keptAt: string, cause: unknown) {
    super(`previous data kept at ${keptAt}`, { cause });
    this.name = "PreviousDataMisplaced";
    this.keptAt = keptAt;
  }
}

const SQLITE_MAGIC = "SQLite format 3\0";

function isSqliteError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === "string" && code.startsWith("ERR_SQLITE");
}

/** Checks one staged database; returns its manifest record. */
function checkStagedDatabase(stagingRoot: string, path: string): ManifestDatabase {
  const kind = databaseKind(path);
  if (kind === null || kind === "unknown") throw new ArchiveError("database_unknown");
  const abs = `${stagingRoot}/${path}`;
  const head = new Uint8Array(16);
  const f = Deno.openSync(abs, { read: true });
  let n: number;
  try {
    n = f.readSync(head) ?? 0;
  } finally {
    f.close();
  }
  // An empty file is a valid empty database (an Agent caught mid-creation by a backup).
  if (n !== 0 && (n !== 16 || new TextDecoder().decode(head) !== SQLITE_MAGIC)) {
    throw new ArchiveError("database_corrupt", "magic");
  }
  let userVersion: number;
  try {
    userVersion = checkDatabaseFile(abs).userVersion;
  } catch (err) {
    if (isSqliteError(err)) throw new ArchiveError("database_corrupt", "sqlite error");
    throw err;
  }
  if (userVersion > migrationsFor(kind).length) throw new ArchiveError("database_too_new");
  return { path, kind, user_version: userVersion };
}

/**
 * [OP-4] What `serve` would refuse, restore refuses: the staged tree is
 * inspected exactly as start-up inspects a home.
 */
function checkAsServeWould(stagingRoot: string): void {
  const home = inspectHome(stagingRoot, { quickCheck: false });
  if (home.registry === "missing") throw new ArchiveError("registry_missing");
  if (home.registry !== "ok") throw new ArchiveError("registry_invalid", home.registry);
  if (home.strayAgentDirs > 0) throw new ArchiveError("agent_dir_invalid");
  for (const a of home.agents) {
    if (a.reason === "registry_row_invalid") throw new ArchiveError("agent_row_invalid");
    if (a.reason !== null) throw new ArchiveError("agent_unavailable", a.reason);
  }
}

/** The note kept beside the previous data in its recovery directory. */
function writeNote(dir: string, note: Record<string, string>): void {
  const f = Deno.openSync(`${dir}/restore.json`, { write: true, createNew: true, mode: 0o600 });
  try {
    const bytes = new TextEncoder().encode(JSON.stringify(note, null, 1) + "\n");
    let off = 0;
    while (off < bytes.length) off += f.writeSync(bytes.subarray(off));
    f.syncSync();
  } finally {
    f.close();
  }
}

function removeIfPresent(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}

/** Validates FILE and (when `apply`) installs it as the home's data/. */
export function restoreBackup(opts: RestoreOptions): RestoreResult {
  const now = opts.now ?? (() => new Date());
  let lock;
  try {
    lock = acquireInstanceLock(opts.root);
  } catch (err) {
    if (err instanceof AppError && err.code === "instance_locked") {
      throw new AppError("restore_refused", "a server holds the home lock");
    }
    throw err;
  }
  const runtimeDir = ensurePrivateDir(opts.root, ".runtime");
  const stagingName = `restore-${timestampName(now())}-${randomSuffix()}`;
  const staging = `${runtimeDir}/${stagingName}`;
  let created = false;
  let installed = false;
  try {
    // SECURITY: a fresh private directory; mkdir fails if the name exists.
    Deno.mkdirSync(staging, { mode: 0o700 });
    created = true;
    const ex = extractArchive({
      file: opts.file,
      stagingRoot: staging,
      limits: opts.limits,
      expansion: opts.expansion,
      onProgress: opts.onProgress,
    });
    if (!ex.entries.some((e) => e.path === "data" && e.type === "dir")) {
      throw new ArchiveError("missing_parent", "no data/ directory");
    }
    const databases: ManifestDatabase[] = [];
    for (const e of ex.entries) {
      if (e.type === "file" && databaseKind(e.path) !== null) {
        databases.push(checkStagedDatabase(staging, e.path));
      }
    }
    compareDatabases(ex.manifest, databases);
    checkAsServeWould(staging);
    const hadData = checkManagedPath(opts.root, "data", "dir", true);
    const files = ex.entries.filter((e) => e.type === "file");
    const result: RestoreResult = {
      applied: false,
      gzip: ex.gzip,
      createdAt: ex.manifest.created_at,
      release: ex.manifest.release,
      dirs: ex.entries.length - files.length,
      files: files.length,
      dataBytes: files.reduce((n, e) => n + (e.type === "file" ? e.size : 0), 0),
      databases,
      hadData,
      recoveryRel: null,
    };
    if (!opts.apply) return result;

    // Durability: every staged directory's entries reach the disk before the swap.
    for (const e of ex.entries) if (e.type === "dir") fsyncDir(`${staging}/${e.path}`);
    if (!hadData) {
      if (renameNoReplace(`${staging}/data`, `${opts.root}/data`) === "exists") {
        throw new AppError("file_exists", "data/ appeared during the restore");
      }
      fsyncDir(opts.root);
      return { ...result, applied: true };
    }
    writeNote(staging, {
      restored_at: now().toISOString(),
      archive: opts.file.slice(opts.file.lastIndexOf("/") + 1),
      archive_created_at: ex.manifest.created_at,
      previous_data: "data/",
    });
    exchangePaths(`${staging}/data`, `${opts.root}/data`);
    installed = true;
    // From here on data/ is the restored tree; any failure must say where the previous data is.
    let keptAt = `.runtime/${stagingName}/data`;
    let recoveryRel = "";
    try {
      fsyncDir(opts.root);
      const recoveryDir = ensurePrivateDir(opts.root, ".runtime/recovery");
      const stamp = timestampName(now());
      for (let i = 1; i <= 100 && recoveryRel === ""; i++) {
        const name = i === 1 ? stamp : `${stamp}-${i}`;
        if (renameNoReplace(staging, `${recoveryDir}/${name}`) === "ok") {
          recoveryRel = `.runtime/recovery/${name}`;
          keptAt = `${recoveryRel}/data`;
        }
      }
      if (recoveryRel === "") throw new Error("no free recovery name");
      fsyncDir(recoveryDir);
      fsyncDir(runtimeDir);
    } catch (err) {
      throw new PreviousDataMisplaced(keptAt, err);
    }
    return { ...result, applied: true, recoveryRel: `${recoveryRel}/data` };
  } finally {
    // Before the swap the staging tree is only our scratch copy; after it, it holds
    // the previous data and must never be removed (it is moved to recovery above).
    if (created && !installed) removeIfPresent(staging);
    lock.release();
  }
}
