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
/**
 * One read buffer and one decoder for every call: the calls are synchronous and
 * a module instance lives on one thread, and the text is copied out before the
 * call returns. A fresh 64 KiB buffer per file was most of the cost of counting
 * a uid's tasks over all of /proc at every sandbox start [PF-1].
 */
let readBuf: Uint8Array<ArrayBuffer> | null = null;
const utf8 = new TextDecoder();

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
    const buf = readBuf ??= new Uint8Array(PROC_READ_MAX);
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
    return utf8.decode(buf.subarray(0, off));
  } finally {
    closeFd(fd);
  }
}

let direntBuf: Uint8Array<ArrayBuffer> | null = null;

/** Numeric directory entries (pids/tids) through getdents64; bounded. */
export function listNumericEntries(dir: string): number[] {
  const o = syscall("openat", -100, cstr(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (o.ret < 0n) return [];
  const fd = Number(o.ret);
  const out: number[] = [];
  try {
    const buf = direntBuf ??= new Uint8Array(32 * 1024);
    const v = new DataView(buf.buffer);
    for (let round = 0; round < 64; round++) {
      const r = syscall("getdents64", fd, buf, buf.length);
      if (r.ret <= 0n) break;
      for (let off = 0; off < Number(r.ret);) {
        const reclen = v.getUint16(off + 16, true);
        // The name (NUL-terminated at off + 19) read as decimal digits, without a string:
        // an entry counts only when it is one or more ASCII digits and nothing else.
        let end = off + 19;
        let n = 0;
        let digits = true;
        for (; buf[end] !== 0; end++) {
          const c = buf[end] - 0x30;
          if (c < 0 || c > 9) digits = false;
          else n = n * 10 + c;
        }
        if (digits && end > off + 19) out.push(n);
        off += reclen;
      }
    }
  } finally {
    closeFd(fd);
  }
  return out;
}
