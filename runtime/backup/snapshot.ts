/**
 * Taking a consistent picture of `data/` while the server may be writing
 * [OP-1].
 *
 * - Databases are never copied as files: SQLite's online backup API copies
 *   every page in ONE step (rate -1), i.e. inside one read transaction, so
 *   the copy is exactly one committed state even under concurrent WAL
 *   writers (a stepwise backup would restart on every foreign write). The
 *   copy is then checked with `PRAGMA integrity_check` before it may enter an
 *   archive. (`VACUUM INTO` is unavailable: Deno disables ATTACH for node:sqlite
 *   unless every permission is granted, and the launcher grants a list.)
 * - Everything else is walked through directory descriptors (getdents64 +
 *   openat2 without following links, linuxfs/fs_anchor.ts): an Agent that
 *   swaps a workspace file or directory for a symlink cannot make the backup
 *   read outside data/. Links, fifos, sockets and devices are reported as
 *   skipped, never archived. SQLite's -wal/-shm/-journal companions are left
 *   out (the snapshot already contains their committed content).
 */
import { backupDatabase, checkDatabaseIntegrity } from "../store/sqlite.ts";
import { AppError } from "../errors.ts";
import { checkManagedPath } from "../path_safety.ts";
import { listDir } from "../../linuxfs/dirents.ts";
import { lstatIn, openBeneath } from "../../linuxfs/fs_anchor.ts";
import { closeFd, cstr, fstatx, O_DIRECTORY, O_NONBLOCK, O_RDONLY } from "../../sandbox/libc.ts";
import { O_CLOEXEC, O_NOFOLLOW, syscall } from "../../sandbox/libc.ts";
import { ArchiveError } from "./archive_error.ts";
import { isDirectory, isRegular, type Statx } from "./fs.ts";
import { checkArchivePath, type DatabaseKind, databaseKind, isDatabaseCompanion } from "./paths.ts";

/**
 * Runs integrity_check (and foreign_key_check) on a database file that no
 * one else uses and returns its schema version. Throws on any finding; the
 * file is read with its triggers off and never written (store/sqlite.ts).
 */
export function checkDatabaseFile(path: string): { userVersion: number } {
  const v = checkDatabaseIntegrity(path);
  if (!v.ok) throw new ArchiveError("database_corrupt", v.failed);
  return { userVersion: v.userVersion };
}

/**
 * Snapshots the live database `root/rel` into `outPath` (a new name in a
 * private directory) and verifies the copy; returns its schema version.
 */
export async function snapshotDatabase(
  root: string,
  rel: string,
  outPath: string,
): Promise<number> {
  checkManagedPath(root, rel, "file");
  await backupDatabase(`${root}/${rel}`, outPath);
  try {
    return checkDatabaseFile(outPath).userVersion;
  } catch (err) {
    if (err instanceof ArchiveError) throw new AppError("database_unsafe", `snapshot of ${rel}`);
    throw err;
  }
}

export type WalkItem =
  | { kind: "dir"; path: string; mtime: number }
  | { kind: "file"; path: string; fd: number; size: number; mode: number; mtime: number }
  | { kind: "database"; path: string; db: DatabaseKind }
  | { kind: "skipped"; path: string | null };

function openDir(dirfd: number, name: string, seen: Statx): number | null {
  const o = openBeneath(dirfd, name, O_RDONLY | O_DIRECTORY);
  if (o.fd < 0) return null;
  const st = fstatx(o.fd);
  if (!st.ok || !isDirectory(st.st) || st.st.ino !== seen.ino) {
    closeFd(o.fd);
    return null;
  }
  return o.fd;
}

/**
 * Walks `root/data` depth-first in name order. The consumer must close every
 * yielded file fd. Throws backup_too_large past `entriesMax` entries.
 */
export function* walkData(root: string, entriesMax: number): Generator<WalkItem> {
  checkManagedPath(root, "data", "dir");
  const r = syscall(
    "openat",
    -100,
    cstr(`${root}/data`),
    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
    0,
  );
  if (r.ret < 0n) throw new AppError("unsafe_path", `open data errno ${r.errno}`);
  const fd = Number(r.ret);
  const st = fstatx(fd);
  // The archive also holds the data/ directory entry itself and the manifest.
  const budget = { left: entriesMax - 2 };
  try {
    yield { kind: "dir", path: "data", mtime: st.ok ? Number(st.st.mtimeSec) : 0 };
    yield* walkDir(fd, "data", budget);
  } finally {
    closeFd(fd);
  }
}

function* walkDir(dirfd: number, rel: string, budget: { left: number }): Generator<WalkItem> {
  const list = listDir(dirfd, Math.max(0, budget.left));
  if (!list.ok) {
    if (list.reason === "entries") throw new AppError("backup_too_large", "entries");
    throw new AppError("unsafe_path", `list ${rel}`);
  }
  for (let i = 0; i < list.invalid; i++) yield { kind: "skipped", path: null };
  const names = list.entries.map((e) => e.name).sort();
  for (const name of names) {
    const path = `${rel}/${name}`;
    if (isDatabaseCompanion(path)) continue;
    const s = lstatIn(dirfd, name);
    if (!s.ok) continue; // removed since the listing: nothing to archive
    try {
      checkArchivePath(path);
    } catch (err) {
      if (!(err instanceof ArchiveError)) throw err;
      yield { kind: "skipped", path };
      continue;
    }
    if (--budget.left < 0) throw new AppError("backup_too_large", "entries");
    if (isDirectory(s.st)) {
      const fd = openDir(dirfd, name, s.st);
      if (fd === null) {
        yield { kind: "skipped", path };
        continue;
      }
      try {
        yield { kind: "dir", path, mtime: Number(s.st.mtimeSec) };
        yield* walkDir(fd, path, budget);
      } finally {
        closeFd(fd);
      }
    } else if (isRegular(s.st) && databaseKind(path) !== null) {
      yield { kind: "database", path, db: databaseKind(path)! };
    } else if (isRegular(s.st)) {
      const o = openBeneath(dirfd, name, O_RDONLY | O_NONBLOCK);
      const f = o.fd >= 0 ? fstatx(o.fd) : null;
      if (!f?.ok || !isRegular(f.st) || f.st.ino !== s.st.ino) {
        if (o.fd >= 0) closeFd(o.fd);
        yield { kind: "skipped", path };
        continue;
      }
      yield {
        kind: "file",
        path,
        fd: o.fd,
        size: Number(f.st.size),
        mode: f.st.mode & 0o100 ? 0o700 : 0o600,
        mtime: Number(f.st.mtimeSec),
      };
    } else {
      yield { kind: "skipped", path };
    }
  }
}
