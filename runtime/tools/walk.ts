/**
 * The bounded descriptor walk shared by file/glob and file/grep [TL-5].
 *
 * Enforces: every directory is opened with the checked per-component open
 * (linuxfs/fs_anchor.ts) from its parent's fd — never by path string; depth
 * ≤ 16 below the start (deeper directories are not entered and the result
 * says so); ≤ 4096 directory entries and ≤ 1024 regular files seen in total
 * and the 1 s deadline (exceeding any of them fails the whole search closed);
 * `.git` and the reserved write-temp namespace are skipped; symlinks, special
 * files, unsafe owners/modes, other devices, hardlinks, sparse files and names
 * that are not UTF-8 are refused one by one (counted, never followed). Each
 * directory's names are sorted by UTF-8 bytes, so the walk is deterministic.
 */
import { listDir } from "../../linuxfs/dirents.ts";
import { checkRegularFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  lstatIn,
  openChildDir,
  openDirChain,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { closeFd, S_IFDIR, S_IFMT, type Statx } from "../../sandbox/libc.ts";
import {
  GLOB_DEPTH_MAX,
  GLOB_ENTRIES_MAX,
  GLOB_FILES_MAX,
  PATH_COMPONENTS_MAX,
  READ_FILE_MAX_BYTES,
} from "../limits.ts";
import { compareUtf8, isReservedName, joinComponents } from "./path.ts";

export interface WalkFile {
  /** Canonical workspace-relative path. */
  path: string;
  dirfd: number;
  name: string;
  st: Statx;
}

/** What the visitor wants next. */
export type VisitResult = "continue" | "stop" | Fail;

export interface WalkOptions {
  deadline: number;
  now: () => number;
}

export type WalkResult =
  | { ok: true; refused: number; depthLimited: boolean; stopped: boolean }
  | Fail;

interface State {
  root: WorkspaceRoot;
  entries: number;
  files: number;
  refused: number;
  depthLimited: boolean;
  opts: WalkOptions;
  visit: (f: WalkFile) => VisitResult;
}

/** Walks regular files below `start` (canonical components of a directory). */
export function walkFiles(
  root: WorkspaceRoot,
  start: readonly string[],
  opts: WalkOptions,
  visit: (f: WalkFile) => VisitResult,
): WalkResult {
  const d = openDirChain(root, start);
  if (!d.ok) return d;
  const s: State = { root, entries: 0, files: 0, refused: 0, depthLimited: false, opts, visit };
  try {
    const r = walkDir(s, d.fd, [...start], 0);
    if (r !== "continue" && r !== "stop") return r;
    return { ok: true, refused: s.refused, depthLimited: s.depthLimited, stopped: r === "stop" };
  } finally {
    closeFd(d.fd);
  }
}

function walkDir(s: State, dirfd: number, prefix: string[], depth: number): VisitResult {
  if (s.opts.now() > s.opts.deadline) return { ok: false, code: "file_timeout" };
  const listed = listDir(dirfd, GLOB_ENTRIES_MAX - s.entries);
  if (!listed.ok) return { ok: false, code: "search_limit" };
  s.entries += listed.seen;
  s.refused += listed.invalid;
  const names = listed.entries.map((e) => e.name).sort(compareUtf8);
  for (const name of names) {
    if (s.opts.now() > s.opts.deadline) return { ok: false, code: "file_timeout" };
    if (name === ".git" || isReservedName(name)) continue;
    const st = lstatIn(dirfd, name);
    if (!st.ok) {
      s.refused++;
      continue;
    }
    const path = [...prefix, name];
    if ((st.st.mode & S_IFMT) === S_IFDIR) {
      if (depth + 1 > GLOB_DEPTH_MAX || path.length >= PATH_COMPONENTS_MAX) {
        s.depthLimited = true;
        continue;
      }
      const child = openChildDir(s.root, dirfd, name);
      if (!child.ok) {
        s.refused++;
        continue;
      }
      let r: VisitResult;
      try {
        r = walkDir(s, child.fd, path, depth + 1);
      } finally {
        closeFd(child.fd);
      }
      if (r !== "continue") return r;
      continue;
    }
    if (checkRegularFile(s.root, st.st, READ_FILE_MAX_BYTES) !== null) {
      s.refused++;
      continue;
    }
    if (++s.files > GLOB_FILES_MAX) return { ok: false, code: "search_limit" };
    const r = s.visit({ path: joinComponents(path), dirfd, name, st: st.st });
    if (r !== "continue") return r;
  }
  return "continue";
}
