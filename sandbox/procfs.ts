/**
 * Reading /proc through raw syscalls. Deno's permission layer demands
 * --allow-all for /proc paths; the Control Plane reads them (attestation,
 * pid records, doctor) through openat/read on libc instead, with a size cap.
 */
import {
  closeFd,
  cstr,
  ENOENT,
  ESRCH,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  syscall,
} from "./libc.ts";

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

/** Numeric directory entries (pids/tids) through getdents64; bounded. */
export function listNumericEntries(dir: string): number[] {
  const o = syscall("openat", -100, cstr(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (o.ret < 0n) return [];
  const fd = Number(o.ret);
  const out: number[] = [];
  try {
    const buf = new Uint8Array(32 * 1024);
    for (let round = 0; round < 64; round++) {
      const r = syscall("getdents64", fd, buf, buf.length);
      if (r.ret <= 0n) break;
      const v = new DataView(buf.buffer);
      for (let off = 0; off < Number(r.ret);) {
        const reclen = v.getUint16(off + 16, true);
        let end = off + 19;
        while (buf[end] !== 0) end++;
        const name = new TextDecoder().decode(buf.subarray(off + 19, end));
        if (/^[0-9]+$/.test(name)) out.push(Number(name));
        off += reclen;
      }
    }
  } finally {
    closeFd(fd);
  }
  return out;
}
