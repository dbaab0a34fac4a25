/**
 * `exec/apply` [EX-5]: commits paths of the latest change set from the
 * scratch copy to the real workspace through the [TL-6] machinery.
 *
 * What this file enforces, per path and inside one deadline:
 * - the path is canonical and outside the reserved temp namespace; the
 *   workspace's directories are opened with the [TL-4] checks (owner, mode,
 *   device; no link followed); a missing parent of an added file is created
 *   (0755) one checked component at a time;
 * - the path is bound to its base: a modified or deleted file must still
 *   have the workspace identity AND content digest recorded at the last sync,
 *   an added one must still be absent — otherwise `workspace_changed`, and
 *   the other paths still apply;
 * - the new content comes from the scratch file and must have the approved
 *   digest (`approval_stale` if the scratch changed since); it goes to a
 *   same-directory 0600 temp in the reserved `.agent-builder-write-*`
 *   namespace, is fsynced, and appears atomically: renameat2(NOREPLACE) for
 *   an added file, renameat2(EXCHANGE) for a modified one with the
 *   swapped-out object verified (else swapped back); a deletion renames the
 *   target to a reserved temp, verifies it, then unlinks it;
 * - per-target serialisation is the parent directory's flock, as for
 *   file/edit and file/write; binary files are applied by digest the same way;
 * - what a path's apply replaced (the verified base bytes) is returned for
 *   its [TL-11] checkpoint.
 */
import { captureFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  type FileIdentity,
  fsyncFd,
  identityOf,
  lstatIn,
  openBeneath,
  openChildDir,
  openDirChain,
  renameIn,
  sameIdentity,
  sameObject,
  unlinkIn,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import {
  closeFd,
  cstr,
  EEXIST,
  O_CREAT,
  O_EXCL,
  O_RDWR,
  RENAME_EXCHANGE,
  RENAME_NOREPLACE,
  syscall,
} from "../../sandbox/libc.ts";
import { EXEC_APPLY_FILE_MAX_BYTES } from "../limits.ts";
import { lockDir, randomTempName } from "../tools/mutation_commit.ts";
import { canonicalPath, isReservedName } from "../tools/path.ts";
import { contentDigest } from "../tools/text.ts";
import type { ChangeEntry } from "./change_set.ts";
import { cloneOrCopy, digestFd, openDirIn, openSourceFile } from "./scratch_fs.ts";

export type ApplyOutcome =
  | {
    ok: true;
    path: string;
    kind: ChangeEntry["kind"];
    identity: FileIdentity | null;
    /** The verified bytes the apply replaced or deleted; null for an added file [TL-11]. */
    before: Uint8Array | null;
  }
  | (Fail & { path: string });

export interface ApplyOptions {
  /** Absolute deadline on `now`. */
  deadline: number;
  /** @default performance.now */
  now?: () => number;
  /** Test seam: after the base was verified, before the swap. */
  beforeSwap?: (path: string) => void;
}

const fail = (path: string, code: Fail["code"]): Fail & { path: string } => ({
  ok: false,
  code,
  path,
});

/** Applies one change-set entry; `scratchRoot` is an open fd of the scratch copy. */
export function applyEntry(
  ws: WorkspaceRoot,
  scratchRoot: number,
  e: ChangeEntry,
  opts: ApplyOptions,
): ApplyOutcome {
  const now = opts.now ?? (() => performance.now());
  if (e.note === "workspace_changed") return fail(e.path, "workspace_changed");
  if (e.note === "too_large") return fail(e.path, "file_too_large");
  if (e.kind !== "deleted" && e.new_digest === null) return fail(e.path, "file_too_large");
  if (e.kind !== "added" && (e.base === null || e.old_digest === null)) {
    return fail(e.path, "workspace_changed");
  }
  const p = canonicalPath(e.path);
  if (!p.ok) return fail(e.path, p.code);
  const leaf = p.components[p.components.length - 1];
  if (isReservedName(leaf)) return fail(e.path, "path_invalid");
  const parent = e.kind === "added"
    ? openOrMakeParents(ws, p.components.slice(0, -1))
    : openDirChain(ws, p.components.slice(0, -1));
  if (!parent.ok) {
    return fail(e.path, parent.code === "path_not_found" ? "workspace_changed" : parent.code);
  }
  const dirfd = parent.fd;
  try {
    if (!lockDir(dirfd, opts.deadline, now)) return fail(e.path, "file_timeout");
    let before: Uint8Array | null = null;
    if (e.kind === "added") {
      if (lstatIn(dirfd, leaf).ok) return fail(e.path, "workspace_changed");
    } else {
      const base = verifyBase(ws, dirfd, leaf, e, opts.deadline, now);
      if (!(base instanceof Uint8Array)) return fail(e.path, base);
      before = base;
    }
    if (e.kind === "deleted") return deleteVerified(dirfd, leaf, e, opts, before!);
    const src = openScratchFile(scratchRoot, p.components);
    if (src === null) return fail(e.path, "approval_stale");
    let written: string | Fail;
    try {
      const mode = e.kind === "modified" ? modeOf(dirfd, leaf) : (src.st.mode & 0o755) | 0o600;
      written = writeTemp(dirfd, src, e.new_digest!, mode);
    } finally {
      closeFd(src.fd);
    }
    if (typeof written !== "string") return fail(e.path, written.code);
    const tmp = written;
    opts.beforeSwap?.(e.path);
    if (e.kind === "added") {
      const r = renameIn(dirfd, tmp, leaf, RENAME_NOREPLACE);
      if (r !== 0) {
        unlinkIn(dirfd, tmp);
        return fail(e.path, r === EEXIST ? "workspace_changed" : "path_unsafe_owner");
      }
    } else {
      const r = renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE);
      if (r !== 0) {
        unlinkIn(dirfd, tmp);
        return fail(e.path, "workspace_changed");
      }
      // The temp name now holds what was at the target: it must be the base, else undo.
      if (!isBase(ws, dirfd, tmp, e, opts.deadline, now)) {
        if (renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE) === 0) unlinkIn(dirfd, tmp);
        return fail(e.path, "workspace_changed");
      }
      unlinkIn(dirfd, tmp);
    }
    if (!fsyncFd(dirfd)) return fail(e.path, "storage_full");
    const fin = lstatIn(dirfd, leaf);
    if (!fin.ok) return fail(e.path, "workspace_changed");
    return { ok: true, path: e.path, kind: e.kind, identity: identityOf(fin.st), before };
  } finally {
    closeFd(dirfd);
  }
}

function verifyBase(
  ws: WorkspaceRoot,
  dirfd: number,
  leaf: string,
  e: ChangeEntry,
  deadline: number,
  now: () => number,
): Fail["code"] | Uint8Array {
  const cap = captureFile(ws, dirfd, leaf, {
    maxBytes: EXEC_APPLY_FILE_MAX_BYTES,
    deadline,
    hooks: { now },
  });
  if (!cap.ok) return cap.code === "file_timeout" ? "file_timeout" : "workspace_changed";
  if (!sameIdentity(cap.identity, e.base!)) return "workspace_changed";
  if (contentDigest(cap.bytes) !== e.old_digest) return "workspace_changed";
  return cap.bytes;
}

function isBase(
  ws: WorkspaceRoot,
  dirfd: number,
  name: string,
  e: ChangeEntry,
  deadline: number,
  now: () => number,
): boolean {
  const cap = captureFile(ws, dirfd, name, {
    maxBytes: EXEC_APPLY_FILE_MAX_BYTES,
    deadline,
    hooks: { now },
  });
  return cap.ok && sameObject(cap.identity, e.base!) && contentDigest(cap.bytes) === e.old_digest;
}

function deleteVerified(
  dirfd: number,
  leaf: string,
  e: ChangeEntry,
  opts: ApplyOptions,
  before: Uint8Array,
): ApplyOutcome {
  const tmp = randomTempName();
  opts.beforeSwap?.(e.path);
  if (renameIn(dirfd, leaf, tmp, RENAME_NOREPLACE) !== 0) return fail(e.path, "workspace_changed");
  const st = lstatIn(dirfd, tmp);
  // A rename moves ctime; the object (and its mtime and size) must be the verified base.
  const id = st.ok ? identityOf(st.st) : null;
  if (
    id === null || !sameObject(id, e.base!) || id.size !== e.base!.size ||
    id.mtime_ns !== e.base!.mtime_ns
  ) {
    // Someone swapped the file between the check and the rename: put theirs back.
    renameIn(dirfd, tmp, leaf, RENAME_NOREPLACE);
    return fail(e.path, "workspace_changed");
  }
  if (unlinkIn(dirfd, tmp) !== 0 || !fsyncFd(dirfd)) return fail(e.path, "storage_full");
  return { ok: true, path: e.path, kind: "deleted", identity: null, before };
}

function modeOf(dirfd: number, leaf: string): number {
  const st = lstatIn(dirfd, leaf);
  return st.ok ? st.st.mode & 0o755 : 0o644;
}

/** Opens the scratch file at `components` (no link followed); null when it is gone. */
function openScratchFile(root: number, components: readonly string[]) {
  let cur = -1;
  let at = root;
  try {
    for (const c of components.slice(0, -1)) {
      const next = openDirIn(at, c);
      if (cur >= 0) closeFd(cur);
      cur = next;
      if (cur < 0) return null;
      at = cur;
    }
    return openSourceFile(at, components[components.length - 1], undefined, { allowLinks: true });
  } finally {
    if (cur >= 0) closeFd(cur);
  }
}

/** Copies the scratch file into a fresh reserved temp in `dirfd` and checks its digest. */
function writeTemp(
  dirfd: number,
  src: { fd: number; st: { size: bigint } },
  digest: string,
  mode: number,
): string | Fail {
  const name = randomTempName();
  // SECURITY: exclusive, no-follow, owner-only temp inside the checked parent.
  const f = openBeneath(dirfd, name, O_RDWR | O_CREAT | O_EXCL, 0o600);
  if (f.fd < 0) return { ok: false, code: "storage_full" };
  let result: string | Fail = { ok: false, code: "storage_full" };
  try {
    const size = Number(src.st.size);
    if (cloneOrCopy(src.fd, f.fd, size) === null) return result;
    if (digestFd(f.fd, size) !== digest) {
      result = { ok: false, code: "approval_stale" };
      return result;
    }
    if (syscall("fchmod", f.fd, mode & 0o755).ret !== 0n || !fsyncFd(f.fd)) return result;
    result = name;
    return result;
  } finally {
    closeFd(f.fd);
    if (typeof result !== "string") unlinkIn(dirfd, name);
  }
}

/** Opens the parent chain, creating missing directories (0755) one checked step at a time. */
export function openOrMakeParents(
  ws: WorkspaceRoot,
  dirs: readonly string[],
): { ok: true; fd: number } | Fail {
  const first = openDirChain(ws, []);
  if (!first.ok) return first;
  let fd = first.fd;
  for (const name of dirs) {
    if (isReservedName(name)) {
      closeFd(fd);
      return { ok: false, code: "path_invalid" };
    }
    let next = openChildDir(ws, fd, name);
    if (!next.ok && next.code === "path_not_found") {
      syscall("mkdirat", fd, cstr(name), 0o755);
      next = openChildDir(ws, fd, name);
    }
    closeFd(fd);
    if (!next.ok) return next;
    fd = next.fd;
  }
  return { ok: true, fd };
}
