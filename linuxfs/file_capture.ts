/**
 * Stable capture of one regular file below a checked directory fd [TL-4]
 * [CX-2]: the READ primitive shared by read_text, grep, edit/write and the
 * instruction-file reader.
 *
 * Enforces: the name is opened O_PATH|O_NOFOLLOW first and type-checked, so a
 * FIFO, socket or device is never opened for reading (nothing can block or
 * trigger a driver); only a regular file owned by the workspace uid, not
 * group/world-writable, with exactly one link, on the workspace device and
 * mount, not sparse and within `maxBytes` is reopened O_RDONLY|O_NONBLOCK and
 * must be the same inode; the read must return exactly the stat'ed size, and
 * after the read both the fd and the name must still show the same identity.
 * A deadline is checked between every step.
 */
import type { ErrorCode } from "../runtime/errors.ts";
import {
  classifyOpenErrno,
  type Fail,
  type FileIdentity,
  identityOf,
  lstatIn,
  openBeneath,
  type WorkspaceRoot,
} from "./fs_anchor.ts";
import {
  fileClose as closeFd,
  fileFstatx as fstatx,
  fileLseek,
  filePread,
  O_NOCTTY,
  O_NONBLOCK,
  O_PATH,
  O_RDONLY,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  SEEK_HOLE,
  type Statx,
} from "../sandbox/libc.ts";

/** Test seams to make races deterministic; production passes none. */
export interface CaptureHooks {
  /** Called after the O_PATH type check, before the name is reopened for reading. */
  afterTypeCheck?: () => void;
  /** Called after the file is open and checked, before the first read. */
  afterOpen?: () => void;
  /** Called after the bytes are read, before the final identity checks. */
  afterRead?: () => void;
  /** Monotonic clock in ms. @default performance.now */
  now?: () => number;
}

export interface CaptureOptions {
  maxBytes: number;
  /** Absolute deadline on the `now` clock. */
  deadline: number;
  hooks?: CaptureHooks;
  /**
   * The leaf's lstat, taken by the caller from the same `dirfd` and `name`
   * and already passed through checkRegularFile with the same `maxBytes` (the
   * descriptor walk does exactly this). It then IS the type check before the
   * read-open — a no-follow lookup of one component, as the O_PATH open is —
   * so the O_PATH open, its fstat and its close are skipped. Everything after
   * (reopen, same-inode check, hole check, identity before/after) is unchanged.
   */
  checked?: Statx;
  /**
   * A caller-owned buffer to read into when the file (plus the slack byte)
   * fits; the returned bytes are then a view of it, valid until the caller
   * reuses it. A search passes one for all its files (no allocation per
   * file); every other caller gets a fresh buffer per capture.
   */
  buffer?: Uint8Array;
}

export type Capture =
  | { ok: true; bytes: Uint8Array; identity: FileIdentity }
  | Fail;

const fail = (code: ErrorCode): Fail => ({ ok: false, code });

/**
 * sameIdentity(identityOf(a), identityOf(b)) without building the strings:
 * device, inode, size, mtime and ctime.
 */
export function sameStatIdentity(a: Statx, b: Statx): boolean {
  return a.devMajor === b.devMajor && a.devMinor === b.devMinor && a.ino === b.ino &&
    a.size === b.size && a.mtimeSec === b.mtimeSec && a.mtimeNsec === b.mtimeNsec &&
    a.ctimeSec === b.ctimeSec && a.ctimeNsec === b.ctimeNsec;
}

/** Checks a leaf's metadata: regular, owner, mode, links, device, size, sparse. */
export function checkRegularFile(
  root: WorkspaceRoot,
  st: Statx,
  maxBytes: number,
): ErrorCode | null {
  const type = st.mode & S_IFMT;
  if (type === S_IFLNK) return "path_symlink";
  if (type !== S_IFREG) return "file_not_regular";
  if (st.devMajor !== root.devMajor || st.devMinor !== root.devMinor) return "path_cross_device";
  if (st.mntId !== root.mntId) return "path_cross_device";
  if (st.uid !== root.uid || (st.mode & 0o022) !== 0) return "path_unsafe_owner";
  if (st.nlink !== 1) return "file_hardlinked";
  if (st.size > BigInt(maxBytes)) return "file_too_large";
  // Allocation below the logical size means a hole (compressed filesystems
  // are refused too: fail closed rather than guess).
  if (st.blocks * 512n < st.size) return "file_sparse";
  return null;
}

/** Opens the leaf for reading after the O_PATH type check. Caller closes the fd. */
export function openRegularLeaf(
  root: WorkspaceRoot,
  dirfd: number,
  name: string,
  maxBytes: number,
  hooks: CaptureHooks = {},
  checked?: Statx,
): { ok: true; fd: number; st: Statx } | Fail {
  let pst: Statx;
  if (checked !== undefined) {
    pst = checked;
  } else {
    const p = openBeneath(dirfd, name, O_PATH);
    if (p.fd < 0) return fail(classifyOpenErrno(dirfd, name, p.errno));
    try {
      const s = fstatx(p.fd);
      if (!s.ok) return fail("path_unsafe_owner");
      pst = s.st;
    } finally {
      closeFd(p.fd);
    }
  }
  const bad = checkRegularFile(root, pst, maxBytes);
  if (bad !== null) return fail(bad);
  hooks.afterTypeCheck?.();
  // SECURITY: only a verified regular file is opened for reading; O_NONBLOCK
  // so an object swapped in between cannot block the Control Plane.
  const o = openBeneath(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (o.fd < 0) return fail(classifyOpenErrno(dirfd, name, o.errno));
  const s2 = fstatx(o.fd);
  if (
    !s2.ok || s2.st.ino !== pst.ino || s2.st.devMajor !== pst.devMajor ||
    s2.st.devMinor !== pst.devMinor || s2.st.mntId !== pst.mntId
  ) {
    closeFd(o.fd);
    return fail("file_changed");
  }
  const bad2 = checkRegularFile(root, s2.st, maxBytes);
  if (bad2 !== null) {
    closeFd(o.fd);
    return fail(bad2);
  }
  // A hole the block count cannot see (e.g. preallocated tail) shows up here.
  const hole = fileLseek(o.fd, 0, SEEK_HOLE);
  if (hole >= 0n && hole < s2.st.size) {
    closeFd(o.fd);
    return fail("file_sparse");
  }
  return { ok: true, fd: o.fd, st: s2.st };
}

/**
 * Reads the whole file `name` in `dirfd` with all [TL-4] checks. The result
 * holds every byte (≤ maxBytes) and the identity seen before AND after.
 */
export function captureFile(
  root: WorkspaceRoot,
  dirfd: number,
  name: string,
  opts: CaptureOptions,
): Capture {
  const now = opts.hooks?.now ?? (() => performance.now());
  if (now() > opts.deadline) return fail("file_timeout");
  const o = openRegularLeaf(root, dirfd, name, opts.maxBytes, opts.hooks, opts.checked);
  if (!o.ok) return o;
  try {
    const st = o.st;
    opts.hooks?.afterOpen?.();
    const size = Number(st.size);
    // One byte of slack detects growth between stat and read.
    const buf = opts.buffer !== undefined && opts.buffer.length > size
      ? opts.buffer.subarray(0, size + 1)
      : new Uint8Array(size + 1);
    let off = 0;
    while (off < buf.length) {
      if (now() > opts.deadline) return fail("file_timeout");
      const r = filePread(o.fd, buf.subarray(off), off);
      if (r < 0) return fail("file_changed");
      if (r === 0) break;
      off += r;
      // A read that stops short exactly at the stat'ed size is at end of file:
      // growth before it would have filled the slack byte, growth after it
      // changes the size the identity check below compares.
      if (off === size) break;
    }
    if (off !== size) return fail("file_changed");
    opts.hooks?.afterRead?.();
    if (now() > opts.deadline) return fail("file_timeout");
    const after = fstatx(o.fd);
    if (!after.ok || !sameStatIdentity(o.st, after.st) || after.st.nlink !== 1) {
      return fail("file_changed");
    }
    // The name must still point at the object we read (no replace-by-rename).
    const named = lstatIn(dirfd, name);
    if (!named.ok || !sameStatIdentity(o.st, named.st)) return fail("file_changed");
    // The identity before the read (equal to the one after, checked above),
    // built on first use: a search never reads it.
    let identity: FileIdentity | undefined;
    return {
      ok: true,
      bytes: buf.subarray(0, size),
      get identity(): FileIdentity {
        return identity ??= identityOf(st);
      },
    };
  } finally {
    closeFd(o.fd);
  }
}
