/**
 * The runner's own confinement policy [EX-1, EX-2]: pure planners for its
 * rlimits, its Landlock ruleset and its seccomp program. The mechanisms
 * (prlimit, landlock_*, seccomp) are the Worker's (`rlimits.ts`,
 * `landlock.ts`, `seccomp.ts`); only the policy differs, because the runner
 * must fork and exec real programs.
 *
 * What this file enforces:
 *  - rlimits [EX-2]: CPU 60 s (hard 61 s, so SIGXCPU comes first), data 4 GiB,
 *    address space 64 GiB (V8/WebAssembly reservations), NPROC 128 above the
 *    sandbox uid's tasks at spawn, NOFILE 256, FSIZE 64 MiB, CORE 0;
 *  - Landlock: read+execute on /usr, /bin, /sbin, /lib*, the executable and
 *    (not compiled) the product's source and module cache; read on /etc and
 *    /proc; /dev/null read+write, /dev/urandom and /dev/random read; full
 *    read+write (no device nodes, no ioctl) on the scratch copy and the
 *    private tmp; nothing else (the home's data/, .runtime/, backups/ are
 *    invisible); TCP bind/connect denied; abstract unix sockets and signals
 *    scoped to the runner's own domain. /dev/zero is deliberately absent: a
 *    shared mapping of it is shared anonymous memory.
 *  - seccomp: arch check, x32 EPERM, unknown numbers ENOSYS; fork/vfork/
 *    execve allowed, `clone` without namespace flags, `clone3` ENOSYS (its
 *    flags are behind a pointer); sockets only AF_UNIX; shared anonymous
 *    mmap and memfd EPERM (memory RLIMIT_DATA does not count); prlimit,
 *    scheduling and I/O-priority setters only on the caller; ptrace and every
 *    cross-process access, mounts and namespaces, bpf, perf_event_open, keys,
 *    kexec/modules/reboot/swap, userfaultfd, io_uring, SysV/POSIX IPC,
 *    inotify/fanotify and privileged host calls EPERM.
 */
import {
  COMMAND_RLIMIT_AS_BYTES,
  COMMAND_RLIMIT_CPU_S,
  COMMAND_RLIMIT_DATA_BYTES,
  COMMAND_RLIMIT_FSIZE_BYTES,
  COMMAND_RLIMIT_NOFILE,
  COMMAND_RLIMIT_NPROC,
} from "../runtime/limits.ts";
import {
  FS_EXECUTE,
  FS_READ_DIR,
  FS_READ_FILE,
  FS_TRUNCATE,
  FS_WRITE_FILE,
  handledFsForAbi,
  type LandlockPlan,
  type LandlockRule,
  NET_BIND_TCP,
  NET_CONNECT_TCP,
  READ_EXEC,
  READ_ONLY,
  SCOPE_ABSTRACT_UNIX_SOCKET,
  SCOPE_SIGNAL,
} from "./landlock.ts";
import { LANDLOCK_MIN_ABI } from "../runtime/limits.ts";
import {
  ALLOW,
  argLow,
  argOneOf,
  CLONE_NAMESPACE_FLAGS,
  encodeProgram,
  errno,
  guarded,
  type Insn,
  jeq,
  jgt,
  jset,
  ld,
  OFF_ARCH,
  OFF_NR,
  ret,
  SECCOMP_RET_KILL_PROCESS,
  sharedAnonymousMmapBlock,
} from "./seccomp_bpf.ts";
import {
  type Arch,
  ARG_CHECKED,
  AUDIT_ARCH,
  DENY_EPERM,
  HIGHEST_KNOWN_NR,
  nr,
  X32_SYSCALL_BIT,
} from "./seccomp_tables.ts";
import { rlimitPlan, type RlimitSetting } from "./rlimits.ts";

/** The runner's limits; NPROC is relative to the sandbox uid's tasks at spawn. */
export function runnerRlimitPlan(uidTasks = 0): RlimitSetting[] {
  return rlimitPlan({
    cpuS: COMMAND_RLIMIT_CPU_S,
    cpuHardS: COMMAND_RLIMIT_CPU_S + 1,
    asBytes: COMMAND_RLIMIT_AS_BYTES,
    dataBytes: COMMAND_RLIMIT_DATA_BYTES,
    fsizeBytes: COMMAND_RLIMIT_FSIZE_BYTES,
    nofile: COMMAND_RLIMIT_NOFILE,
    nproc: COMMAND_RLIMIT_NPROC,
  }, uidTasks);
}

// Landlock filesystem rights beyond the read ones (linux/landlock.h).
const FS_REMOVE_DIR = 1 << 4;
const FS_REMOVE_FILE = 1 << 5;
const FS_MAKE_DIR = 1 << 7;
const FS_MAKE_REG = 1 << 8;
const FS_MAKE_SOCK = 1 << 9;
const FS_MAKE_FIFO = 1 << 10;
const FS_MAKE_SYM = 1 << 12;
const FS_REFER = 1 << 13;

/** Full use of a tree, without device nodes or device ioctls. */
export const READ_WRITE_TREE = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR |
  FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG | FS_MAKE_SOCK | FS_MAKE_FIFO |
  FS_MAKE_SYM | FS_REFER | FS_TRUNCATE;

/** System trees a command may read and execute. */
export const RUNNER_SYSTEM_EXEC_ROOTS = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
];

export interface RunnerLandlockInput {
  abi: number;
  executable: string;
  /** Not compiled: the product's source entries and module cache (read+execute). */
  codeRoots: readonly string[];
  /** The scratch copy as the runner sees it (read-write). */
  scratch: string;
  /** The private tmp as the runner sees it (read-write). */
  tmp: string;
  /** runtime-compile: the scratch is source, read-only (no execute). @default false */
  readOnlyScratch?: boolean;
}

export type RunnerPlanResult = { ok: true; plan: LandlockPlan } | { ok: false; reason: string };

/** The runner's ruleset; pure. */
export function planRunnerLandlock(input: RunnerLandlockInput): RunnerPlanResult {
  if (!Number.isInteger(input.abi) || input.abi < LANDLOCK_MIN_ABI) {
    return { ok: false, reason: `landlock ABI ${input.abi} < ${LANDLOCK_MIN_ABI}` };
  }
  const writable = [input.scratch, input.tmp];
  const all = [input.executable, ...input.codeRoots, ...writable];
  if (all.some((p) => !p.startsWith("/") || p.includes("\0"))) {
    return { ok: false, reason: "landlock roots must be absolute" };
  }
  // The writable trees must be real subtrees, never a system root or "/".
  const forbidden = ["/", "/usr", "/bin", "/sbin", "/etc", "/proc", "/dev", "/lib", "/lib64"];
  if (writable.some((p) => forbidden.includes(p.replace(/\/+$/, "") || "/"))) {
    return { ok: false, reason: "writable root refused" };
  }
  const rules: LandlockRule[] = [
    { path: input.executable, access: READ_EXEC, optional: false },
    ...RUNNER_SYSTEM_EXEC_ROOTS.map((path) => ({ path, access: READ_EXEC, optional: true })),
    { path: "/etc", access: READ_ONLY, optional: true },
    // Programs read /proc/self/* (Deno: the main thread's stack bounds in
    // /proc/self/maps). Landlock's ptrace scoping keeps the entries that need
    // ptrace access (maps, environ, fd, mem) of processes outside the domain
    // closed; see docs/runner.md for what stays visible.
    { path: "/proc", access: READ_ONLY, optional: false },
    {
      path: "/dev/null",
      access: FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE,
      optional: false,
      device: true,
    },
    { path: "/dev/urandom", access: FS_READ_FILE, optional: true, device: true },
    { path: "/dev/random", access: FS_READ_FILE, optional: true, device: true },
    ...input.codeRoots.map((path) => ({ path, access: READ_EXEC, optional: false })),
    {
      path: input.scratch,
      access: input.readOnlyScratch ? READ_ONLY : READ_WRITE_TREE,
      optional: false,
    },
    { path: input.tmp, access: READ_WRITE_TREE, optional: false },
  ];
  return {
    ok: true,
    plan: {
      abi: input.abi,
      handledFs: handledFsForAbi(input.abi),
      handledNet: NET_BIND_TCP | NET_CONNECT_TCP,
      scoped: SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL,
      rules,
    },
  };
}

const EPERM = 1;
const ENOSYS = 38;
const AF_UNIX = 1;
const PRIO_PROCESS = 0;
const IOPRIO_WHO_PROCESS = 1;

/** Deny-table groups the runner keeps from the Worker's table, and the entries it drops. */
const RUNNER_DENY_GROUPS = [
  "crossProcess",
  "namespaces",
  "kernelSurface",
  "persistentIpc",
  "privileged",
];
/** Process control a shell and its jobs need; Landlock scopes signals to the domain. */
const RUNNER_ALLOWED_FROM_DENY = new Set([
  "setpgid",
  "setsid",
  "pidfd_open",
  "pidfd_send_signal",
  "tkill",
]);

/** The runner's filter as an instruction list (exported for the table test). */
export function runnerFilterProgram(arch: Arch): Insn[] {
  const p: Insn[] = [
    ld(OFF_ARCH),
    jeq(AUDIT_ARCH[arch], 1, 0),
    ret(SECCOMP_RET_KILL_PROCESS),
    ld(OFF_NR),
  ];
  if (arch === "x86_64") p.push(jset(X32_SYSCALL_BIT, 0, 1), errno(EPERM));
  p.push(jgt(HIGHEST_KNOWN_NR, 0, 1), errno(ENOSYS));
  // Processes yes, namespaces no (the runner's own PID namespace is made before).
  p.push(...guarded(nr(ARG_CHECKED.clone, arch), [
    ld(argLow(0)),
    jset(CLONE_NAMESPACE_FLAGS, 0, 1),
    errno(EPERM),
    ALLOW,
  ]));
  p.push(...guarded(nr(ARG_CHECKED.clone3, arch), [errno(ENOSYS)]));
  p.push(...guarded(nr(ARG_CHECKED.mmap, arch), sharedAnonymousMmapBlock()));
  const net = DENY_EPERM.network;
  p.push(...guarded(nr(net.socket, arch), argOneOf(0, [AF_UNIX])));
  p.push(...guarded(nr(net.socketpair, arch), argOneOf(0, [AF_UNIX])));
  p.push(...guarded(nr(ARG_CHECKED.prlimit64, arch), argOneOf(0, [0])));
  for (
    const name of ["sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr"]
  ) {
    p.push(...guarded(nr(ARG_CHECKED[name], arch), argOneOf(0, [0])));
  }
  const onlySelf = (which: number) => [
    ld(argLow(0)),
    jeq(which, 1, 0),
    errno(EPERM),
    ...argOneOf(1, [0]),
  ];
  p.push(...guarded(nr(ARG_CHECKED.setpriority, arch), onlySelf(PRIO_PROCESS)));
  p.push(...guarded(nr(ARG_CHECKED.ioprio_set, arch), onlySelf(IOPRIO_WHO_PROCESS)));
  for (const group of RUNNER_DENY_GROUPS) {
    for (const [name, pair] of Object.entries(DENY_EPERM[group])) {
      if (RUNNER_ALLOWED_FROM_DENY.has(name)) continue;
      const n = nr(pair, arch);
      if (n >= 0) p.push(jeq(n, 0, 1), errno(EPERM));
    }
  }
  p.push(ALLOW);
  if (p.length > 4096) throw new Error("seccomp program exceeds BPF_MAXINSNS");
  return p;
}

/** The runner filter as installable bytes. */
export function buildRunnerFilter(arch: Arch): Uint8Array {
  return encodeProgram(runnerFilterProgram(arch));
}
