/**
 * Landlock for the Worker [SB-1, SB-3]: a pure planner (`planLandlock`) that
 * turns an ABI version and the read-only roots into one ruleset description,
 * and an applier (`applyLandlockOnCurrentThread`) that creates the ruleset,
 * adds the rules and restricts the CALLING THREAD. Landlock is per thread:
 * the caller (stage 1) must run this on the main thread and then execve, so
 * every thread of the new image inherits the domain [SB-2].
 *
 * What this file enforces: ABI < LANDLOCK_MIN_ABI is refused (no best effort);
 * every filesystem right the ABI knows is handled and only read rights are
 * granted (nothing writable anywhere); TCP bind/connect are handled with no
 * rule (all denied); abstract unix sockets and signals are scoped to the
 * domain; a single-file rule carries only file rights (else EINVAL); after
 * restricting, the applier proves enforcement by failing to open `/`.
 * What it leaves to others: UDP, AF_UNIX pathname sockets and process
 * creation are seccomp's job (Landlock does not cover them).
 */
import { LANDLOCK_MIN_ABI } from "../runtime/limits.ts";
import {
  closeFd,
  cstr,
  EACCES,
  ENOENT,
  fstatx,
  O_CLOEXEC,
  O_DIRECTORY,
  O_PATH,
  O_RDONLY,
  S_IFCHR,
  S_IFDIR,
  S_IFMT,
  S_IFREG,
  syscall,
} from "./libc.ts";

export const FS_EXECUTE = 1 << 0;
export const FS_WRITE_FILE = 1 << 1;
export const FS_READ_FILE = 1 << 2;
export const FS_READ_DIR = 1 << 3;
export const FS_TRUNCATE = 1 << 14;
export const FS_IOCTL_DEV = 1 << 15;
export const NET_BIND_TCP = 1;
export const NET_CONNECT_TCP = 2;
export const SCOPE_ABSTRACT_UNIX_SOCKET = 1;
export const SCOPE_SIGNAL = 2;

/** Filesystem rights each ABI knows: v1 bits 0–12, v2 REFER, v3 TRUNCATE, v5 IOCTL_DEV. */
export function handledFsForAbi(abi: number): number {
  let m = (1 << 13) - 1;
  if (abi >= 2) m |= 1 << 13;
  if (abi >= 3) m |= FS_TRUNCATE;
  if (abi >= 5) m |= FS_IOCTL_DEV;
  return m;
}

/** Rights that are valid on a rule for a single (non-directory) file. */
const FILE_ONLY_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

/** Read-only, executable: the Deno binary, system libraries, the source tree. */
export const READ_EXEC = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR;
/** Read-only, not executable: the Run root. */
export const READ_ONLY = FS_READ_FILE | FS_READ_DIR;

export interface LandlockRule {
  path: string;
  access: number;
  /** A missing path is skipped (e.g. /lib64 on aarch64) instead of failing. */
  optional: boolean;
  /** The path is a character device (the runner's /dev/null); file rights only. */
  device?: boolean;
}

export interface LandlockPlan {
  abi: number;
  handledFs: number;
  handledNet: number;
  scoped: number;
  rules: LandlockRule[];
}

export interface LandlockPolicyInput {
  abi: number;
  /** The executable itself (Deno.execPath()). */
  executable: string;
  /** Minimal system library roots (dirs or single files such as /etc/ld.so.cache). */
  systemRoots: readonly string[];
  /** When not compiled: source tree entries and the Deno module cache. */
  codeRoots: readonly string[];
  /** The Run root (read-only). */
  runRoot: string;
  /**
   * `/proc/<own pid>/maps`, one file, read-only. The pid survives the stage-2
   * execve, so this is the Worker's own memory map: glibc reads
   * `/proc/self/maps` for the main thread's stack bounds, which Deno's parser
   * needs whenever it must transpile (it panics without them). Nothing else
   * under /proc is granted — `net/*` or `mountinfo` would describe the host.
   */
  ownProcMaps: string;
}

export type PlanResult = { ok: true; plan: LandlockPlan } | { ok: false; reason: string };

/** Decides the ruleset; pure, so every refusal is testable without privileges. */
export function planLandlock(input: LandlockPolicyInput): PlanResult {
  if (!Number.isInteger(input.abi) || input.abi < LANDLOCK_MIN_ABI) {
    return { ok: false, reason: `landlock ABI ${input.abi} < ${LANDLOCK_MIN_ABI}` };
  }
  const all = [input.executable, ...input.systemRoots, ...input.codeRoots, input.runRoot];
  if (all.some((p) => !p.startsWith("/") || p.includes("\0"))) {
    return { ok: false, reason: "landlock roots must be absolute" };
  }
  if (all.some((p) => p === "/")) return { ok: false, reason: "landlock root / refused" };
  if (!/^\/proc\/[1-9][0-9]*\/maps$/.test(input.ownProcMaps)) {
    return { ok: false, reason: "ownProcMaps must be /proc/<pid>/maps" };
  }
  const handledFs = handledFsForAbi(input.abi);
  const rules: LandlockRule[] = [
    { path: input.executable, access: READ_EXEC, optional: false },
    ...input.systemRoots.map((path) => ({ path, access: READ_EXEC, optional: true })),
    ...input.codeRoots.map((path) => ({ path, access: READ_EXEC, optional: false })),
    { path: input.runRoot, access: READ_ONLY, optional: false },
    { path: input.ownProcMaps, access: FS_READ_FILE, optional: false },
  ];
  return {
    ok: true,
    plan: {
      abi: input.abi,
      handledFs,
      handledNet: NET_BIND_TCP | NET_CONNECT_TCP,
      scoped: SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL,
      rules,
    },
  };
}

export type ApplyResult = { ok: true } | { ok: false; step: string; errno: number };

const RULE_PATH_BENEATH = 1;

/**
 * Creates the ruleset and restricts the calling thread. Synchronous FFI, so it
 * runs on the thread that calls it (the main JS thread in stage 1).
 */
export function applyLandlockOnCurrentThread(plan: LandlockPlan): ApplyResult {
  const attr = new Uint8Array(24); // struct landlock_ruleset_attr (ABI >= 6 size)
  const av = new DataView(attr.buffer);
  av.setBigUint64(0, BigInt(plan.handledFs), true);
  av.setBigUint64(8, BigInt(plan.handledNet), true);
  av.setBigUint64(16, BigInt(plan.scoped), true);
  const c = syscall("landlock_create_ruleset", attr, attr.length, 0);
  if (c.ret < 0n) return { ok: false, step: "landlock_create", errno: c.errno };
  const rulesetFd = Number(c.ret);
  try {
    for (const rule of plan.rules) {
      const r = addRule(rulesetFd, rule, plan.handledFs);
      if (!r.ok) return r;
    }
    const rs = syscall("landlock_restrict_self", rulesetFd, 0);
    if (rs.ret !== 0n) return { ok: false, step: "landlock_restrict", errno: rs.errno };
  } finally {
    closeFd(rulesetFd);
  }
  // A ruleset that does not deny `/` is not enforced: treat it as a failure.
  const probe = syscall("openat", -100, cstr("/"), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (probe.ret >= 0n) {
    closeFd(Number(probe.ret));
    return { ok: false, step: "landlock_not_enforced", errno: 0 };
  }
  if (probe.errno !== EACCES) {
    return { ok: false, step: "landlock_not_enforced", errno: probe.errno };
  }
  return { ok: true };
}

function addRule(rulesetFd: number, rule: LandlockRule, handledFs: number): ApplyResult {
  const o = syscall("openat", -100, cstr(rule.path), O_PATH | O_CLOEXEC, 0);
  if (o.ret < 0n) {
    if (o.errno === ENOENT && rule.optional) return { ok: true };
    return { ok: false, step: "landlock_open_root", errno: o.errno };
  }
  const fd = Number(o.ret);
  try {
    const st = fstatx(fd);
    if (!st.ok) return { ok: false, step: "landlock_stat_root", errno: st.errno };
    const kind = st.st.mode & S_IFMT;
    const isDevice = rule.device === true && kind === S_IFCHR;
    if (kind !== S_IFDIR && kind !== S_IFREG && !isDevice) {
      return { ok: false, step: "landlock_root_type", errno: 0 };
    }
    // SECURITY: the caller's rights masked to the ABI; a file rule may carry only file rights.
    let access = rule.access & handledFs;
    if (kind !== S_IFDIR) access &= FILE_ONLY_RIGHTS;
    // struct landlock_path_beneath_attr { u64 allowed_access; s32 parent_fd; } packed
    const attr = new Uint8Array(12);
    const v = new DataView(attr.buffer);
    v.setBigUint64(0, BigInt(access), true);
    v.setInt32(8, fd, true);
    const r = syscall("landlock_add_rule", rulesetFd, RULE_PATH_BENEATH, attr, 0);
    if (r.ret !== 0n) return { ok: false, step: "landlock_add_rule", errno: r.errno };
    return { ok: true };
  } finally {
    closeFd(fd);
  }
}
