/**
 * CPU priority of sandboxed work [PF-2]: Workers, runners and the file-tool
 * processes run SANDBOX_NICE_INCREMENT nice steps below the server (nice 10
 * under a server at 0; at most 19), so on a busy host the Control Plane's
 * event loop (the UI, the API, every stream) is scheduled first and the
 * Agents' work takes what is left. Relative to the server, never absolute: a
 * server started at a low priority never hands its sandboxes a higher one.
 *
 * Nice is per thread on Linux. The server starts a child through coreutils'
 * nice (`spawnBelow`), so even its start-up (two Deno start-ups for a Worker)
 * runs below the server from its first instruction (where nice cannot be
 * used, it lowers the child right after the spawn: `lowerChild`); the child
 * then sets the same value again from its side —
 * stage 1 on its own thread before it execve's or spawns
 * (`lowerThisThreadBelowParent`), a file-tool process on every thread
 * (`lowerEveryThreadBelowParent`) — so no thread created before the server's
 * call escapes it. Both sides compute the value
 * from the server's own nice, so applying it twice changes nothing.
 *
 * Autogroups: where the kernel groups tasks by session (CONFIG_SCHED_AUTOGROUP,
 * `kernel.sched_autogroup_enabled`, on by default in most distributions), a
 * nice value orders threads only inside their session's group; the groups
 * share the CPUs by their own weight. A Worker and a runner call setsid, so
 * each would be a group of nice 0 beside the server's: measured on 2 cores
 * with 4 Runs, the niced Workers still held both cores while the server's loop
 * waited up to 46 ms runnable (perf sched). So a sandbox that starts a session
 * also sets its group's nice (`/proc/self/autogroup`) SANDBOX_NICE_INCREMENT
 * below the server's group (`lowerOwnAutogroupBelowParent`, the Worker's stage
 * 1); a runner's stage 2, which starts one more session under Landlock, has
 * its group set by the server before it is released (`lowerAutogroupOf`).
 * A server in no autogroup (the root task group: started by an init without
 * a session of its own, where `/proc/<pid>/autogroup` is empty — CI runs the
 * suite so) has its threads compete with the groups one by one, so the
 * sandbox's group goes SANDBOX_NICE_INCREMENT below the server's thread nice.
 * Without autogroups the file does not exist and the thread nice values are
 * all there is. Nothing here throws: an unreadable or unexpected file is
 * treated as no autogroups.
 *
 * What this file enforces: nothing beyond that; raising a thread's nice value
 * needs no privilege, so a failure is reported, never worked around. An
 * autogroup write is best effort: the kernel limits writes by a process
 * without CAP_SYS_ADMIN to one per 100 ms system-wide (EAGAIN, waited out up
 * to AUTOGROUP_RATE_WAIT_MS), and an unprivileged server cannot write the
 * group of a non-dumpable sandbox; the sandbox then runs at its thread nice.
 */
import { closeFd, cstr, EAGAIN, O_CLOEXEC, O_NOFOLLOW, O_WRONLY, syscall } from "./libc.ts";
import { listNumericEntries, readProcText } from "./procfs.ts";
import { parseStat } from "./attestation.ts";

/** The shape of confine.ts's step results. */
type StepResult = { ok: true } | { ok: false; step: string; errno: number };

const PRIO_PROCESS = 0;
const NICE_MAX = 19;

/** setpriority(PRIO_PROCESS, tid, nice): `tid` 0 is the calling thread on Linux. */
function setNice(tid: number, nice: number): StepResult {
  const r = syscall("setpriority", PRIO_PROCESS, tid, nice);
  return r.ret === 0n ? { ok: true } : { ok: false, step: "nice", errno: r.errno };
}

/** The nice value `increment` steps below `current`, within Linux's range. */
export function lowered(current: number, increment: number): number {
  return Math.min(NICE_MAX, current + increment);
}

/** The nice value `increment` steps below this process's parent (the server), or null. */
function belowParent(increment: number): number | null {
  const parent = niceOf(Number(syscall("getppid").ret));
  return parent === null ? null : lowered(parent, increment);
}

/** Sets the calling thread (and so whatever it execve's or spawns next) `increment` below the parent. */
export function lowerThisThreadBelowParent(increment: number): StepResult {
  const target = belowParent(increment);
  return target === null ? { ok: false, step: "nice", errno: 0 } : setNice(0, target);
}

/** Sets every thread of this process `increment` below the parent; later threads inherit it. */
export function lowerEveryThreadBelowParent(increment: number): StepResult {
  const target = belowParent(increment);
  if (target === null) return { ok: false, step: "nice", errno: 0 };
  let result: StepResult = { ok: true };
  const pid = Number(syscall("getpid").ret);
  for (const tid of listNumericEntries(`/proc/${pid}/task`)) {
    const r = setNice(tid, target);
    // A thread that ended meanwhile is not an error.
    if (!r.ok && r.errno !== 3 /* ESRCH */) result = r;
  }
  return result;
}

/** coreutils' nice: starts a program `-n N` nice steps below its own (inherited) nice. */
export const NICE_PROGRAM = "/usr/bin/nice";

/** A program and its arguments, as Deno.Command takes them. */
export interface ProgramArgs {
  executable: string;
  args: string[];
}

let niceProgramVerdict: boolean | null = null;

/** Root-owned and writable by no one else (a group- or world-writable entry could be replaced). */
function rootOwnedNotShared(info: Deno.FileInfo): boolean {
  return info.uid === 0 && info.mode !== null && (info.mode & 0o022) === 0;
}

/**
 * NICE_PROGRAM is a root-owned regular file (not a link) in root-owned directories that only root
 * may write, like the libc this process already trusts. Checked once per process.
 */
export function niceProgramTrusted(): boolean {
  if (niceProgramVerdict !== null) return niceProgramVerdict;
  try {
    const file = Deno.lstatSync(NICE_PROGRAM);
    const dirs = ["/", "/usr", "/usr/bin"].map((d) => Deno.lstatSync(d));
    niceProgramVerdict = file.isFile && rootOwnedNotShared(file) &&
      dirs.every((d) => d.isDirectory && rootOwnedNotShared(d));
  } catch {
    niceProgramVerdict = false;
  }
  return niceProgramVerdict;
}

/**
 * How to start `cmd` `increment` nice steps below the calling thread from the child's first
 * instruction [PF-2]. A spawned child runs before Deno.Command returns (posix_spawn returns after
 * the execve), so lowering it after the spawn comes late: until the server's thread gets the CPU
 * back, the child's start-up runs at the server's own priority and competes with its loop
 * (measured on 2 cores: 1–10 ms per spawn while the loop waited runnable). Through NICE_PROGRAM the
 * child inherits the calling thread's nice, adds `increment` (capped at 19, as `lowered`) and
 * execve's `cmd` in the same process: same pid, same parent, same descriptors. Unchanged when
 * NICE_PROGRAM cannot be trusted or `cmd.executable` does not exist (its spawn then fails as it
 * always did).
 */
export function startedBelow(cmd: ProgramArgs, increment: number): ProgramArgs {
  if (!niceProgramTrusted()) return cmd;
  try {
    if (!Deno.statSync(cmd.executable).isFile) return cmd;
  } catch {
    return cmd;
  }
  return {
    executable: NICE_PROGRAM,
    args: ["-n", String(increment), cmd.executable, ...cmd.args],
  };
}

/**
 * Spawns `cmd` `increment` nice steps below the calling thread: through NICE_PROGRAM where
 * `startedBelow` can use it, else lowered right after the spawn (`lowerChild`). Never both: nice
 * adds its increment to whatever the process has when it runs, so a `lowerChild` that came first
 * would be added to (the child would end at 19, and an unprivileged child could not come back up
 * to the value its own step sets: EACCES).
 */
export function spawnBelow(
  cmd: ProgramArgs,
  options: Omit<Deno.CommandOptions, "args">,
  increment: number,
): Deno.ChildProcess {
  const started = startedBelow(cmd, increment);
  if (started !== cmd) {
    try {
      return new Deno.Command(started.executable, { ...options, args: started.args }).spawn();
    } catch (err) {
      // A process whose --allow-run names its programs but not NICE_PROGRAM: spawned directly.
      if (!(err instanceof Deno.errors.NotCapable)) throw err;
    }
  }
  const child = new Deno.Command(cmd.executable, { ...options, args: cmd.args }).spawn();
  lowerChild(child.pid, increment);
  return child;
}

/**
 * Sets a child the server just spawned `increment` below the server (this thread's nice), at
 * once. Best effort: the child sets the same value again from its side.
 */
export function lowerChild(pid: number, increment: number): void {
  const own = niceIn("/proc/thread-self/stat");
  if (own !== null) setNice(pid, lowered(own, increment));
}

/**
 * Where process `pid` stands among the kernel's autogroups (`/proc/<pid>/autogroup`):
 * - `{ nice }`: in its session's autogroup ("/autogroup-N nice K");
 * - `"root"`: in none, the file is empty — the root task group, where a process whose
 *   ancestors since init never started a session stays (a service that its init starts
 *   without setsid, as CI starts the suite); its threads then compete one by one with the
 *   autogroups, each at its own nice;
 * - `null`: the kernel has no autogroups, or the process is gone or unreadable.
 */
export type AutogroupPlace = { nice: number } | "root" | null;

/** Parses `/proc/<pid>/autogroup` (null: the file does not exist). */
export function parseAutogroup(text: string | null): AutogroupPlace {
  if (text === null) return null;
  if (text.trim() === "") return "root";
  const m = /^\/autogroup-\d+\s+nice\s+(-?\d+)\s*$/.exec(text);
  return m === null ? null : { nice: Number(m[1]) };
}

/** Where process `pid` stands among the autogroups (never throws: best effort). */
export function autogroupOf(pid: number | "self"): AutogroupPlace {
  try {
    return parseAutogroup(readProcText(`/proc/${pid}/autogroup`));
  } catch {
    return null;
  }
}

/** The nice value of the autogroup of process `pid`, or null when it is in none. */
export function autogroupNiceOf(pid: number | "self"): number | null {
  const place = autogroupOf(pid);
  return place === null || place === "root" ? null : place.nice;
}

/**
 * The nice value a new session's autogroup is ordered against, for a process at `place` whose
 * thread runs at `threadNice`: its own group's nice, or — in the root task group, where its
 * threads compete with the groups one by one — its thread nice. Null where there are no groups.
 */
export function groupReferenceNice(
  place: AutogroupPlace,
  threadNice: number | null,
): number | null {
  if (place === null) return null;
  return place === "root" ? threadNice : place.nice;
}

/** How long a write refused by the kernel's autogroup rate limit (HZ / 10) is waited out, at most. */
const AUTOGROUP_RATE_WAIT_MS = 250;

/** Writes an autogroup nice value (`/proc/<pid>/autogroup`); false when the kernel refused it. */
function writeAutogroupNice(pid: number | "self", nice: number): boolean {
  const path = cstr(`/proc/${pid}/autogroup`);
  const text = cstr(`${nice}\n`);
  const deadline = performance.now() + AUTOGROUP_RATE_WAIT_MS;
  for (;;) {
    const o = syscall("openat", -100, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (o.ret < 0n) return false;
    const fd = Number(o.ret);
    const w = syscall("write", fd, text, text.length - 1);
    closeFd(fd);
    if (w.ret >= 0n) return true;
    if (w.errno !== EAGAIN || performance.now() >= deadline) return false;
    // Another process without CAP_SYS_ADMIN set an autogroup in the last 100 ms.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

/**
 * Sets the autogroup of `target` (a process that just started its own session) `increment`
 * below the group that `reference` is ordered in. Best effort, like the weight it sets: false
 * when it could not; true when there is nothing to do (no autogroups, or `target` in none).
 */
function lowerAutogroupBelow(
  target: number | "self",
  reference: number | "self",
  referenceThreadNice: number | null,
  increment: number,
): boolean {
  const theirs = autogroupNiceOf(target);
  if (theirs === null) return true;
  const ref = groupReferenceNice(autogroupOf(reference), referenceThreadNice);
  if (ref === null) return false;
  const want = lowered(ref, increment);
  return theirs >= want || writeAutogroupNice(target, want);
}

/**
 * Sets this process's autogroup (the session it just started) `increment` below the parent's
 * group (sandbox/priority.ts's header; best effort: false when it could not).
 */
export function lowerOwnAutogroupBelowParent(increment: number): boolean {
  const parent = Number(syscall("getppid").ret);
  return lowerAutogroupBelow("self", parent, niceOf(parent), increment);
}

/**
 * Sets the autogroup of process `pid` (a sandbox that started its own session, e.g. a runner's
 * stage 2) `increment` below this process's group. Best effort: false when it could not.
 */
export function lowerAutogroupOf(pid: number, increment: number): boolean {
  return lowerAutogroupBelow(pid, "self", niceIn("/proc/thread-self/stat"), increment);
}

/** The nice value in a /proc stat file (field 19), or null when it cannot be read. */
function niceIn(statPath: string): number | null {
  try {
    const stat = readProcText(statPath);
    return stat === null ? null : parseStat(stat).nice;
  } catch {
    return null;
  }
}

/** The nice value of task `tid` of process `pid` from /proc, or null when it cannot be read. */
export function niceOf(pid: number, tid = pid): number | null {
  return niceIn(`/proc/${pid}/task/${tid}/stat`);
}
