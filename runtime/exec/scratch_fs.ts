/**
 * Descriptor-anchored primitives for scratch copies and change sets [EX-3]
 * [EX-4]: open a source file without following anything, clone or copy it
 * into a directory fd, digest an fd, remove a tree below a directory fd.
 *
 * What this file enforces: every name is a single component opened with
 * `openBeneath` (openat2 RESOLVE_BENEATH|NO_SYMLINKS|NO_MAGICLINKS|NO_XDEV,
 * O_NOFOLLOW) relative to a directory fd, so a symlink a command planted in
 * the scratch can never redirect the Control Plane's reads, writes or
 * deletions; a source is type-checked through O_PATH before it is opened
 * for reading (a FIFO or device is never opened), reopened O_NONBLOCK and
 * must be the same inode with one link; copies are created O_EXCL; tree
 * removal lists with getdents64 and unlinks with unlinkat, never by path.
 *
 * Ownership and mode policy (who may read the copy) is the caller's.
 */
import { createHash } from "node:crypto";
import { listDir } from "../../linuxfs/dirents.ts";
import { type FileIdentity, identityOf, lstatIn, openBeneath } from "../../linuxfs/fs_anchor.ts";
import {
  AT_REMOVEDIR,
  closeFd,
  cstr,
  fstatx,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOCTTY,
  O_NONBLOCK,
  O_PATH,
  O_RDONLY,
  O_WRONLY,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  type Statx,
  syscall,
} from "../../sandbox/libc.ts";

/** ioctl FICLONE = _IOW(0x94, 9, int): share the source's extents (reflink). */
const FICLONE = 0x40049409;
const CHUNK = 1024 * 1024;

/** Who owns what the Control Plane creates in a scratch copy (null: the server's own uid). */
export interface ScratchOwner {
  uid: number;
  gid: number;
}

/** Opens a regular (single-link unless allowed) file `name` of `dirfd` for reading; null if not. */
export function openSourceFile(
  dirfd: number,
  name: string,
  expect?: Statx,
  opts: { allowLinks?: boolean } = {},
): { fd: number; st: Statx } | null {
  const p = openBeneath(dirfd, name, O_PATH);
  if (p.fd < 0) return null;
  let pst: Statx;
  try {
    const s = fstatx(p.fd);
    if (!s.ok) return null;
    pst = s.st;
  } finally {
    closeFd(p.fd);
  }
  if ((pst.mode & S_IFMT) !== S_IFREG) return null;
  // A workspace file with a second name is left out [EX-3]; in the scratch a command's
  // own hard link is just another name for bytes to compare.
  if (pst.nlink !== 1 && !opts.allowLinks) return null;
  if (expect && expect.ino !== pst.ino) return null;
  // SECURITY: only a verified regular file is opened for reading; O_NONBLOCK so an
  // object swapped in between cannot block the Control Plane.
  const o = openBeneath(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (o.fd < 0) return null;
  const s2 = fstatx(o.fd);
  if (
    !s2.ok || s2.st.ino !== pst.ino || s2.st.devMajor !== pst.devMajor ||
    s2.st.devMinor !== pst.devMinor || (s2.st.mode & S_IFMT) !== S_IFREG
  ) {
    closeFd(o.fd);
    return null;
  }
  return { fd: o.fd, st: s2.st };
}

/** Opens a directory `name` of `dirfd` (no symlink, no mount crossing); -1 when it is not one. */
export function openDirIn(dirfd: number, name: string): number {
  const o = openBeneath(dirfd, name, O_RDONLY | O_DIRECTORY);
  if (o.fd < 0) return -1;
  const s = fstatx(o.fd);
  if (!s.ok || (s.st.mode & S_IFMT) !== S_IFDIR) {
    closeFd(o.fd);
    return -1;
  }
  return o.fd;
}

/** Copies all of `src` into `dst` from offset 0: reflink first, then copy_file_range, then read/write. */
export function cloneOrCopy(src: number, dst: number, size: number): "reflink" | "copy" | null {
  if (syscall("ioctl", dst, FICLONE, src).ret === 0n) return "reflink";
  let off = 0;
  // copy_file_range keeps the bytes in the kernel; it may refuse (EXDEV, EINVAL, ENOSYS).
  for (;;) {
    if (off >= size) return "copy";
    const r = syscall("copy_file_range", src, null, dst, null, Math.min(CHUNK * 16, size - off), 0);
    if (r.ret <= 0n) break;
    off += Number(r.ret);
  }
  const buf = new Uint8Array(CHUNK);
  while (off < size) {
    const r = syscall("pread64", src, buf, CHUNK, off);
    if (r.ret <= 0n) return null;
    const n = Number(r.ret);
    let w = 0;
    while (w < n) {
      const x = syscall("pwrite64", dst, buf.subarray(w, n), n - w, off + w);
      if (x.ret <= 0n) return null;
      w += Number(x.ret);
    }
    off += n;
  }
  return "copy";
}

/**
 * Creates `name` in `dstDir` as a copy of the open `src` (mode & 0o777, owner-readable and
 * writable), owned by `owner` when given. Returns the copy's identity or null (nothing left).
 */
export function copyInto(
  src: { fd: number; st: Statx },
  dstDir: number,
  name: string,
  owner: ScratchOwner | null,
): FileIdentity | null {
  const mode = (src.st.mode & 0o777) | 0o600;
  const d = openBeneath(dstDir, name, O_WRONLY | O_CREAT | O_EXCL, mode);
  if (d.fd < 0) return null;
  let ok = false;
  try {
    ok = cloneOrCopy(src.fd, d.fd, Number(src.st.size)) !== null &&
      syscall("fchmod", d.fd, mode).ret === 0n &&
      (owner === null || syscall("fchown", d.fd, owner.uid, owner.gid).ret === 0n);
    if (!ok) return null;
    const s = fstatx(d.fd);
    return s.ok ? identityOf(s.st) : null;
  } finally {
    closeFd(d.fd);
    if (!ok) syscall("unlinkat", dstDir, cstr(name), 0);
  }
}

/** Makes directory `name` in `dirfd` (owner rwx) owned by `owner`; returns its fd or -1. */
export function makeDirIn(
  dirfd: number,
  name: string,
  mode: number,
  owner: ScratchOwner | null,
): number {
  const m = (mode & 0o777) | 0o700;
  if (syscall("mkdirat", dirfd, cstr(name), m).ret !== 0n) return -1;
  const fd = openDirIn(dirfd, name);
  if (fd < 0) return -1;
  const ok = syscall("fchmod", fd, m).ret === 0n &&
    (owner === null || syscall("fchown", fd, owner.uid, owner.gid).ret === 0n);
  if (!ok) {
    closeFd(fd);
    return -1;
  }
  return fd;
}

/** Streams an open fd through the content digest of [TL-4] receipts; null on a short read. */
export function digestFd(fd: number, size: number): string | null {
  const h = createHash("sha256");
  h.update(new TextEncoder().encode("agent-builder/file-content/v1"));
  h.update(new Uint8Array([0]));
  const buf = new Uint8Array(Math.min(CHUNK, Math.max(1, size)));
  let off = 0;
  while (off < size) {
    const r = syscall("pread64", fd, buf, Math.min(buf.length, size - off), off);
    if (r.ret <= 0n) return null;
    h.update(buf.subarray(0, Number(r.ret)));
    off += Number(r.ret);
  }
  // One more byte means the file grew while it was read.
  if (syscall("pread64", fd, buf, 1, off).ret !== 0n) return null;
  return h.digest("hex");
}

/** Reads all of an open fd (size known); null on a short read. */
export function readAllFd(fd: number, size: number): Uint8Array | null {
  const out = new Uint8Array(size);
  let off = 0;
  while (off < size) {
    const r = syscall("pread64", fd, out.subarray(off), size - off, off);
    if (r.ret <= 0n) return null;
    off += Number(r.ret);
  }
  return out;
}

/**
 * Removes `name` of `dirfd` whatever it is (a directory with all its contents, never
 * following a link). Returns false when something could not be removed.
 */
export function removeEntryAt(dirfd: number, name: string, depth = 0): boolean {
  const st = lstatIn(dirfd, name);
  if (!st.ok) return true;
  if ((st.st.mode & S_IFMT) !== S_IFDIR) {
    return syscall("unlinkat", dirfd, cstr(name), 0).ret === 0n;
  }
  if (depth > 256) return false;
  const fd = openDirIn(dirfd, name);
  if (fd < 0) return false;
  let ok = true;
  try {
    const l = listDir(fd, 1_000_000);
    if (!l.ok || l.invalid > 0) return false;
    for (const e of l.entries) {
      if (!removeEntryAt(fd, e.name, depth + 1)) ok = false;
    }
  } finally {
    closeFd(fd);
  }
  return syscall("unlinkat", dirfd, cstr(name), AT_REMOVEDIR).ret === 0n && ok;
}
