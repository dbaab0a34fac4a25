/**
 * The change set [EX-4]: what a scratch copy holds that the workspace did
 * not give it — the paths a command added, modified or deleted, with sizes,
 * content digests and unified diffs — computed after every command.
 *
 * What this file enforces:
 * - the scratch and the workspace are read descriptor-anchored
 *   (scratch_fs.ts: no link is followed, a FIFO or device is never opened);
 * - a file whose scratch identity is the one recorded at the last sync is
 *   unchanged without being read; any other is compared by content digest
 *   (a rewrite to the same bytes is no change);
 * - each changed path carries the workspace identity and digest of its base
 *   (what exec/apply binds to); a base the workspace changed since the sync
 *   is marked `workspace_changed` and carries no digest;
 * - ≤ CHANGE_SET_PATHS_MAX paths (sorted; beyond it `truncated`, and the
 *   whole set cannot be applied at once); unified diffs (npm `diff`) only
 *   for text ≤ CHANGE_SET_DIFF_FILE_MAX_BYTES on both sides and within
 *   CHANGE_SET_DIFFS_TOTAL_MAX_BYTES per set; other files are "binary" or
 *   "too large" and are compared and applied by digest;
 * - symlinks, FIFOs and the like a command made are never applied: they are
 *   counted in `left_out`; the command's own DENO_DIR (`.deno` at the root)
 *   is a cache and not part of the change set unless the workspace has one.
 */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import { listDir } from "../../linuxfs/dirents.ts";
import { type FileIdentity, identityOf, lstatIn } from "../../linuxfs/fs_anchor.ts";
import { closeFd, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, type Statx } from "../../sandbox/libc.ts";
import {
  CHANGE_SET_DIFF_FILE_MAX_BYTES,
  CHANGE_SET_DIFFS_TOTAL_MAX_BYTES,
  CHANGE_SET_PATHS_MAX,
  EXEC_APPLY_FILE_MAX_BYTES,
  SCRATCH_DEPTH_MAX,
  SCRATCH_ENTRIES_MAX,
} from "../limits.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { domainDigest } from "../tools/text.ts";
import { canonicalPath, compareUtf8, isReservedName } from "../tools/path.ts";
import { decodeText } from "../tools/text.ts";
import type { ScratchCopy } from "./scratch.ts";
import { digestFd, openDirIn, openSourceFile, readAllFd } from "./scratch_fs.ts";

export type ChangeKind = "added" | "modified" | "deleted";
export type ChangeNote =
  | "binary"
  | "too_large_for_diff"
  | "too_large"
  | "diff_withheld"
  | "workspace_changed"
  | null;

export interface ChangeEntry {
  path: string;
  kind: ChangeKind;
  old_size: number | null;
  new_size: number | null;
  binary: boolean;
  /** The workspace content digest at the last sync (null: added, or the base changed). */
  old_digest: string | null;
  /** The scratch content digest (null: deleted). */
  new_digest: string | null;
  /** Bytes of the unified diff (0: none kept). */
  diff_bytes: number;
  note: ChangeNote;
  /** The workspace identity at the last sync (modified/deleted), what exec/apply binds. */
  base: FileIdentity | null;
}

export interface ChangeSet {
  /** Domain digest over the entries: what an approval of exec/apply binds. */
  digest: string;
  entries: ChangeEntry[];
  /** Changed paths found (may exceed entries.length when truncated). */
  total: number;
  truncated: boolean;
  counts: { added: number; modified: number; deleted: number };
  /** Links, FIFOs and other non-files a command made or changed: never applied. */
  left_out: number;
  /** Unified diffs by path (text files only). */
  diffs: Map<string, string>;
}

/**
 * The command's DENO_DIR at the scratch root (runner.ts sets `DENO_DIR=$HOME/.deno`): a
 * cache, not a change — left out of change sets unless the workspace itself has one.
 */
export const COMMAND_DENO_DIR = ".deno";

/** Walk bound for the scratch (a command may add entries): twice the copy bound. */
const WALK_ENTRIES_MAX = 2 * SCRATCH_ENTRIES_MAX;
/** Myers diff edit bound: a diff beyond it is withheld rather than stalling the server. */
const DIFF_EDIT_LENGTH_MAX = 20_000;

interface Candidate {
  path: string;
  kind: ChangeKind;
  /** Scratch side (added/modified). */
  dirfd?: number;
  name?: string;
  st?: Statx;
}

export type ChangeSetResult = { ok: true; set: ChangeSet } | { ok: false; code: "file_changed" };

/** Computes the change set of `scratch` against its base and the workspace at `wsRootFd`. */
export function computeChangeSet(scratch: ScratchCopy, wsRootFd: number): ChangeSetResult {
  const scRoot = scratch.openRoot();
  if (scRoot < 0) return { ok: false, code: "file_changed" };
  const c: Collect = {
    scratch,
    wsRoot: wsRootFd,
    entries: 0,
    seen: new Set(),
    out: [],
    total: 0,
    leftOut: 0,
    diffBytes: 0,
    diffs: new Map(),
    tooMany: false,
  };
  try {
    if (!walk(c, scRoot, [], 0)) return { ok: false, code: "file_changed" };
    for (const [path, b] of scratch.base.files) {
      if (c.seen.has(path)) continue;
      c.total++;
      if (c.out.length >= CHANGE_SET_PATHS_MAX) continue;
      const e = deletedEntry(c, path, b.ws);
      if (e) c.out.push(e);
      else c.total--;
    }
  } finally {
    closeFd(scRoot);
  }
  c.out.sort((a, b) => compareUtf8(a.path, b.path));
  const entries = c.out.slice(0, CHANGE_SET_PATHS_MAX);
  const counts = { added: 0, modified: 0, deleted: 0 };
  for (const e of entries) counts[e.kind]++;
  const diffs = new Map<string, string>();
  for (const e of entries) {
    const d = c.diffs.get(e.path);
    if (d !== undefined) diffs.set(e.path, d);
  }
  const truncated = c.total > entries.length || c.tooMany;
  return {
    ok: true,
    set: {
      digest: changeSetDigest(entries),
      entries,
      total: Math.max(c.total, entries.length),
      truncated,
      counts,
      left_out: c.leftOut,
      diffs,
    },
  };
}

/** The digest an exec/apply approval binds: every entry's path, kind, base and digests. */
export function changeSetDigest(entries: readonly ChangeEntry[]): string {
  return domainDigest(
    "agent-builder/change-set/v1",
    canonicalJson(entries.map((e) => [e.path, e.kind, e.base, e.old_digest, e.new_digest])),
  );
}

interface Collect {
  scratch: ScratchCopy;
  wsRoot: number;
  entries: number;
  seen: Set<string>;
  out: ChangeEntry[];
  total: number;
  leftOut: number;
  diffBytes: number;
  diffs: Map<string, string>;
  tooMany: boolean;
}

function walk(c: Collect, dirfd: number, prefix: string[], depth: number): boolean {
  const l = listDir(dirfd, WALK_ENTRIES_MAX - c.entries);
  if (!l.ok) {
    if (l.reason === "entries") {
      c.tooMany = true;
      return true;
    }
    return false;
  }
  c.entries += l.seen;
  c.leftOut += l.invalid;
  const names = l.entries.map((e) => e.name).sort();
  for (const name of names) {
    if (isReservedName(name)) continue;
    if (depth === 0 && name === COMMAND_DENO_DIR && !c.scratch.base.dirs.has(name)) continue;
    const path = [...prefix, name].join("/");
    const st = lstatIn(dirfd, name);
    if (!st.ok) continue;
    const type = st.st.mode & S_IFMT;
    if (type === S_IFDIR) {
      if (depth + 1 > SCRATCH_DEPTH_MAX) {
        c.leftOut++;
        continue;
      }
      const fd = openDirIn(dirfd, name);
      if (fd < 0) continue;
      try {
        if (!walk(c, fd, [...prefix, name], depth + 1)) return false;
      } finally {
        closeFd(fd);
      }
      continue;
    }
    if (type === S_IFLNK) {
      const b = c.scratch.base.links.get(path);
      if (!b || identityOf(st.st).ino !== b.scratch.ino) c.leftOut++;
      continue;
    }
    if (type !== S_IFREG) {
      c.leftOut++;
      continue;
    }
    const base = c.scratch.base.files.get(path);
    if (base) c.seen.add(path);
    const id = identityOf(st.st);
    if (base && sameScratch(base.scratch, id)) continue;
    c.total++;
    if (c.out.length >= CHANGE_SET_PATHS_MAX) continue;
    const e = changedEntry(c, { path, kind: base ? "modified" : "added", dirfd, name, st: st.st });
    if (e === null) {
      c.total--;
      if (base) base.scratch = id; // same bytes as the base: remember, read no more
    } else if (e !== "skip") c.out.push(e);
  }
  return true;
}

function sameScratch(a: FileIdentity, b: FileIdentity): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtime_ns === b.mtime_ns &&
    a.ctime_ns === b.ctime_ns;
}

/** Opens the workspace file at `path` (its base) and returns its digest and text, if any. */
function readBase(
  c: Collect,
  path: string,
  base: FileIdentity,
): { digest: string; size: number; text: string | null; binary: boolean } | "changed" {
  const parts = path.split("/");
  let cur = -1;
  let at = c.wsRoot;
  try {
    for (const p of parts.slice(0, -1)) {
      const next = openDirIn(at, p);
      if (cur >= 0) closeFd(cur);
      cur = next;
      if (cur < 0) return "changed";
      at = cur;
    }
    const src = openSourceFile(at, parts[parts.length - 1]);
    if (src === null) return "changed";
    try {
      const id = identityOf(src.st);
      if (
        id.dev !== base.dev || id.ino !== base.ino || id.size !== base.size ||
        id.mtime_ns !== base.mtime_ns || id.ctime_ns !== base.ctime_ns
      ) return "changed";
      return contentOf(src.fd, id.size);
    } finally {
      closeFd(src.fd);
    }
  } finally {
    if (cur >= 0) closeFd(cur);
  }
}

function contentOf(
  fd: number,
  size: number,
): { digest: string; size: number; text: string | null; binary: boolean } | "changed" {
  if (size <= CHANGE_SET_DIFF_FILE_MAX_BYTES) {
    const bytes = readAllFd(fd, size);
    if (bytes === null) return "changed";
    const digest = digestFd(fd, size);
    if (digest === null) return "changed";
    const t = decodeText(bytes);
    return { digest, size, text: t.ok ? t.text : null, binary: !t.ok };
  }
  if (size > EXEC_APPLY_FILE_MAX_BYTES) return { digest: "", size, text: null, binary: false };
  const digest = digestFd(fd, size);
  if (digest === null) return "changed";
  return { digest, size, text: null, binary: false };
}

function changedEntry(c: Collect, k: Candidate): ChangeEntry | null | "skip" {
  if (!canonicalPath(k.path).ok) {
    c.leftOut++;
    return "skip";
  }
  const src = openSourceFile(k.dirfd!, k.name!, undefined, { allowLinks: true });
  if (src === null) {
    c.leftOut++;
    return "skip";
  }
  let now;
  try {
    now = contentOf(src.fd, Number(src.st.size));
  } finally {
    closeFd(src.fd);
  }
  if (now === "changed") {
    c.leftOut++;
    return "skip";
  }
  const baseFile = c.scratch.base.files.get(k.path);
  let old: ReturnType<typeof readBase> | null = null;
  if (baseFile) {
    old = readBase(c, k.path, baseFile.ws);
    if (old !== "changed" && old.digest === now.digest && now.digest !== "") return null;
  }
  const tooLarge = now.size > EXEC_APPLY_FILE_MAX_BYTES;
  const e: ChangeEntry = {
    path: k.path,
    kind: k.kind,
    old_size: old === null || old === "changed" ? null : old.size,
    new_size: now.size,
    binary: now.binary || (old !== null && old !== "changed" && old.binary),
    old_digest: old === null || old === "changed" ? null : old.digest,
    new_digest: tooLarge ? null : now.digest,
    diff_bytes: 0,
    note: tooLarge ? "too_large" : old === "changed" ? "workspace_changed" : null,
    base: baseFile ? baseFile.ws : null,
  };
  if (e.note === null) {
    const before = old === null ? "" : old === "changed" ? null : old.text;
    addDiff(c, e, before, now.text);
  }
  return e;
}

function deletedEntry(c: Collect, path: string, base: FileIdentity): ChangeEntry | null {
  const old = readBase(c, path, base);
  const e: ChangeEntry = {
    path,
    kind: "deleted",
    old_size: old === "changed" ? null : old.size,
    new_size: null,
    binary: old !== "changed" && old.binary,
    old_digest: old === "changed" ? null : old.digest,
    new_digest: null,
    diff_bytes: 0,
    note: old === "changed" ? "workspace_changed" : null,
    base,
  };
  if (old !== "changed") addDiff(c, e, old.text, "");
  return e;
}

/** Adds the unified diff of `before` → `after` when both are text within the bounds. */
function addDiff(c: Collect, e: ChangeEntry, before: string | null, after: string | null): void {
  if (before === null || after === null) {
    e.note = e.binary ? "binary" : "too_large_for_diff";
    return;
  }
  const d = createTwoFilesPatch(
    e.kind === "added" ? "/dev/null" : `a/${e.path}`,
    e.kind === "deleted" ? "/dev/null" : `b/${e.path}`,
    before,
    after,
    undefined,
    undefined,
    { maxEditLength: DIFF_EDIT_LENGTH_MAX, headerOptions: FILE_HEADERS_ONLY },
  );
  if (d === undefined) {
    e.note = "too_large_for_diff";
    return;
  }
  const n = utf8Bytes(d);
  if (c.diffBytes + n > CHANGE_SET_DIFFS_TOTAL_MAX_BYTES) {
    e.note = "diff_withheld";
    return;
  }
  c.diffBytes += n;
  e.diff_bytes = n;
  c.diffs.set(e.path, d);
}
