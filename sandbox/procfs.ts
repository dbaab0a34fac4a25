/**
 * Reading /proc through raw syscalls. Deno's permission layer demands
 * --allow-all for /proc paths; the Control Plane reads them (attestation,
 * pid records, doctor) through openat/read on libc instead, with a size cap.
 */
import { closeFd, cstr, ENOENT, ESRCH, O_CLOEXEC, O_NOFOLLOW, O_RDONLY, syscall } from "./libc.ts";

const PROC_READ_MAX = 64 * 1024;

/** Reads a /proc (or /sys) text file; returns null when it does not exist. */
export function readProcText(path: string): string | null {
  if (!path.startsWith("/proc/") && !path.startsWith("/sys/")) {
    throw new Error("readProcText reads /proc and /sys only");
  }
  const o = syscall("openat", -100, cstr(path), O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  if (o.ret < 0n) {
    if (o.errno === ENOENT || o.errno === ESRCH) return null;
    throw new Error(`open ${path}: errno ${o.errno}`);
  }
  const fd = Number(o.ret);
  try {
    const buf = new Uint8Array(PROC_READ_MAX);
    let off = 0;
    for (;;) {
      const r = syscall("read", fd, buf.subarray(off), buf.length - off);
      if (r.ret < 0n) {
        if (r.errno === ESRCH) return null;
        throw new Error(`read ${path}: errno ${r.errno}`);
      }
      if (r.ret === 0n) break;
      off += Number(r.ret);
      if (off >= buf.length) throw new Error(`${path} exceeds ${PROC_READ_MAX} bytes`);
    }
    return new TextDecoder().decode(buf.subarray(0, off));
  } finally {
    closeFd(fd);
  }
}
