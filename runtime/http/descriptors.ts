/**
 * How many descriptors the process may still open [GW-1]: RLIMIT_NOFILE's
 * soft limit minus the descriptors open now. Deno is not safe at that limit —
 * Deno.serve's accept loop gives up and the runtime panics elsewhere on EMFILE
 * (measured) — so the connection guard admits a connection only while it
 * leaves CONNECTION_FD_RESERVE free. Read with raw syscalls (prlimit64, and
 * getdents64 over /proc/self/fd) because Deno gates /proc/self behind
 * --allow-all; the server runs with --allow-ffi.
 */
import { listDir } from "../../linuxfs/dirents.ts";
import {
  AT_FDCWD,
  closeFd,
  cstr,
  O_CLOEXEC,
  O_DIRECTORY,
  O_RDONLY,
  syscall,
} from "../../sandbox/libc.ts";

const RLIMIT_NOFILE = 7;
const PROC_FD = cstr("/proc/self/fd");

/** Free descriptors below the soft limit; 0 when none can be opened; null when unknown. */
export function freeDescriptors(): number | null {
  try {
    return count();
  } catch {
    return null; // no FFI permission or no libc: unknown, never fatal to the caller
  }
}

function count(): number | null {
  const old = new Uint8Array(16);
  if (syscall("prlimit64", 0, RLIMIT_NOFILE, null, old).ret !== 0n) return null;
  const soft = new DataView(old.buffer).getBigUint64(0, true);
  if (soft > BigInt(Number.MAX_SAFE_INTEGER)) return Number.MAX_SAFE_INTEGER;
  const dir = syscall("openat", AT_FDCWD, PROC_FD, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir.ret < 0n) return dir.errno === 24 ? 0 : null; // EMFILE: not even one is free
  const fd = Number(dir.ret);
  try {
    const listed = listDir(fd, Number(soft) + 1);
    if (!listed.ok) return null;
    // The directory's own descriptor is listed too, and is closed again below.
    return Math.max(0, Number(soft) - (listed.seen - 1));
  } finally {
    closeFd(fd);
  }
}
