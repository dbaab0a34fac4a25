/**
 * Startup cleanup of the reserved write-temp namespace [TL-6]: temps named
 * `.agent-builder-write-*` left by a crash between temp creation and the
 * final unlink of file/write, file/edit or instruction provisioning.
 *
 * Enforces: a bounded descriptor walk (depth 16, ≤ 4096 entries, `.git` not
 * entered); at most 16 temps removed per call; a temp is removed only if it
 * is a regular file owned by the workspace uid, not group/world-writable and
 * ≤ 1 MiB (a second link is allowed: unlinking the temp name leaves the other
 * name's content intact, and repairs a crash after provisioning's linkat) —
 * any other object in the namespace is an anomaly and the cleanup fails
 * closed without removing it. Each directory is
 * flock'ed while its temps are removed, so a concurrent commit is never raced.
 */
import { listDir } from "../../linuxfs/dirents.ts";
import { checkRegularFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  lstatIn,
  openChildDir,
  openDirChain,
  unlinkIn,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { closeFd, LOCK_EX, LOCK_NB, S_IFDIR, S_IFMT, syscall } from "../../sandbox/libc.ts";
import {
  GLOB_DEPTH_MAX,
  GLOB_ENTRIES_MAX,
  READ_FILE_MAX_BYTES,
  STALE_WRITE_TEMPS_CLEANED_MAX,
} from "../limits.ts";
import { isReservedName } from "./path.ts";

export type CleanupResult = { ok: true; removed: number; remaining: number } | Fail;

interface Cleanup {
  root: WorkspaceRoot;
  entries: number;
  removed: number;
  remaining: number;
}

export function cleanStaleWriteTemps(root: WorkspaceRoot): CleanupResult {
  const d = openDirChain(root, []);
  if (!d.ok) return d;
  const c: Cleanup = { root, entries: 0, removed: 0, remaining: 0 };
  try {
    const r = cleanDir(c, d.fd, 0);
    if (r !== null) return r;
    return { ok: true, removed: c.removed, remaining: c.remaining };
  } finally {
    closeFd(d.fd);
  }
}

function cleanDir(c: Cleanup, dirfd: number, depth: number): Fail | null {
  const listed = listDir(dirfd, GLOB_ENTRIES_MAX - c.entries);
  if (!listed.ok) return { ok: false, code: "search_limit" };
  c.entries += listed.seen;
  const temps: string[] = [];
  const dirs: string[] = [];
  for (const e of listed.entries) {
    if (e.name === ".git") continue;
    const st = lstatIn(dirfd, e.name);
    if (!st.ok) continue;
    if (isReservedName(e.name)) {
      // A crash between instruction provisioning's linkat and its temp unlink
      // leaves the temp sharing the file's inode; removing the temp NAME is
      // what restores the file's single link, and never touches its content.
      const bad = checkRegularFile(c.root, { ...st.st, nlink: 1 }, READ_FILE_MAX_BYTES);
      if (bad !== null) return { ok: false, code: bad };
      temps.push(e.name);
    } else if ((st.st.mode & S_IFMT) === S_IFDIR && depth + 1 <= GLOB_DEPTH_MAX) {
      dirs.push(e.name);
    }
  }
  if (temps.length > 0) {
    // A directory locked by a live commit is left alone this time.
    if (syscall("flock", dirfd, LOCK_EX | LOCK_NB).ret !== 0n) {
      c.remaining += temps.length;
    } else {
      for (const t of temps) {
        if (c.removed >= STALE_WRITE_TEMPS_CLEANED_MAX) {
          c.remaining++;
          continue;
        }
        if (unlinkIn(dirfd, t) !== 0) return { ok: false, code: "path_unsafe_owner" };
        c.removed++;
      }
    }
  }
  for (const name of dirs) {
    const child = openChildDir(c.root, dirfd, name);
    if (!child.ok) continue; // unsafe directories are never entered
    try {
      const r = cleanDir(c, child.fd, depth + 1);
      if (r !== null) return r;
    } finally {
      closeFd(child.fd);
    }
  }
  return null;
}
