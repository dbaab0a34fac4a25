/**
 * File-system edges for backup and restore [OP-1]: no-clobber and exchanging
 * renames (renameat2), raw reads from a descriptor the walk opened, stat mode
 * predicates, and private temp/timestamp names.
 */
import {
  AT_FDCWD,
  closeFd,
  cstr,
  EEXIST,
  EINTR,
  RENAME_EXCHANGE,
  RENAME_NOREPLACE,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  type Statx,
  syscall,
} from "../../sandbox/libc.ts";

export type { Statx };

export function isRegular(st: Statx): boolean {
  return (st.mode & S_IFMT) === S_IFREG;
}

export function isDirectory(st: Statx): boolean {
  return (st.mode & S_IFMT) === S_IFDIR;
}

/** read(2) into `buf` from its start; returns bytes read (0 at EOF). */
export function readFd(fd: number, buf: Uint8Array): number {
  for (;;) {
    const r = syscall("read", fd, buf, buf.length);
    if (r.ret >= 0n) return Number(r.ret);
    if (r.errno !== EINTR) throw new Error(`read errno ${r.errno}`);
  }
}

export { closeFd };

/** rename(2) that fails with "exists" instead of replacing the target. */
export function renameNoReplace(from: string, to: string): "ok" | "exists" {
  const r = syscall("renameat2", AT_FDCWD, cstr(from), AT_FDCWD, cstr(to), RENAME_NOREPLACE);
  if (r.ret === 0n) return "ok";
  if (r.errno === EEXIST) return "exists";
  throw new Error(`renameat2 errno ${r.errno}`);
}

/** Atomically swaps two paths (both must exist). */
export function exchangePaths(a: string, b: string): void {
  const r = syscall("renameat2", AT_FDCWD, cstr(a), AT_FDCWD, cstr(b), RENAME_EXCHANGE);
  if (r.ret !== 0n) throw new Error(`renameat2 exchange errno ${r.errno}`);
}

/** A random hex suffix for private temp names. */
export function randomSuffix(): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(8)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

/** A sortable UTC timestamp for directory names: 20261129T210356Z. */
export function timestampName(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}Z$/, "Z");
}
