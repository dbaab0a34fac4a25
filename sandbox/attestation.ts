/**
 * Control-Plane side verification of a Worker's sandbox [SB-1, SB-7]. The
 * Worker's attestation frame is a claim; this file checks the kernel's view
 * through `/proc/<pid>/status`, `/proc/<pid>/stat` AND every
 * `/proc/<pid>/task/<tid>/status`, because confinement is per thread.
 *
 * What it enforces (each a named problem, any one refuses the Run):
 *  - the frame's pid is the spawned child, Tgid == pid, PPid == the Control Plane;
 *  - the process leads its own session and process group (setsid happened);
 *  - on the process and on every thread: NoNewPrivs 1, Seccomp 2,
 *    Seccomp_filters == the expected count, CapEff/CapPrm/CapInh/CapAmb zero,
 *    and CapBnd zero when the Control Plane itself holds capabilities;
 *  - when the Control Plane is root: every real/effective/saved/fs uid and
 *    gid of every task is non-zero (the sandbox switched identity);
 *  - at least one task was inspected.
 * What it cannot see: the Landlock domain (no /proc field); that the domain
 * holds on every thread is proven by the escape-probe suite, and the code
 * path that sends the frame is only reachable after Landlock succeeded.
 */
import type { AttestationFrame } from "../runtime/protocol/ipc.ts";
import { LANDLOCK_MIN_ABI } from "../runtime/limits.ts";
import { closeFd, cstr, syscall } from "./libc.ts";
import { listNumericEntries, readProcText } from "./procfs.ts";

export interface AttestationExpectations {
  /** The pid Deno.Command reported for the child. */
  pid: number;
  /** This Control Plane's pid. */
  supervisorPid: number;
  /** Number of seccomp filters the Worker installs (exactly). */
  seccompFilters: number;
  /** Require an empty bounding set (true when the Control Plane holds capabilities). */
  requireEmptyBounding: boolean;
  /**
   * Require every uid and gid of every task to be non-zero (true when the
   * Control Plane runs as root: the sandbox must have switched) [SB-7].
   * @default false
   */
  requireUnprivileged?: boolean;
}

export interface ProcSnapshot {
  status: string;
  stat: string;
  tasks: Map<number, string>;
}

/** Parses `Key:\tvalue` lines of a /proc status file. */
export function parseStatus(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) m.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return m;
}

/** pgrp, session, nice and start time (clock ticks) from /proc/<pid>/stat. */
export function parseStat(
  text: string,
): { pgrp: number; session: number; nice: number; startTime: bigint } {
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state); pgrp is field 5, session 6, nice 19, starttime 22.
  return {
    pgrp: Number(rest[2]),
    session: Number(rest[3]),
    nice: Number(rest[16]),
    startTime: BigInt(rest[19]),
  };
}

function threadProblems(label: string, text: string, exp: AttestationExpectations): string[] {
  const s = parseStatus(text);
  const out: string[] = [];
  if (s.get("NoNewPrivs") !== "1") out.push(`${label}: NoNewPrivs ${s.get("NoNewPrivs")}`);
  if (s.get("Seccomp") !== "2") out.push(`${label}: Seccomp ${s.get("Seccomp")}`);
  if (s.get("Seccomp_filters") !== String(exp.seccompFilters)) {
    out.push(`${label}: Seccomp_filters ${s.get("Seccomp_filters")}`);
  }
  const capFields = ["CapEff", "CapPrm", "CapInh", "CapAmb"];
  if (exp.requireEmptyBounding) capFields.push("CapBnd");
  for (const f of capFields) {
    const v = s.get(f);
    if (v === undefined || !/^0+$/.test(v)) out.push(`${label}: ${f} ${v}`);
  }
  if (exp.requireUnprivileged) {
    for (const f of ["Uid", "Gid"]) {
      const ids = (s.get(f) ?? "").split(/\s+/);
      if (ids.length !== 4 || ids.some((id) => !/^[1-9][0-9]*$/.test(id))) {
        out.push(`${label}: ${f} ${s.get(f)}`);
      }
    }
  }
  return out;
}

/** Pure verdict over the frame and a /proc snapshot; an empty list means verified. */
export function attestationProblems(
  frame: AttestationFrame,
  snap: ProcSnapshot,
  exp: AttestationExpectations,
): string[] {
  const out: string[] = [];
  if (frame.pid !== exp.pid) out.push(`frame pid ${frame.pid} != child ${exp.pid}`);
  if (frame.ppid !== exp.supervisorPid) out.push(`frame ppid ${frame.ppid}`);
  // Self-reported (Landlock has no /proc field), but a Worker claiming less is refused.
  if (frame.landlock_abi < LANDLOCK_MIN_ABI) out.push(`frame landlock_abi ${frame.landlock_abi}`);
  const s = parseStatus(snap.status);
  if (s.get("Tgid") !== String(exp.pid)) out.push(`Tgid ${s.get("Tgid")}`);
  if (s.get("PPid") !== String(exp.supervisorPid)) out.push(`PPid ${s.get("PPid")}`);
  const st = parseStat(snap.stat);
  if (st.pgrp !== exp.pid) out.push(`pgrp ${st.pgrp}`);
  if (st.session !== exp.pid) out.push(`session ${st.session}`);
  out.push(...threadProblems("process", snap.status, exp));
  if (snap.tasks.size === 0) out.push("no tasks inspected");
  for (const [tid, text] of snap.tasks) out.push(...threadProblems(`task ${tid}`, text, exp));
  return out;
}

/** Reads the /proc snapshot of `pid` (null when the process is gone). */
export function readProcSnapshot(pid: number): ProcSnapshot | null {
  const status = readProcText(`/proc/${pid}/status`);
  const stat = readProcText(`/proc/${pid}/stat`);
  if (status === null || stat === null) return null;
  const tasks = new Map<number, string>();
  for (const tid of listNumericEntries(`/proc/${pid}/task`)) {
    const t = readProcText(`/proc/${pid}/task/${tid}/status`);
    if (t !== null) tasks.set(tid, t);
  }
  return { status, stat, tasks };
}

/** The start time of `pid` in clock ticks, or null when it does not exist. */
export function processStartTime(pid: number): bigint | null {
  const stat = readProcText(`/proc/${pid}/stat`);
  return stat === null ? null : parseStat(stat).startTime;
}

/**
 * A pidfd for `pid` and the start time it was verified against, or null (gone, or not
 * openable). The pidfd is bound to one process; re-reading the start time after opening it proves
 * it names the process whose start time was read first, not a recycled pid. The caller owns the
 * descriptor.
 */
export function pinProcess(pid: number): { pidfd: number; startTime: bigint } | null {
  const startTime = processStartTime(pid);
  const pfd = syscall("pidfd_open", pid, 0);
  if (pfd.ret < 0n || startTime === null || processStartTime(pid) !== startTime) {
    if (pfd.ret >= 0n) closeFd(Number(pfd.ret));
    return null;
  }
  return { pidfd: Number(pfd.ret), startTime };
}

/** What each open fd of `pid` points to (`/proc/<pid>/fd/*` link targets). */
export function openFdTargets(pid: number): Map<number, string> {
  const out = new Map<number, string>();
  for (const fd of listNumericEntries(`/proc/${pid}/fd`)) {
    const buf = new Uint8Array(4096);
    const r = syscall("readlinkat", -100, cstr(`/proc/${pid}/fd/${fd}`), buf, buf.length);
    if (r.ret > 0n) out.set(fd, new TextDecoder().decode(buf.subarray(0, Number(r.ret))));
  }
  return out;
}

/**
 * Seccomp filters this process already runs under (a container runtime or a
 * service manager may install some); a Worker inherits them and adds one.
 */
export function selfSeccompFilters(): number {
  const n = Number(parseStatus(readProcText("/proc/self/status") ?? "").get("Seccomp_filters"));
  if (!Number.isInteger(n) || n < 0) {
    throw new Error("Seccomp_filters missing from /proc/self/status");
  }
  return n;
}

/** True when this process runs as uid 0 (then sandboxes must have switched uid). */
export function selfIsRoot(): boolean {
  return Number(syscall("getuid").ret) === 0;
}

/** True when this process holds any capability (then Workers must have CapBnd zero). */
export function selfHoldsCapabilities(): boolean {
  const s = parseStatus(readProcText("/proc/self/status") ?? "");
  return ["CapEff", "CapPrm"].some((f) => !/^0+$/.test(s.get(f) ?? "0"));
}
