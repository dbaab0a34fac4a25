/**
 * Pure builder of the Worker's classic-BPF seccomp program [SB-3]. No I/O:
 * `buildWorkerFilter({ arch, selfPid })` returns the bytes of a
 * `struct sock_filter[]` that `seccomp.ts` installs.
 *
 * What the program enforces, in order:
 *  1. the architecture word must be this build's AUDIT_ARCH (else kill the
 *     process: a foreign-ABI syscall number means something else entirely);
 *  2. on x86_64, any x32 syscall number (bit 30 set) is EPERM;
 *  3. syscall numbers above the highest known one fail closed with ENOSYS;
 *  4. `clone` only with CLONE_THREAD and no namespace flag — a clone without
 *     CLONE_THREAD (e.g. CLONE_VM|CLONE_VFORK) creates a process;
 *  5. `clone3` is ENOSYS (its flags sit behind a pointer BPF cannot read; glibc
 *     and Rust then fall back to `clone`, which step 4 inspects);
 *  6. `prctl` only for a short list of harmless options;
 *  7. `prlimit64` only on the calling process; `kill`/`tgkill`/`rt_*sigqueueinfo`
 *     only aimed at its own pid (cross-process signals are EPERM); scheduling
 *     and I/O-priority setters only on itself (no renicing of other processes,
 *     e.g. the Control Plane, and never PRIO_PGRP/PRIO_USER);
 *  8. `mmap` of shared anonymous memory (MAP_ANONYMOUS with MAP_SHARED or
 *     MAP_SHARED_VALIDATE) is EPERM: RLIMIT_DATA does not count it, so it
 *     would be an unbounded memory channel (3 GiB committed in an attack
 *     pass); Deno needs only private mappings [SB-1];
 *  9. every syscall in `DENY_EPERM` is EPERM;
 * 10. everything else is allowed.
 *
 * Why allow-by-default: Deno, V8 and tokio use a wide, version-dependent set
 * of syscalls; a deny-by-default list would break on a toolchain bump in ways
 * tests may miss. The filesystem and TCP are confined by Landlock, privileges
 * by the empty capability sets and no_new_privs [SB-7]; this filter removes
 * what those leave open (process creation, sockets incl. UDP and AF_UNIX,
 * io_uring, cross-process access, namespaces, metadata changes, sync,
 * persistent IPC, kernel surface), and step 3 makes syscalls added to future
 * kernels fail closed.
 */
import {
  type Arch,
  ARG_CHECKED,
  AUDIT_ARCH,
  DENY_EPERM,
  HIGHEST_KNOWN_NR,
  nr,
  X32_SYSCALL_BIT,
} from "./seccomp_tables.ts";

// BPF opcodes (linux/filter.h, linux/bpf_common.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGT_K = 0x25;
const BPF_JSET_K = 0x45;
const BPF_RET_K = 0x06;

// seccomp return actions (linux/seccomp.h).
export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;

// struct seccomp_data offsets.
export const OFF_NR = 0;
export const OFF_ARCH = 4;
export const argLow = (i: number) => 16 + 8 * i; // little-endian: low word first

const EPERM = 1;
const ENOSYS = 38;

const CLONE_THREAD = 0x00010000;
/** CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
  0x10000000 | 0x20000000 | 0x40000000;

/** prctl options a confined Worker may use: naming threads and read-only queries. */
export const PRCTL_ALLOWED: readonly number[] = [
  2, // PR_GET_PDEATHSIG
  3, // PR_GET_DUMPABLE
  15, // PR_SET_NAME (thread names)
  16, // PR_GET_NAME
  21, // PR_GET_SECCOMP
  23, // PR_CAPBSET_READ
  27, // PR_GET_SECUREBITS
  30, // PR_GET_TIMERSLACK
  38, // PR_SET_NO_NEW_PRIVS (can only tighten)
  39, // PR_GET_NO_NEW_PRIVS
  42, // PR_GET_THP_DISABLE
  0x53564d41, // PR_SET_VMA (naming anonymous mappings)
];

/** One `struct sock_filter` instruction. */
export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

export interface WorkerFilterOptions {
  arch: Arch;
  /** The Worker's own pid: the only target of signals and prlimit. */
  selfPid: number;
}

// Instruction builders, shared with the runner's filter (runner_policy.ts).
export const ld = (off: number): Insn => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: off });
export const ret = (k: number): Insn => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
export const jeq = (k: number, jt: number, jf: number): Insn => ({ code: BPF_JEQ_K, jt, jf, k });
export const jgt = (k: number, jt: number, jf: number): Insn => ({ code: BPF_JGT_K, jt, jf, k });
export const jset = (k: number, jt: number, jf: number): Insn => ({
  code: BPF_JSET_K,
  jt,
  jf,
  k,
});
export const errno = (e: number) => ret(SECCOMP_RET_ERRNO | e);
export const ALLOW = ret(SECCOMP_RET_ALLOW);

/** `if nr == n then <block> else skip`; every block ends in a return, so `A` keeps nr. */
export function guarded(n: number, block: Insn[]): Insn[] {
  if (block.length > 255) throw new Error("seccomp block too long for a BPF jump");
  return [jeq(n, 0, block.length), ...block];
}

/** Allow when the low word of argument `i` equals one of `values`, else EPERM. */
export function argOneOf(i: number, values: readonly number[]): Insn[] {
  const out: Insn[] = [ld(argLow(i))];
  for (const v of values) out.push(jeq(v >>> 0, 0, 1), ALLOW);
  out.push(errno(EPERM));
  return out;
}

const PRIO_PROCESS = 0;
const IOPRIO_WHO_PROCESS = 1;

/** Allow when arg0 == `which` and arg1 is 0 or `selfPid`, else EPERM. */
export function whichWho(which: number, selfPid: number): Insn[] {
  return [ld(argLow(0)), jeq(which, 1, 0), errno(EPERM), ...argOneOf(1, [0, selfPid])];
}

const MAP_SHARED = 0x01; // also the low bit of MAP_SHARED_VALIDATE (0x03)
const MAP_ANONYMOUS = 0x20;

/** mmap(…, flags = arg 3): EPERM when anonymous AND shared, else allow. */
export function sharedAnonymousMmapBlock(): Insn[] {
  return [
    ld(argLow(3)),
    jset(MAP_ANONYMOUS, 0, 2),
    jset(MAP_SHARED, 0, 1),
    errno(EPERM),
    ALLOW,
  ];
}

/** The instruction list (exported for table-driven tests and an interpreter). */
export function workerFilterProgram(opts: WorkerFilterOptions): Insn[] {
  const { arch, selfPid } = opts;
  if (!Number.isInteger(selfPid) || selfPid < 2) throw new Error("selfPid must be a real pid");
  const p: Insn[] = [
    ld(OFF_ARCH),
    jeq(AUDIT_ARCH[arch], 1, 0),
    ret(SECCOMP_RET_KILL_PROCESS),
    ld(OFF_NR),
  ];
  if (arch === "x86_64") p.push(jset(X32_SYSCALL_BIT, 0, 1), errno(EPERM));
  p.push(jgt(HIGHEST_KNOWN_NR, 0, 1), errno(ENOSYS));

  const cloneBlock = [
    ld(argLow(0)),
    jset(CLONE_NAMESPACE_FLAGS, 0, 1),
    errno(EPERM),
    jset(CLONE_THREAD, 1, 0),
    errno(EPERM),
    ALLOW,
  ];
  p.push(...guarded(nr(ARG_CHECKED.clone, arch), cloneBlock));
  p.push(...guarded(nr(ARG_CHECKED.clone3, arch), [errno(ENOSYS)]));
  p.push(...guarded(nr(ARG_CHECKED.mmap, arch), sharedAnonymousMmapBlock()));
  p.push(...guarded(nr(ARG_CHECKED.prctl, arch), argOneOf(0, PRCTL_ALLOWED)));
  p.push(...guarded(nr(ARG_CHECKED.prlimit64, arch), argOneOf(0, [0, selfPid])));
  for (const name of ["kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"]) {
    p.push(...guarded(nr(ARG_CHECKED[name], arch), argOneOf(0, [selfPid])));
  }
  for (
    const name of ["sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr"]
  ) {
    p.push(...guarded(nr(ARG_CHECKED[name], arch), argOneOf(0, [0, selfPid])));
  }
  // setpriority(which, who) / ioprio_set(which, who): only "this process".
  p.push(...guarded(nr(ARG_CHECKED.setpriority, arch), whichWho(PRIO_PROCESS, selfPid)));
  p.push(...guarded(nr(ARG_CHECKED.ioprio_set, arch), whichWho(IOPRIO_WHO_PROCESS, selfPid)));
  for (const group of Object.values(DENY_EPERM)) {
    for (const pair of Object.values(group)) {
      const n = nr(pair, arch);
      if (n >= 0) p.push(jeq(n, 0, 1), errno(EPERM));
    }
  }
  p.push(ALLOW);
  if (p.length > 4096) throw new Error("seccomp program exceeds BPF_MAXINSNS");
  return p;
}

/** Serialises instructions as `struct sock_filter[]` (8 bytes each, little-endian). */
export function encodeProgram(prog: readonly Insn[]): Uint8Array {
  const out = new Uint8Array(prog.length * 8);
  const v = new DataView(out.buffer);
  prog.forEach((ins, i) => {
    v.setUint16(i * 8, ins.code, true);
    v.setUint8(i * 8 + 2, ins.jt);
    v.setUint8(i * 8 + 3, ins.jf);
    v.setUint32(i * 8 + 4, ins.k >>> 0, true);
  });
  return out;
}

/** The Worker filter as installable bytes. */
export function buildWorkerFilter(opts: WorkerFilterOptions): Uint8Array {
  return encodeProgram(workerFilterProgram(opts));
}

/** The syscall data a filter sees, for `evaluate()`. */
export interface SeccompData {
  arch: number;
  nr: number;
  args?: number[];
}

/**
 * A tiny interpreter of the subset of classic BPF this builder emits, so unit
 * tests can assert the verdict for each syscall without installing anything.
 */
export function evaluate(prog: readonly Insn[], data: SeccompData): number {
  let a = 0;
  for (let pc = 0, steps = 0; pc < prog.length && steps < 10_000; steps++) {
    const ins = prog[pc];
    switch (ins.code) {
      case BPF_LD_W_ABS:
        a = ins.k === OFF_ARCH ? data.arch : ins.k === OFF_NR ? data.nr : lowArg(data, ins.k);
        pc++;
        break;
      case BPF_JEQ_K:
        pc += 1 + ((a >>> 0) === (ins.k >>> 0) ? ins.jt : ins.jf);
        break;
      case BPF_JGT_K:
        pc += 1 + ((a >>> 0) > (ins.k >>> 0) ? ins.jt : ins.jf);
        break;
      case BPF_JSET_K:
        pc += 1 + (((a & ins.k) >>> 0) !== 0 ? ins.jt : ins.jf);
        break;
      case BPF_RET_K:
        return ins.k >>> 0;
      default:
        throw new Error(`unknown opcode ${ins.code}`);
    }
  }
  throw new Error("program fell off the end");
}

function lowArg(data: SeccompData, off: number): number {
  const i = (off - 16) / 8;
  if (!Number.isInteger(i) || i < 0 || i > 5) throw new Error(`bad load offset ${off}`);
  return (data.args?.[i] ?? 0) >>> 0;
}
