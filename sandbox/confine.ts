/**
 * The production confinement sequence of a Worker [SB-1, SB-2, SB-7], as
 * pure planning followed by apply steps. `worker_entry.ts` calls exactly
 * these functions; the escape-probe tests reach them through the same entry.
 *
 * Stage 1 (fresh process, nothing untrusted read yet), in order:
 *   setsid → close-on-exec every fd above stderr → umask 077 → nice
 *   SANDBOX_NICE_INCREMENT, of this thread and of the new session's autogroup (CPU
 *   priority below the Control Plane's, [PF-2]; sandbox/priority.ts) → rlimits →
 *   no_new_privs → Landlock on THIS (main) thread → drop every capability,
 *   lock securebits and, when started by root, switch to the unprivileged
 *   sandbox uid/gid → parent-death SIGKILL (and re-check the parent) →
 *   execve itself into stage 2 with a minimal explicit environment.
 * Landlock comes before the uid switch so its rules are opened with the
 * server's own access (a Run root below a 0700 home); the parent-death signal
 * comes after it because the kernel clears that signal on a credential change.
 * A root process without a target identity is refused: RLIMIT_NPROC does not
 * bind uid 0 [SB-7].
 * The execve is what extends the Landlock domain to every thread: the new
 * image starts single-threaded inside the domain and all its later threads
 * inherit it [SB-2].
 * Stage 2 (new image, still nothing untrusted read), in order:
 *   non-dumpable → warm up Deno's signal machinery (it would otherwise create
 *   a socketpair lazily and panic under seccomp) → seccomp with TSYNC →
 *   verify seccomp mode 2, no_new_privs and that the inherited Landlock
 *   domain still denies `/`.
 *
 * What this file enforces: the order, and that any failing step stops the
 * sequence with a named step — the caller then exits; there is no path that
 * continues unconfined. Steps are injectable (`ConfineSteps`) so tests can
 * prove a failing step means no Run; the production binary has no switch.
 */
import { type LandlockPlan, planLandlock } from "./landlock.ts";
import { applyLandlockOnCurrentThread } from "./landlock.ts";
import { landlockAbi } from "./probe.ts";
import {
  applyRlimits,
  countTasksOfRealUid,
  type RlimitSetting,
  workerRlimitPlan,
} from "./rlimits.ts";
import { dropAllCapabilities, type TargetIdentity } from "./capabilities.ts";
import { buildWorkerFilter, type WorkerFilterOptions } from "./seccomp_bpf.ts";
import { installSeccompAllThreads } from "./seccomp.ts";
import { lowerOwnAutogroupBelowParent, lowerThisThreadBelowParent } from "./priority.ts";
import { SANDBOX_NICE_INCREMENT } from "../runtime/limits.ts";
import {
  cstr,
  cStringVector,
  EACCES,
  hostArch,
  O_CLOEXEC,
  O_DIRECTORY,
  O_RDONLY,
  syscall,
} from "./libc.ts";

export type StepResult = { ok: true } | { ok: false; step: string; errno: number };

const PR_SET_PDEATHSIG = 1;
const PR_SET_DUMPABLE = 4;
const PR_GET_SECCOMP = 21;
const PR_SET_NO_NEW_PRIVS = 38;
const PR_GET_NO_NEW_PRIVS = 39;
const SIGKILL = 9;
const CLOSE_RANGE_CLOEXEC = 1 << 2;

/** The mechanisms the sequence applies; production uses `PRODUCTION_STEPS`. */
export interface ConfineSteps {
  newSession(): StepResult;
  closeInheritedFds(): StepResult;
  umask(): StepResult;
  /** Lowers this thread's CPU priority to SANDBOX_NICE_INCREMENT; stage 2 inherits it through the execve [PF-2]. */
  lowerPriority(): StepResult;
  /** Tasks of `uid` (the uid the process will run as) now; 0 for root. */
  uidTaskCount(uid: number): number;
  /** The real uid now. */
  currentUid(): number;
  rlimits(plan: readonly RlimitSetting[]): StepResult;
  parentDeathSignal(expectedParent: number): StepResult;
  /** Drops every capability; with a target, also switches to that uid/gid. */
  dropCapabilities(target: TargetIdentity | null): StepResult;
  noNewPrivs(): StepResult;
  landlockAbi(): number;
  applyLandlock(plan: LandlockPlan): StepResult;
  execve(path: string, argv: readonly string[], env: Readonly<Record<string, string>>): StepResult;
  nonDumpable(): StepResult;
  warmUpSignals(): StepResult;
  buildFilter(opts: WorkerFilterOptions): Uint8Array;
  installSeccomp(program: Uint8Array): StepResult;
  verifySelf(): StepResult;
}

const fail = (step: string, errno: number): StepResult => ({ ok: false, step, errno });
const check = (step: string, r: { ret: bigint; errno: number }, want = 0n): StepResult =>
  r.ret === want ? { ok: true } : fail(step, r.errno);

export const PRODUCTION_STEPS: ConfineSteps = {
  newSession: () => {
    const r = syscall("setsid");
    return r.ret > 0n ? { ok: true } : fail("setsid", r.errno);
  },
  // Marking instead of closing: Deno's own runtime fds stay usable until the
  // execve, which then closes every one of them. Only 0–2 reach stage 2.
  closeInheritedFds: () =>
    check("close_fds", syscall("close_range", 3, 0xffffffff, CLOSE_RANGE_CLOEXEC)),
  umask: () => {
    syscall("umask", 0o077);
    return { ok: true };
  },
  lowerPriority: () => {
    const thread = lowerThisThreadBelowParent(SANDBOX_NICE_INCREMENT);
    // After setsid: the new session's autogroup too, or the nice above orders nothing
    // against the server's group [PF-2] (best effort; sandbox/priority.ts).
    if (thread.ok) lowerOwnAutogroupBelowParent(SANDBOX_NICE_INCREMENT);
    return thread;
  },
  uidTaskCount: (uid) => uid === 0 ? 0 : countTasksOfRealUid(uid),
  currentUid: () => Number(syscall("getuid").ret),
  rlimits: (plan) => applyRlimits(plan),
  parentDeathSignal: (expectedParent) => {
    const r = syscall("prctl", PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (r.ret !== 0n) return fail("pdeathsig", r.errno);
    // The parent may have died before the prctl: then nobody would kill us.
    const pp = syscall("getppid");
    return Number(pp.ret) === expectedParent ? { ok: true } : fail("parent_gone", 0);
  },
  dropCapabilities: (target) => dropAllCapabilities(target),
  noNewPrivs: () => check("no_new_privs", syscall("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)),
  landlockAbi: () => landlockAbi().abi ?? 0,
  applyLandlock: (plan) => applyLandlockOnCurrentThread(plan),
  execve: (path, argv, env) => {
    const keep: Uint8Array[] = [];
    const envItems = Object.entries(env).map(([k, v]) => `${k}=${v}`);
    const r = syscall(
      "execve",
      cstr(path),
      cStringVector(argv, keep),
      cStringVector(envItems, keep),
    );
    void keep.length;
    return fail("execve", r.errno); // execve returns only on failure
  },
  nonDumpable: () => check("non_dumpable", syscall("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)),
  warmUpSignals: () => {
    const noop = () => {};
    Deno.addSignalListener("SIGUSR2", noop);
    Deno.removeSignalListener("SIGUSR2", noop);
    return { ok: true };
  },
  buildFilter: (opts) => buildWorkerFilter(opts),
  installSeccomp: (program) => {
    const r = installSeccompAllThreads(program);
    if (r.ok) return { ok: true };
    if (r.reason === "rejected") return fail("seccomp", r.errno);
    return fail(r.reason === "tsync_failed" ? "seccomp_tsync" : "seccomp_malformed", 0);
  },
  verifySelf: () => {
    const mode = syscall("prctl", PR_GET_SECCOMP, 0, 0, 0, 0);
    if (mode.ret !== 2n) return fail("seccomp_mode", mode.errno);
    const nnp = check("nnp_check", syscall("prctl", PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1n);
    if (!nnp.ok) return nnp;
    // The Landlock domain came through the execve: `/` must be unreadable here too.
    const root = syscall("openat", -100, cstr("/"), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (root.ret >= 0n) {
      syscall("close", Number(root.ret));
      return fail("landlock_inherited", 0);
    }
    return root.errno === EACCES ? { ok: true } : fail("landlock_inherited", root.errno);
  },
};

/** What stage 1 needs to know; everything comes from trusted argv/code, not the Run. */
export interface Stage1Inputs {
  executable: string;
  /** The Control Plane's pid: the parent stage 1 must still have. */
  expectedParent: number;
  runRoot: string;
  systemRoots: readonly string[];
  /** Source tree entries and the Deno module cache; empty when compiled. */
  codeRoots: readonly string[];
  stage2Argv: readonly string[];
  stage2Env: Readonly<Record<string, string>>;
  /**
   * The unprivileged uid/gid to switch to; required when stage 1 runs as
   * root, null otherwise (an unprivileged process cannot switch).
   */
  identity: TargetIdentity | null;
}

/** Runs stage 1. Returns only on failure: on success the process image is replaced. */
export function runStage1(
  inputs: Stage1Inputs,
  steps: ConfineSteps = PRODUCTION_STEPS,
): StepResult {
  const uid = steps.currentUid();
  if (uid === 0 && inputs.identity === null) return fail("no_sandbox_identity", 0);
  if (uid !== 0 && inputs.identity !== null) return fail("identity_unswitchable", 0);
  const runAs = inputs.identity?.uid ?? uid;
  const seq: Array<() => StepResult> = [
    () => steps.newSession(),
    () => steps.closeInheritedFds(),
    () => steps.umask(),
    () => steps.lowerPriority(),
    () => steps.rlimits(workerRlimitPlan(steps.uidTaskCount(runAs))),
    () => steps.noNewPrivs(),
    () => {
      const planned = planLandlock({
        abi: steps.landlockAbi(),
        executable: inputs.executable,
        systemRoots: inputs.systemRoots,
        codeRoots: inputs.codeRoots,
        runRoot: inputs.runRoot,
        ownProcMaps: `/proc/${Number(syscall("getpid").ret)}/maps`,
      });
      return planned.ok ? steps.applyLandlock(planned.plan) : fail("landlock_abi", 0);
    },
    () => steps.dropCapabilities(inputs.identity),
    () => steps.parentDeathSignal(inputs.expectedParent),
    () => steps.execve(inputs.executable, inputs.stage2Argv, inputs.stage2Env),
  ];
  for (const step of seq) {
    const r = step();
    if (!r.ok) return r;
  }
  return fail("execve_returned", 0);
}

/** Runs stage 2; on success every thread is under seccomp mode 2. */
export function runStage2(steps: ConfineSteps = PRODUCTION_STEPS): StepResult {
  const seq: Array<() => StepResult> = [
    () => steps.nonDumpable(),
    () => steps.warmUpSignals(),
    () => {
      const pid = Number(syscall("getpid").ret);
      return steps.installSeccomp(steps.buildFilter({ arch: hostArch(), selfPid: pid }));
    },
    () => steps.verifySelf(),
  ];
  for (const step of seq) {
    const r = step();
    if (!r.ok) return r;
  }
  return { ok: true };
}
