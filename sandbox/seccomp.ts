/**
 * Installs a seccomp filter on EVERY thread of the calling process
 * (SECCOMP_FILTER_FLAG_TSYNC) [SB-2]. The program comes from the pure builder
 * in `seccomp_bpf.ts`.
 *
 * What this file enforces: the install either returns exactly 0 or fails. With
 * TSYNC the kernel returns the TID of a thread it could not synchronise (a
 * positive number) — that is a failure too, never "mostly installed".
 * no_new_privs must already be set (stage 1 sets it; it survives execve).
 */
import { addressOf, syscall } from "./libc.ts";

const SECCOMP_SET_MODE_FILTER = 1;
const SECCOMP_FILTER_FLAG_TSYNC = 1;

export type SeccompInstallResult =
  | { ok: true }
  | { ok: false; reason: "rejected"; errno: number }
  | { ok: false; reason: "tsync_failed"; tid: number }
  | { ok: false; reason: "malformed" };

/** Installs `program` (bytes of `struct sock_filter[]`) on all threads. */
export function installSeccompAllThreads(program: Uint8Array): SeccompInstallResult {
  if (program.length === 0 || program.length % 8 !== 0 || program.length / 8 > 4096) {
    return { ok: false, reason: "malformed" };
  }
  // struct sock_fprog { unsigned short len; /* 6 bytes padding */ struct sock_filter *filter; }
  const fprog = new Uint8Array(16);
  const v = new DataView(fprog.buffer);
  v.setUint16(0, program.length / 8, true);
  v.setBigUint64(8, addressOf(program), true);
  const r = syscall("seccomp", SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, fprog);
  void program.byteLength; // keep the program alive until the kernel copied it
  if (r.ret === 0n) return { ok: true };
  if (r.ret > 0n) return { ok: false, reason: "tsync_failed", tid: Number(r.ret) };
  return { ok: false, reason: "rejected", errno: r.errno };
}
