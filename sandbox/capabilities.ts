/**
 * Capability drop for the Worker (and the runner) [SB-7]: a process started by
 * a root-owned server must hold no capabilities before the stage-2 execve.
 *
 * What this file enforces, in order: lock the securebits (NOROOT,
 * NO_SETUID_FIXUP, KEEP_CAPS off and locked, NO_CAP_AMBIENT_RAISE) so uid 0
 * regains nothing on execve; drop every capability from the bounding set;
 * clear the ambient set; clear effective/permitted/inheritable with capset;
 * then verify all of it (capget and PR_CAPBSET_READ). Any failure is a failure.
 * The securebits need CAP_SETPCAP, so they are set first. A process that holds
 * no capabilities at all (an unprivileged server) cannot change its bounding
 * set (that needs CAP_SETPCAP) and needs not: with no_new_privs an execve can
 * gain nothing, so only the empty eff/perm/inh/ambient sets are required.
 */
import { EINVAL, syscall } from "./libc.ts";

const PR_CAPBSET_READ = 23;
const PR_CAPBSET_DROP = 24;
const PR_GET_SECUREBITS = 27;
const PR_SET_SECUREBITS = 28;
const PR_CAP_AMBIENT = 47;
const PR_CAP_AMBIENT_CLEAR_ALL = 4;
const LINUX_CAPABILITY_VERSION_3 = 0x20080522;
const CAP_SETPCAP = 8;
const CAP_PROBE_MAX = 63;

/** NOROOT|NOROOT_LOCKED|NO_SETUID_FIXUP|…_LOCKED|KEEP_CAPS_LOCKED|NO_CAP_AMBIENT_RAISE|…_LOCKED. */
export const SECUREBITS_LOCKED = 0b1110_1111;

export type CapResult = { ok: true } | { ok: false; step: string; errno: number };

interface CapSets {
  effective: bigint;
  permitted: bigint;
  inheritable: bigint;
}

/** Reads the calling thread's capability sets. */
export function readCapSets(): CapSets | null {
  const hdr = capHeader();
  const data = new Uint8Array(24); // two struct __user_cap_data_struct {eff, perm, inh}
  const r = syscall("capget", hdr, data);
  if (r.ret !== 0n) return null;
  const v = new DataView(data.buffer);
  const word = (off: number) =>
    BigInt(v.getUint32(off, true)) | (BigInt(v.getUint32(off + 12, true)) << 32n);
  return { effective: word(0), permitted: word(4), inheritable: word(8) };
}

/** The bounding set as a bitmask (caps the kernel does not know read as 0). */
export function readBoundingSet(): bigint {
  let mask = 0n;
  for (let cap = 0; cap <= CAP_PROBE_MAX; cap++) {
    const r = syscall("prctl", PR_CAPBSET_READ, cap, 0, 0, 0);
    if (r.ret === 1n) mask |= 1n << BigInt(cap);
  }
  return mask;
}

/** The uid/gid a privileged process switches to while it drops its capabilities. */
export interface TargetIdentity {
  uid: number;
  gid: number;
}

/**
 * Drops every capability of the calling process and locks the securebits.
 * With `target` (required of a root process by the callers), it also switches
 * to that unprivileged uid/gid with no supplementary groups — after the
 * bounding set is emptied (that needs CAP_SETPCAP) and before the
 * effective/permitted sets are cleared (the switch needs CAP_SETUID/SETGID).
 */
export function dropAllCapabilities(target: TargetIdentity | null = null): CapResult {
  const before = readCapSets();
  if (before === null) return { ok: false, step: "capget", errno: 0 };
  const privileged = (before.effective | before.permitted) !== 0n;
  const hasSetpcap = (before.effective & (1n << BigInt(CAP_SETPCAP))) !== 0n;
  // A privileged process that cannot empty its bounding set is refused outright.
  if (privileged && !hasSetpcap) return { ok: false, step: "no_setpcap", errno: 0 };
  if (privileged) {
    const sb = syscall("prctl", PR_SET_SECUREBITS, SECUREBITS_LOCKED, 0, 0, 0);
    if (sb.ret !== 0n) return { ok: false, step: "securebits", errno: sb.errno };
    for (let cap = 0; cap <= CAP_PROBE_MAX; cap++) {
      const d = syscall("prctl", PR_CAPBSET_DROP, cap, 0, 0, 0);
      if (d.ret !== 0n && d.errno === EINVAL) break; // past CAP_LAST_CAP
      if (d.ret !== 0n) return { ok: false, step: "capbset_drop", errno: d.errno };
    }
  }
  if (target !== null) {
    const sw = switchIdentity(target);
    if (!sw.ok) return sw;
  }
  const amb = syscall("prctl", PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (amb.ret !== 0n && amb.errno !== EINVAL) {
    return { ok: false, step: "ambient_clear", errno: amb.errno };
  }
  const set = syscall("capset", capHeader(), new Uint8Array(24));
  if (set.ret !== 0n) return { ok: false, step: "capset", errno: set.errno };

  const after = readCapSets();
  if (after === null || after.effective | after.permitted | after.inheritable) {
    return { ok: false, step: "caps_not_cleared", errno: 0 };
  }
  if (privileged && readBoundingSet() !== 0n) {
    return { ok: false, step: "capbset_not_empty", errno: 0 };
  }
  if (privileged) {
    const bits = syscall("prctl", PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (bits.ret < 0n || (Number(bits.ret) & SECUREBITS_LOCKED) !== SECUREBITS_LOCKED) {
      return { ok: false, step: "securebits_not_locked", errno: bits.errno };
    }
  }
  return { ok: true };
}

/** setgroups([]) → setresgid(g,g,g) → setresuid(u,u,u), then reads both back. */
const ID_SYMBOLS = {
  setgroups: { parameters: ["usize", "pointer"], result: "i32" },
  setresgid: { parameters: ["u32", "u32", "u32"], result: "i32" },
  setresuid: { parameters: ["u32", "u32", "u32"], result: "i32" },
} as const;
let idLib: Deno.DynamicLibrary<typeof ID_SYMBOLS> | null = null;

/**
 * Through glibc's wrappers, not raw syscalls: glibc applies a credential
 * change to EVERY thread of the process (its setxid broadcast), so no
 * runtime thread keeps root. The calling thread keeps its capabilities
 * (NO_SETUID_FIXUP) until the capset that follows; the other threads lose
 * theirs with the uid (their securebits are the defaults). A runner's stage
 * 1 lives on while its command runs, so this matters there; the Worker's
 * stage 1 execve's right after.
 */
function switchIdentity(t: TargetIdentity): CapResult {
  if (t.uid <= 0 || t.gid <= 0) return { ok: false, step: "identity_privileged", errno: 0 };
  idLib ??= Deno.dlopen("libc.so.6", ID_SYMBOLS);
  const errno = () => readCallErrno();
  if (idLib.symbols.setgroups(0n, null) !== 0) {
    return { ok: false, step: "setgroups", errno: errno() };
  }
  if (idLib.symbols.setresgid(t.gid, t.gid, t.gid) !== 0) {
    return { ok: false, step: "setresgid", errno: errno() };
  }
  if (idLib.symbols.setresuid(t.uid, t.uid, t.uid) !== 0) {
    return { ok: false, step: "setresuid", errno: errno() };
  }
  const ids = readResIds();
  if (ids === null || ids.some((v, i) => v !== (i < 3 ? t.uid : t.gid))) {
    return { ok: false, step: "identity_not_switched", errno: 0 };
  }
  return { ok: true };
}

/** errno of the last libc call on this thread. */
function readCallErrno(): number {
  const lib = Deno.dlopen("libc.so.6", { __errno_location: { parameters: [], result: "pointer" } });
  try {
    const p = lib.symbols.__errno_location();
    return p === null ? 0 : new Deno.UnsafePointerView(p).getInt32(0);
  } finally {
    lib.close();
  }
}

/** [ruid, euid, suid, rgid, egid, sgid] of the calling thread. */
export function readResIds(): number[] | null {
  const bufs = Array.from({ length: 6 }, () => new Uint8Array(4));
  if (syscall("getresuid", bufs[0], bufs[1], bufs[2]).ret !== 0n) return null;
  if (syscall("getresgid", bufs[3], bufs[4], bufs[5]).ret !== 0n) return null;
  return bufs.map((b) => new DataView(b.buffer).getUint32(0, true));
}

function capHeader(): Uint8Array {
  const hdr = new Uint8Array(8); // struct __user_cap_header_struct { u32 version; int pid; }
  new DataView(hdr.buffer).setUint32(0, LINUX_CAPABILITY_VERSION_3, true);
  return hdr;
}
