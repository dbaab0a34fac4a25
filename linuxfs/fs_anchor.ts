/**
 * Descriptor-anchored workspace access [TL-4] [TL-6] [CX-2]: the only code
 * through which a model-chosen path touches the disk.
 *
 * Enforces, per call:
 * - every component is opened relative to its parent's fd with
 *   openat2(RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV) plus
 *   O_NOFOLLOW (plain openat with O_NOFOLLOW where openat2 is missing), so no
 *   symlink, magic link, `..` or mount crossing is ever followed;
 * - every directory is re-checked on its fd: a directory, owned by the
 *   workspace uid, not group/world-writable, same device and mount as the root;
 * - a leaf is first opened O_PATH and type-checked, and only a regular file is
 *   reopened for reading (O_NONBLOCK, so a FIFO swapped in cannot block);
 * - every fd is closed in a finally block.
 *
 * Leaves to callers: which paths are allowed (runtime/tools/path.ts), text
 * rules, bounds on results. No policy beyond "is this object safe" lives here.
 */
import type { ErrorCode } from "../runtime/errors.ts";
import {
  closeFd,
  cstr,
  EEXIST,
  ELOOP,
  ENAMETOOLONG,
  ENOENT,
  ENOSYS,
  ENOTDIR,
  EXDEV,
  fileClose,
  fileFstatx,
  fileOpenat2,
  fileStatx,
  fstatx,
  lastFileErrno,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  RESOLVE_BENEATH,
  RESOLVE_NO_MAGICLINKS,
  RESOLVE_NO_SYMLINKS,
  RESOLVE_NO_XDEV,
  S_IFDIR,
  S_IFLNK,
  S_IFMT,
  type Statx,
  syscall,
} from "../sandbox/libc.ts";

export type Fail = { ok: false; code: ErrorCode };
export type Result<T> = ({ ok: true } & T) | Fail;

/** A workspace directory held open by fd. The owner closes it exactly once. */
export interface WorkspaceRoot {
  readonly fd: number;
  readonly uid: number;
  readonly devMajor: number;
  readonly devMinor: number;
  readonly mntId: bigint;
  close(): void;
}

/** A stable identity of a file object, JSON-safe (bigints as decimal strings). */
export interface FileIdentity {
  dev: string;
  ino: string;
  size: number;
  mtime_ns: string;
  ctime_ns: string;
}

export function identityOf(st: Statx): FileIdentity {
  return {
    dev: `${st.devMajor}:${st.devMinor}`,
    ino: st.ino.toString(),
    size: Number(st.size),
    mtime_ns: (st.mtimeSec * 1_000_000_000n + BigInt(st.mtimeNsec)).toString(),
    ctime_ns: (st.ctimeSec * 1_000_000_000n + BigInt(st.ctimeNsec)).toString(),
  };
}

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size &&
    a.mtime_ns === b.mtime_ns && a.ctime_ns === b.ctime_ns;
}

/** Same object (device + inode), regardless of content/timestamps. */
export function sameObject(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function fail(code: ErrorCode): Fail {
  return { ok: false, code };
}

let openat2Missing = false;
const RESOLVE_ALL = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
  RESOLVE_NO_XDEV;

/** `struct open_how` per (flags, mode), built once: the kernel only reads it. */
const openHows = new Map<string, Uint8Array>();
/** The same, keyed by flags alone for mode 0 (every read-open). */
const openHowsMode0 = new Map<number, Uint8Array>();
function openHow(flags: number, mode: number): Uint8Array {
  if (mode === 0) {
    let how = openHowsMode0.get(flags);
    if (how === undefined) {
      how = openHowBuilt(flags, mode);
      openHowsMode0.set(flags, how);
    }
    return how;
  }
  return openHowBuilt(flags, mode);
}
function openHowBuilt(flags: number, mode: number): Uint8Array {
  const key = `${flags}:${mode}`;
  let how = openHows.get(key);
  if (how === undefined) {
    how = new Uint8Array(24);
    const v = new DataView(how.buffer);
    v.setBigUint64(0, BigInt(flags), true);
    v.setBigUint64(8, BigInt(mode), true);
    v.setBigUint64(16, BigInt(RESOLVE_ALL), true);
    openHows.set(key, how);
  }
  return how;
}

/**
 * Opens ONE name below `dirfd` without following anything. Returns the raw
 * fd or the errno. `name` must be a single component (no `/`).
 */
export function openBeneath(
  dirfd: number,
  name: string,
  flags: number,
  mode = 0,
): { fd: number; errno: 0 } | { fd: -1; errno: number } {
  if (name.includes("/") || name === "" || name === "." || name === "..") {
    return { fd: -1, errno: ENOENT };
  }
  const f = flags | O_NOFOLLOW | O_CLOEXEC;
  if (!openat2Missing) {
    const fd = fileOpenat2(dirfd, name, openHow(f, mode));
    if (fd >= 0) return { fd, errno: 0 };
    const errno = lastFileErrno();
    if (errno !== ENOSYS) return { fd: -1, errno };
    openat2Missing = true;
  }
  return openatNoFollow(dirfd, name, flags, mode);
}

/**
 * The pre-openat2 fallback: openat with O_NOFOLLOW|O_CLOEXEC on one name.
 * It cannot refuse a mount crossing by itself; callers' fstat device and
 * mount-id checks do that. Exported so tests can exercise it directly.
 */
export function openatNoFollow(
  dirfd: number,
  name: string,
  flags: number,
  mode = 0,
): { fd: number; errno: 0 } | { fd: -1; errno: number } {
  if (name.includes("/") || name === "" || name === "." || name === "..") {
    return { fd: -1, errno: ENOENT };
  }
  const r = syscall("openat", dirfd, cstr(name), flags | O_NOFOLLOW | O_CLOEXEC, mode);
  if (r.ret >= 0n) return { fd: Number(r.ret), errno: 0 };
  return { fd: -1, errno: r.errno };
}

/** Maps an open errno on `name` in `dirfd` to a fixed code, classifying by lstat. */
export function classifyOpenErrno(dirfd: number, name: string, errno: number): ErrorCode {
  if (errno === ENOENT) return "path_not_found";
  if (errno === EXDEV) return "path_cross_device";
  if (errno === ENAMETOOLONG) return "path_too_long";
  if (errno === ELOOP || errno === ENOTDIR) {
    const s = fileStatx(dirfd, name, AT_SYMLINK_NOFOLLOW_FLAG);
    if (s.ok && (s.st.mode & S_IFMT) === S_IFLNK) return "path_symlink";
    if (errno === ELOOP) return "path_symlink";
    return "path_not_directory";
  }
  if (errno === EEXIST) return "file_exists";
  return "path_unsafe_owner";
}

const AT_SYMLINK_NOFOLLOW_FLAG = 0x100;

/** Checks a directory's metadata against the workspace root [TL-4]. */
export function checkDirectory(root: WorkspaceRoot, st: Statx): ErrorCode | null {
  if ((st.mode & S_IFMT) === S_IFLNK) return "path_symlink";
  if ((st.mode & S_IFMT) !== S_IFDIR) return "path_not_directory";
  if (st.devMajor !== root.devMajor || st.devMinor !== root.devMinor) return "path_cross_device";
  if (st.mntId !== root.mntId) return "path_cross_device";
  if (st.uid !== root.uid) return "path_unsafe_owner";
  if ((st.mode & 0o022) !== 0) return "path_unsafe_owner";
  return null;
}

/**
 * Opens the workspace directory itself. `dir` is a Control-Plane-managed
 * absolute path (never model input); its last component must not be a
 * symlink and it must be a directory owned by us, not group/world-writable.
 */
export function openWorkspaceRoot(dir: string): Result<{ root: WorkspaceRoot }> {
  const uid = Deno.uid();
  if (uid === null) return fail("unsafe_path");
  const r = syscall("openat", -100, cstr(dir), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (r.ret < 0n) return fail(r.errno === ENOENT ? "path_not_found" : "unsafe_path");
  const fd = Number(r.ret);
  const s = fstatx(fd);
  if (!s.ok) {
    closeFd(fd);
    return fail("unsafe_path");
  }
  const st = s.st;
  if ((st.mode & S_IFMT) !== S_IFDIR || st.uid !== uid || (st.mode & 0o022) !== 0) {
    closeFd(fd);
    return fail("unsafe_path");
  }
  let open = true;
  const root: WorkspaceRoot = {
    fd,
    uid,
    devMajor: st.devMajor,
    devMinor: st.devMinor,
    mntId: st.mntId,
    close() {
      if (open) closeFd(fd);
      open = false;
    },
  };
  return { ok: true, root };
}

/** Runs `fn` with the workspace at `dir` open; the fd is closed afterwards. */
export function withWorkspaceRoot<T>(dir: string, fn: (root: WorkspaceRoot) => T): T | Fail {
  const o = openWorkspaceRoot(dir);
  if (!o.ok) return o;
  try {
    return fn(o.root);
  } finally {
    o.root.close();
  }
}

/**
 * Opens one directory component below `dirfd` and checks it. The returned fd
 * belongs to the caller.
 */
export function openChildDir(
  root: WorkspaceRoot,
  dirfd: number,
  name: string,
): Result<{ fd: number }> {
  const o = openBeneath(dirfd, name, O_RDONLY | O_DIRECTORY);
  if (o.fd < 0) return fail(classifyOpenErrno(dirfd, name, o.errno));
  const s = fileFstatx(o.fd);
  const bad = s.ok ? checkDirectory(root, s.st) : "path_unsafe_owner";
  if (bad !== null) {
    fileClose(o.fd);
    return fail(bad);
  }
  return { ok: true, fd: o.fd };
}

/**
 * Walks `dirs` (canonical components) from the root, one checked directory at
 * a time, and returns an fd for the last one (a fresh dup-free fd even for the
 * root, so the caller always closes what it gets).
 */
export function openDirChain(root: WorkspaceRoot, dirs: readonly string[]): Result<{ fd: number }> {
  const rs = fstatx(root.fd);
  const rootBad = rs.ok ? checkDirectory(root, rs.st) : "path_unsafe_owner";
  if (rootBad !== null) return fail(rootBad);
  const self = syscall("openat", root.fd, cstr("."), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (self.ret < 0n) return fail("path_unsafe_owner");
  let fd = Number(self.ret);
  for (const name of dirs) {
    const next = openChildDir(root, fd, name);
    closeFd(fd);
    if (!next.ok) return next;
    fd = next.fd;
  }
  return { ok: true, fd };
}

/** fsync(fd) → true on success. */
export function fsyncFd(fd: number): boolean {
  return syscall("fsync", fd).ret === 0n;
}

/** Writes all of `data` to `fd` (short writes continued). */
export function writeAll(fd: number, data: Uint8Array): boolean {
  let off = 0;
  while (off < data.length) {
    const r = syscall("write", fd, data.subarray(off), data.length - off);
    if (r.ret <= 0n) return false;
    off += Number(r.ret);
  }
  return true;
}

/** renameat2 within one directory fd; returns errno (0 on success). */
export function renameIn(dirfd: number, from: string, to: string, flags: number): number {
  const r = syscall("renameat2", dirfd, cstr(from), dirfd, cstr(to), flags);
  return r.ret === 0n ? 0 : r.errno;
}

/** linkat within one directory fd without following; returns errno. */
export function linkIn(dirfd: number, from: string, to: string): number {
  const r = syscall("linkat", dirfd, cstr(from), dirfd, cstr(to), 0);
  return r.ret === 0n ? 0 : r.errno;
}

/** unlinkat(dirfd, name, 0); returns errno. */
export function unlinkIn(dirfd: number, name: string): number {
  const r = syscall("unlinkat", dirfd, cstr(name), 0);
  return r.ret === 0n ? 0 : r.errno;
}

/** lstat of one name in a directory fd. */
export function lstatIn(dirfd: number, name: string) {
  return fileStatx(dirfd, name, AT_SYMLINK_NOFOLLOW_FLAG);
}
