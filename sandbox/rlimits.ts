/**
 * Resource limits for the Worker [SB-1]: a pure plan from the SPEC bounds and
 * an applier that sets soft = hard on the calling process via prlimit64.
 *
 * What this file enforces: CPU seconds, address space, data segment, file size, open fds,
 * processes (threads count too) and core dumps (0) are capped before anything
 * untrusted runs; limits are only ever lowered (an existing lower hard limit
 * is kept), and a failed set is a failure, not a warning. Soft = hard except
 * for CPU: at a hard limit the kernel sends SIGKILL, so the hard CPU limit sits
 * one second above the soft one and exhaustion shows as SIGXCPU
 * (`worker_resource_limit`), not as an anonymous kill (`worker_crashed`).
 */
import {
  WORKER_RLIMIT_AS_BYTES,
  WORKER_RLIMIT_CPU_HARD_S,
  WORKER_RLIMIT_CPU_S,
  WORKER_RLIMIT_DATA_BYTES,
  WORKER_RLIMIT_FSIZE_BYTES,
  WORKER_RLIMIT_NOFILE,
  WORKER_RLIMIT_NPROC,
} from "../runtime/limits.ts";
import { syscall } from "./libc.ts";
import { listNumericEntries, readProcText } from "./procfs.ts";

export const RLIMIT_CPU = 0;
export const RLIMIT_FSIZE = 1;
export const RLIMIT_DATA = 2;
export const RLIMIT_CORE = 4;
export const RLIMIT_NPROC = 6;
export const RLIMIT_NOFILE = 7;
export const RLIMIT_AS = 9;

export interface RlimitSetting {
  resource: number;
  name: string;
  /** Soft limit. */
  value: bigint;
  /** Hard limit. @default value */
  hard?: bigint;
}

/**
 * The Worker's limits, from runtime/limits.ts. RLIMIT_NPROC counts every task
 * of the real uid, not just the Worker's: for an unprivileged operator it is
 * set to the uid's current task count plus WORKER_RLIMIT_NPROC, so a busy
 * desktop session does not starve the Worker of threads while the Worker still
 * cannot add more than that many. (Root ignores RLIMIT_NPROC; seccomp is what
 * stops process creation in every case.)
 */
export function workerRlimitPlan(uidTasks = 0): RlimitSetting[] {
  return rlimitPlan({
    cpuS: WORKER_RLIMIT_CPU_S,
    cpuHardS: WORKER_RLIMIT_CPU_HARD_S,
    asBytes: WORKER_RLIMIT_AS_BYTES,
    dataBytes: WORKER_RLIMIT_DATA_BYTES,
    fsizeBytes: WORKER_RLIMIT_FSIZE_BYTES,
    nofile: WORKER_RLIMIT_NOFILE,
    nproc: WORKER_RLIMIT_NPROC,
  }, uidTasks);
}

/** One confined process's bounds (the Worker's, a runner command's) as plain numbers. */
export interface RlimitBounds {
  cpuS: number;
  /** The hard CPU limit, above `cpuS` so exhaustion shows as SIGXCPU first. */
  cpuHardS: number;
  asBytes: number;
  dataBytes: number;
  fsizeBytes: number;
  nofile: number;
  /** Tasks the process may add above the uid's `uidTasks` at spawn. */
  nproc: number;
}

/** The one shape of a plan: the seven limits in the order they are applied, core always 0. */
export function rlimitPlan(b: RlimitBounds, uidTasks = 0): RlimitSetting[] {
  const nproc = b.nproc + Math.max(0, Math.floor(uidTasks));
  return [
    { resource: RLIMIT_CPU, name: "cpu", value: BigInt(b.cpuS), hard: BigInt(b.cpuHardS) },
    { resource: RLIMIT_AS, name: "as", value: BigInt(b.asBytes) },
    { resource: RLIMIT_DATA, name: "data", value: BigInt(b.dataBytes) },
    { resource: RLIMIT_FSIZE, name: "fsize", value: BigInt(b.fsizeBytes) },
    { resource: RLIMIT_NOFILE, name: "nofile", value: BigInt(b.nofile) },
    { resource: RLIMIT_NPROC, name: "nproc", value: BigInt(nproc) },
    { resource: RLIMIT_CORE, name: "core", value: 0n },
  ];
}

export type RlimitResult = { ok: true } | { ok: false; step: string; errno: number };

/** Applies each limit (each of soft and hard capped by the current hard limit) to the calling process. */
export function applyRlimits(plan: readonly RlimitSetting[]): RlimitResult {
  for (const s of plan) {
    const old = new Uint8Array(16);
    const g = syscall("prlimit64", 0, s.resource, null, old);
    if (g.ret !== 0n) return { ok: false, step: `rlimit_${s.name}`, errno: g.errno };
    const oldMax = new DataView(old.buffer).getBigUint64(8, true);
    const min = (a: bigint, b: bigint) => (a < b ? a : b);
    const hard = min(s.hard ?? s.value, oldMax);
    const soft = min(s.value, hard);
    const lim = new Uint8Array(16);
    const v = new DataView(lim.buffer);
    v.setBigUint64(0, soft, true);
    v.setBigUint64(8, hard, true);
    const r = syscall("prlimit64", 0, s.resource, lim, null);
    if (r.ret !== 0n) return { ok: false, step: `rlimit_${s.name}`, errno: r.errno };
  }
  return { ok: true };
}

/** Tasks (threads) currently owned by `uid` as real uid, summed over /proc. */
export function countTasksOfRealUid(uid: number): number {
  let n = 0;
  for (const pid of listNumericEntries("/proc")) {
    const status = readProcText(`/proc/${pid}/status`);
    if (status === null) continue; // exited while we looked
    const real = /\nUid:\s+(\d+)/.exec(status)?.[1];
    const threads = /\nThreads:\s+(\d+)/.exec(status)?.[1];
    if (real !== undefined && Number(real) === uid) n += Number(threads ?? 1);
  }
  return n;
}
