/**
 * posix_spawn through libc for the runner's stage 1 [EX-1]: the child is
 * created by the CALLING thread (clone with CLONE_VM|CLONE_VFORK inside
 * glibc, then execve in C), so it inherits exactly that thread's
 * credentials, Landlock domain and namespaces — the main thread's, which
 * stage 1 confined — and never runs JavaScript between fork and exec.
 *
 * This file enforces nothing by itself.
 */
import { cstr, cStringVector, syscall } from "./libc.ts";

const SYMBOLS = {
  posix_spawn: {
    parameters: ["buffer", "buffer", "pointer", "pointer", "buffer", "buffer"],
    result: "i32",
  },
} as const;

let lib: Deno.DynamicLibrary<typeof SYMBOLS> | null = null;

/** Spawns `path` with exactly `argv` and `env`; returns the pid or the error number. */
export function posixSpawn(
  path: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): { ok: true; pid: number } | { ok: false; errno: number } {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS);
  const keep: Uint8Array[] = [];
  const pidBuf = new Uint8Array(4);
  const envItems = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  const rc = lib.symbols.posix_spawn(
    pidBuf,
    cstr(path),
    null,
    null,
    cStringVector(argv, keep),
    cStringVector(envItems, keep),
  );
  void keep.length;
  if (rc !== 0) return { ok: false, errno: rc };
  return { ok: true, pid: new DataView(pidBuf.buffer).getInt32(0, true) };
}

/** Blocks until `pid` ends; returns its raw wait status (-1 on error). */
export function waitFor(pid: number): number {
  const status = new Uint8Array(4);
  for (;;) {
    const r = syscall("wait4", pid, status, 0, null);
    if (r.ret === BigInt(pid)) return new DataView(status.buffer).getInt32(0, true);
    if (r.ret === -1n && r.errno === 4 /* EINTR */) continue;
    return -1;
  }
}
