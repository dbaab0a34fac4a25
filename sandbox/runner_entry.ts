/**
 * The internal `runner` sub-command [EX-1, EX-2, SB-7]: one process per
 * execution, confined before it runs anything, in the Worker's two stages.
 *
 * Stage 1 (`runner --scratch S --tmp T --parent P [--uid U --gid G]`):
 *   setsid → close-on-exec every fd above stderr → umask 022 → nice
 *   SANDBOX_NICE_INCREMENT [PF-2] → rlimits
 *   (runner_policy.ts) → as root: private mount + PID namespaces (the scratch
 *   and tmp bind-mounted at <base>/scratch and <base>/tmp on a private 64 KiB
 *   tmpfs over RUNNER_MOUNT_BASE, so the sandbox uid reaches them whatever the modes of their
 *   real parents) → no_new_privs → Landlock (runner policy) on this thread →
 *   drop every capability and switch to the sandbox uid/gid → parent-death
 *   SIGKILL → execve into stage 2.
 * Stage 2 (`runner --stage2 …`): non-dumpable → child subreaper → warm up
 *   signals → seccomp (runner policy, TSYNC) → verify → attestation frame →
 *   wait for the server's `runner.release` (sent only after it verified
 *   /proc) → run the job → `runner.done`.
 *
 * A command job runs through `runner_exec.ts` (a tiny helper that arms its
 * own parent-death SIGKILL, points stdin at /dev/null (or the job's stdin
 * bytes, then EOF: a skill's arguments [LC-3]) and execve's the
 * program): with a PID namespace the program is its init, so when it ends —
 * or the runner dies — the kernel kills every process in it. Stage 2 then
 * sweeps (`kill(-1, SIGKILL)`: Landlock's signal scope limits it to this
 * runner's own domain, never other processes of the same uid) and, as child
 * subreaper, waits until it has no child left: that is the proof of release
 * it reports (`released`). Output is kept bounded here (first and last 32 KiB
 * per stream; live chunks coalesced ≥ 100 ms, ≤ 256 KiB in total).
 *
 * What this file enforces: no argument skips a step; a failing step writes
 * one `sandbox.failure` frame and exits 70 before anything untrusted runs.
 */
// First: zod is configured before any schema is built [PF-2].
import "../runtime/zod_jitless.ts";
import { parseArgs, UsageError } from "../runtime/argv.ts";
import {
  IPC_PROTOCOL_VERSION,
  NdjsonReader,
  NdjsonWriter,
  type SandboxFailureFrame,
} from "../runtime/protocol/ipc.ts";
import {
  COMPILE_DIAGNOSTICS_MAX_BYTES,
  DOCUMENT_RLIMIT_DATA_BYTES,
  RUNNER_FRAME_WAIT_MS,
  RUNNER_LINE_MAX_BYTES,
  RUNNER_LIVE_OUTPUT_COALESCE_MS,
  RUNNER_LIVE_OUTPUT_MAX_BYTES,
  RUNNER_STREAM_HALF_BYTES,
  SANDBOX_NICE_INCREMENT,
} from "../runtime/limits.ts";
import { PRODUCTION_STEPS, type StepResult } from "./confine.ts";
import { applyRlimits, countTasksOfRealUid, RLIMIT_DATA } from "./rlimits.ts";
import { buildRunnerFilter, planRunnerLandlock, runnerRlimitPlan } from "./runner_policy.ts";
import { applyLandlockOnCurrentThread } from "./landlock.ts";
import { landlockAbi } from "./probe.ts";
import { dropAllCapabilities, readCapSets, type TargetIdentity } from "./capabilities.ts";
import { installSeccompAllThreads } from "./seccomp.ts";
import {
  AT_SYMLINK_NOFOLLOW,
  closeFd,
  cstr,
  ECHILD,
  EEXIST,
  EPERM,
  hostArch,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_PATH,
  statx,
  syscall,
} from "./libc.ts";
import { denoRunFlags, devCodeRoots, EXIT_SANDBOX_FAILURE } from "./worker_entry.ts";
import { posixSpawn, waitFor } from "./spawn.ts";
import { joinRunnerMemoryCgroup } from "./memory_cgroup.ts";
import { lowerThisThreadBelowParent } from "./priority.ts";
import { listNumericEntries, readProcText } from "./procfs.ts";
import {
  type CommandJob,
  type CompileJob,
  type DoneFrame,
  type ExtractJob,
  parserOf,
  RUNNER_CHUNK_MAX_BYTES,
  ServerToRunnerSchema,
  type StreamCapture,
} from "./runner_frames.ts";

/**
 * Where a root runner sees the scratch and tmp (its private mount namespace):
 * a tmpfs over a dedicated, empty, root-owned directory. Not /tmp: the
 * product (its executable, source tree or module cache) may itself live
 * below /tmp, and a tmpfs there would hide it from the runner. The host's
 * /tmp stays out of reach all the same: Landlock grants nothing there.
 */
export const RUNNER_MOUNT_BASE = "/var/tmp/agent-builder-runner";
export const RUNNER_SCRATCH_MOUNT = `${RUNNER_MOUNT_BASE}/scratch`;
export const RUNNER_TMP_MOUNT = `${RUNNER_MOUNT_BASE}/tmp`;

const SIGKILL = 9;
const PR_SET_CHILD_SUBREAPER = 36;
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWPID = 0x20000000;
const MS_RDONLY = 1;
const MS_NOSUID = 2;
const MS_REMOUNT = 32;
const MS_NODEV = 4;
const MS_NOEXEC = 8;
const MS_BIND = 4096;
const MS_REC = 16384;
const MS_PRIVATE = 1 << 18;
const WNOHANG = 1;
const WALL = 0x40000000;

const fail = (step: string, errno: number): StepResult => ({ ok: false, step, errno });
const check = (step: string, r: { ret: bigint; errno: number }): StepResult =>
  r.ret === 0n ? { ok: true } : fail(step, r.errno);

/** `agent-builder runner …` (internal). Returns the exit code. */
export async function runnerCommand(argv: string[]): Promise<number> {
  const a = parseArgs(argv, {
    flags: ["scratch", "tmp", "parent", "deno-dir", "uid", "gid", "pidns", "stage1"],
    switches: ["stage2", "read-only-scratch"],
  });
  const scratch = a.flags["scratch"];
  const tmp = a.flags["tmp"];
  const parent = Number(a.flags["parent"]);
  if (
    !scratch?.startsWith("/") || !tmp?.startsWith("/") || !Number.isInteger(parent) || parent < 1
  ) {
    throw new UsageError("runner needs --scratch ABS --tmp ABS --parent PID");
  }
  const denoDir = a.flags["deno-dir"] ?? null;
  if (!a.switches.has("stage2")) {
    const identity = identityOf(a.flags["uid"], a.flags["gid"]);
    const readOnly = a.switches.has("read-only-scratch");
    const r = stage1({ scratch, tmp, parent, denoDir, identity, readOnly });
    if (!r.ok) return reportFailure(r.step, r.errno);
    // Stage 1 only waits now: stage 2 holds the pipes and does the work.
    const st = waitFor(r.pid);
    if (st === -1) return 70;
    const sig = st & 0x7f;
    return sig === 0 ? (st >> 8) & 0xff : 128 + sig;
  }
  const nnp = syscall("prctl", 39, 0, 0, 0, 0);
  if (nnp.ret !== 1n) return reportFailure("not_from_stage1", 0);
  const r = stage2Confine(Number(a.flags["stage1"]));
  if (!r.ok) return reportFailure(r.step, r.errno);
  return await stage2Serve({
    scratch,
    tmp,
    denoDir,
    pidns: a.flags["pidns"] === "1",
    readOnly: a.switches.has("read-only-scratch"),
  });
}

function identityOf(uid: string | undefined, gid: string | undefined): TargetIdentity | null {
  if (uid === undefined && gid === undefined) return null;
  if (!/^[1-9][0-9]{0,9}$/.test(uid ?? "") || !/^[1-9][0-9]{0,9}$/.test(gid ?? "")) {
    throw new UsageError("--uid and --gid must both be unprivileged numeric ids");
  }
  return { uid: Number(uid), gid: Number(gid) };
}

interface Stage1Options {
  scratch: string;
  tmp: string;
  parent: number;
  denoDir: string | null;
  identity: TargetIdentity | null;
  /** runtime-compile: the scratch is the source, mounted and ruled read-only. */
  readOnly: boolean;
}

/** Confines this (main) thread and spawns stage 2 from it; returns stage 2's pid. */
type Stage1Result = { ok: true; pid: number } | { ok: false; step: string; errno: number };

const fail1 = (step: string, errno: number): Stage1Result => ({ ok: false, step, errno });

function stage1(o: Stage1Options): Stage1Result {
  const uid = Number(syscall("getuid").ret);
  if (uid === 0 && o.identity === null) return fail1("no_sandbox_identity", 0);
  if (uid !== 0 && o.identity !== null) return fail1("identity_unswitchable", 0);
  const runAs = o.identity?.uid ?? uid;
  let scratch = o.scratch;
  let tmp = o.tmp;
  let pidns = false;
  const seq: Array<() => StepResult> = [
    () => PRODUCTION_STEPS.newSession(),
    () => PRODUCTION_STEPS.closeInheritedFds(),
    () => {
      syscall("umask", 0o022);
      return { ok: true };
    },
    // [PF-2] Below the Control Plane's CPU priority; stage 2 (spawned from this thread) inherits it.
    () => lowerThisThreadBelowParent(SANDBOX_NICE_INCREMENT),
    () => applyRlimits(runnerRlimitPlan(runAs === 0 ? 0 : countTasksOfRealUid(runAs))),
    // As root: the command's memory as a whole, where the host offers a memory cgroup.
    () => {
      if (uid !== 0) return { ok: true };
      const m = joinRunnerMemoryCgroup();
      return m.ok ? { ok: true } : fail(m.step, m.errno);
    },
    () => {
      if (uid !== 0) return { ok: true };
      const r = isolateMounts(o.scratch, o.tmp, o.readOnly);
      if (r.ok) {
        scratch = RUNNER_SCRATCH_MOUNT;
        tmp = RUNNER_TMP_MOUNT;
        pidns = true;
      }
      return r;
    },
    // The PID namespace (needs CAP_SYS_ADMIN, so before the drop): after it
    // this thread creates no more threads, only processes, and the next
    // process it creates — stage 2 — is the namespace's init.
    () => uid === 0 ? check("unshare_pid", syscall("unshare", CLONE_NEWPID)) : { ok: true },
    () => PRODUCTION_STEPS.noNewPrivs(),
    () => {
      const planned = planRunnerLandlock({
        abi: landlockAbi().abi ?? 0,
        executable: Deno.execPath(),
        codeRoots: Deno.build.standalone ? [] : devCodeRoots(new URL(import.meta.url), o.denoDir),
        scratch,
        tmp,
        readOnlyScratch: o.readOnly,
      });
      return planned.ok ? applyLandlockOnCurrentThread(planned.plan) : fail("landlock_abi", 0);
    },
    () => dropAllCapabilities(o.identity),
    () => PRODUCTION_STEPS.parentDeathSignal(o.parent),
  ];
  for (const step of seq) {
    const r = step();
    if (!r.ok) return { ok: false, step: r.step, errno: r.errno };
  }
  const tail = [
    "--stage2",
    "--scratch",
    scratch,
    "--tmp",
    tmp,
    "--parent",
    String(o.parent),
    "--stage1",
    String(Number(syscall("getpid").ret)),
    "--pidns",
    pidns ? "1" : "0",
    ...(o.denoDir ? ["--deno-dir", o.denoDir] : []),
    ...(o.readOnly ? ["--read-only-scratch"] : []),
  ];
  const env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  if (o.denoDir) env.DENO_DIR = o.denoDir;
  const argv = Deno.build.standalone
    ? [Deno.execPath(), "runner", ...tail]
    : [Deno.execPath(), ...stage2DenoFlags(), new URL(import.meta.url).pathname, ...tail];
  // posix_spawn from this thread: stage 2 inherits its confinement (not the
  // other, unconfined runtime threads of this process) and starts fresh.
  const sp = posixSpawn(Deno.execPath(), argv, env);
  return sp.ok ? { ok: true, pid: sp.pid } : fail1("spawn_stage2", sp.errno);
}

/**
 * Deno flags of stage 2 when not compiled: FFI for its own syscalls, run for
 * the helper. Stage 2 cannot reach Deno's code cache under Landlock anyway;
 * without it Deno starts one thread fewer [PF-1].
 */
function stage2DenoFlags(): string[] {
  return [...denoRunFlags(), "--no-code-cache", "--allow-run", "--allow-read", "--allow-env"];
}

/**
 * As root: a private mount namespace (nothing propagates back). The scratch and tmp are opened first
 * (by path, as root), then bind-mounted from those descriptors onto a fresh
 * 64 KiB tmpfs at RUNNER_MOUNT_BASE, so their real parents (a 0700 home) need
 * not be searchable by the sandbox uid.
 */
function isolateMounts(scratch: string, tmp: string, readOnly: boolean): StepResult {
  const u = check("unshare_mnt", syscall("unshare", CLONE_NEWNS));
  if (!u.ok) return u;
  const p = check(
    "mount_private",
    syscall("mount", null, cstr("/"), null, MS_REC | MS_PRIVATE, null),
  );
  if (!p.ok) return p;
  // Opened inside the new namespace (a bind source must belong to it), and
  // before the tmpfs covers the mount base.
  const open = (path: string) =>
    syscall("openat", -100, cstr(path), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  const s = open(scratch);
  if (s.ret < 0n) return fail("open_scratch", s.errno);
  const t = open(tmp);
  if (t.ret < 0n) {
    closeFd(Number(s.ret));
    return fail("open_tmp", t.errno);
  }
  const bind = (step: string, fd: bigint, target: string) =>
    check(
      step,
      syscall("mount", cstr(`/proc/self/fd/${Number(fd)}`), cstr(target), null, MS_BIND, null),
    );
  try {
    const steps: Array<() => StepResult> = [
      ensureMountBase,
      () =>
        check(
          "mount_tmpfs",
          syscall(
            "mount",
            cstr("tmpfs"),
            cstr(RUNNER_MOUNT_BASE),
            cstr("tmpfs"),
            MS_NOSUID | MS_NODEV | MS_NOEXEC,
            cstr("size=64k,nr_inodes=16,mode=0755"),
          ),
        ),
      () => check("mkdir_scratch", syscall("mkdirat", -100, cstr(RUNNER_SCRATCH_MOUNT), 0o755)),
      () => check("mkdir_tmp", syscall("mkdirat", -100, cstr(RUNNER_TMP_MOUNT), 0o755)),
      () => bind("bind_scratch", s.ret, RUNNER_SCRATCH_MOUNT),
      () =>
        readOnly
          ? check(
            "scratch_read_only",
            syscall(
              "mount",
              null,
              cstr(RUNNER_SCRATCH_MOUNT),
              null,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              null,
            ),
          )
          : { ok: true },
      () => bind("bind_tmp", t.ret, RUNNER_TMP_MOUNT),
      // A /proc of our own that shows a process only to whoever may inspect it
      // (ptrace read access): the command sees its own processes, never the
      // host's, the server's, Workers (not dumpable) or other runners
      // (Landlock's ptrace scope).
      () =>
        check(
          "mount_proc",
          syscall(
            "mount",
            cstr("proc"),
            cstr("/proc"),
            cstr("proc"),
            MS_NOSUID | MS_NODEV | MS_NOEXEC,
            cstr("hidepid=invisible"),
          ),
        ),
    ];
    for (const step of steps) {
      const r = step();
      if (!r.ok) return r;
    }
    return { ok: true };
  } finally {
    closeFd(Number(s.ret));
    closeFd(Number(t.ret));
  }
}

/**
 * The mount point itself, in the host's filesystem: created when missing and
 * used only when it is a real directory owned by root and not writable by
 * group or others (/var/tmp is world-writable, so anything else may have been
 * planted there; then the runner is refused rather than mounted over it).
 */
function ensureMountBase(): StepResult {
  const m = syscall("mkdirat", -100, cstr(RUNNER_MOUNT_BASE), 0o755);
  if (m.ret < 0n && m.errno !== EEXIST) return fail("mount_base_create", m.errno);
  const st = statx(-100, RUNNER_MOUNT_BASE, AT_SYMLINK_NOFOLLOW);
  if (!st.ok) return fail("mount_base_stat", st.errno);
  const fmt = st.st.mode & 0o170000;
  if (fmt !== 0o040000 || st.st.uid !== 0 || (st.st.mode & 0o022) !== 0) {
    return fail("mount_base_unsafe", EPERM);
  }
  return { ok: true };
}

function stage2Confine(stage1: number): StepResult {
  const seq: Array<() => StepResult> = [
    // Its own session and group (it was spawned, not exec'd, by stage 1).
    () => PRODUCTION_STEPS.newSession(),
    // A spawned child does not inherit the parent-death signal: arm it again,
    // aimed at stage 1, and make sure stage 1 (whose parent is the server)
    // is still there. With stage 2 gone, the PID namespace goes too.
    () => check("pdeathsig", syscall("prctl", 1, /* PR_SET_PDEATHSIG */ SIGKILL, 0, 0, 0)),
    () => stage1StillServing(stage1),
    () => PRODUCTION_STEPS.nonDumpable(),
    () => check("subreaper", syscall("prctl", PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)),
    () => PRODUCTION_STEPS.warmUpSignals(),
    () => {
      const r = installSeccompAllThreads(buildRunnerFilter(hostArch()));
      if (r.ok) return { ok: true };
      if (r.reason === "rejected") return fail("seccomp", r.errno);
      return fail(r.reason === "tsync_failed" ? "seccomp_tsync" : "seccomp_malformed", 0);
    },
    () => PRODUCTION_STEPS.verifySelf(),
  ];
  for (const step of seq) {
    const r = step();
    if (!r.ok) return r;
  }
  return { ok: true };
}

/**
 * Stage 1 must still be our parent: it checked, after arming its own
 * parent-death signal, that the server is its parent, so while it lives the
 * server does. If it died before our prctl, we were re-parented and PPid
 * (the host's view; getppid() is 0 inside the PID namespace) differs.
 */
function stage1StillServing(stage1: number): StepResult {
  const self = readProcText("/proc/self/status") ?? "";
  const ppid = Number(/\nPPid:\s+(\d+)/.exec(self)?.[1] ?? 0);
  return Number.isInteger(stage1) && stage1 > 1 && ppid === stage1
    ? { ok: true }
    : fail("parent_gone", 0);
}

function reportFailure(step: string, errno: number): number {
  const frame: SandboxFailureFrame = {
    v: IPC_PROTOCOL_VERSION,
    type: "sandbox.failure",
    step: step.slice(0, 32),
    errno,
  };
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(frame) + "\n"));
  return EXIT_SANDBOX_FAILURE;
}

interface Stage2Options {
  scratch: string;
  tmp: string;
  denoDir: string | null;
  pidns: boolean;
  readOnly: boolean;
}

async function stage2Serve(o: Stage2Options): Promise<number> {
  const writer = new NdjsonWriter(Deno.stdout.writable, RUNNER_LINE_MAX_BYTES);
  const caps = readCapSets();
  // Pids as the host (and the server) sees them: /proc is the host's, so its
  // status shows them even from inside the runner's PID namespace.
  const status = readProcText("/proc/self/status") ?? "";
  await writer.send({
    v: IPC_PROTOCOL_VERSION,
    type: "sandbox.attestation",
    pid: Number(/\nPid:\s+(\d+)/.exec(status)?.[1] ?? 0),
    ppid: Number(/\nPPid:\s+(\d+)/.exec(status)?.[1] ?? 0),
    landlock_abi: landlockAbi().abi ?? 0,
    seccomp_mode: 2,
    no_new_privs: true,
    capabilities_zero: caps !== null && (caps.effective | caps.permitted | caps.inheritable) === 0n,
  });
  const reader = new NdjsonReader(Deno.stdin.readable, {
    maxLineBytes: RUNNER_LINE_MAX_BYTES,
    maxLines: 8,
    maxTotalBytes: 2 * RUNNER_LINE_MAX_BYTES,
  });
  const parse = parserOf(ServerToRunnerSchema);
  const first = await reader.next(RUNNER_FRAME_WAIT_MS, parse);
  if (first === null || first.type !== "runner.release") return 0; // the server let go: nothing ran
  const done = first.job.kind === "command"
    ? await runCommandJob(first.job, o, writer, reader)
    : first.job.kind === "extract"
    ? await runExtractJob(first.job, o)
    : await runCompileJob(first.job, o);
  await writer.send(done);
  await writer.close();
  return 0;
}

/** First and last RUNNER_STREAM_HALF_BYTES of a stream, and its total size. */
export class StreamKeeper {
  readonly #head = new Uint8Array(RUNNER_STREAM_HALF_BYTES);
  #headLen = 0;
  readonly #ring = new Uint8Array(RUNNER_STREAM_HALF_BYTES);
  #ringPos = 0;
  #ringLen = 0;
  total = 0;

  push(chunk: Uint8Array): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.#headLen < this.#head.length) {
      const n = Math.min(rest.length, this.#head.length - this.#headLen);
      this.#head.set(rest.subarray(0, n), this.#headLen);
      this.#headLen += n;
      rest = rest.subarray(n);
    }
    if (rest.length >= this.#ring.length) {
      this.#ring.set(rest.subarray(rest.length - this.#ring.length));
      this.#ringPos = 0;
      this.#ringLen = this.#ring.length;
      return;
    }
    for (let i = 0; i < rest.length;) {
      const n = Math.min(rest.length - i, this.#ring.length - this.#ringPos);
      this.#ring.set(rest.subarray(i, i + n), this.#ringPos);
      this.#ringPos = (this.#ringPos + n) % this.#ring.length;
      this.#ringLen = Math.min(this.#ring.length, this.#ringLen + n);
      i += n;
    }
  }

  head(): Uint8Array {
    return this.#head.slice(0, this.#headLen);
  }

  tail(): Uint8Array {
    if (this.#ringLen < this.#ring.length) return this.#ring.slice(0, this.#ringLen);
    const out = new Uint8Array(this.#ring.length);
    out.set(this.#ring.subarray(this.#ringPos));
    out.set(this.#ring.subarray(0, this.#ringPos), this.#ring.length - this.#ringPos);
    return out;
  }

  capture(): StreamCapture {
    return { head: toB64(this.head()), tail: toB64(this.tail()), total_bytes: this.total };
  }
}

function toB64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * SIGKILL to every descendant. In the runner's own PID namespace (stage 2 is
 * its init) that is `kill(-1)`: everything the namespace holds but us.
 * Without one, `kill(-1)` would also reach stage 1 (same uid, same Landlock
 * domain), so the descendants are found through /proc instead: every
 * process whose parent chain reaches this one — orphans included, because
 * this process is their child subreaper.
 */
function killDescendants(pidns: boolean): void {
  if (pidns) {
    syscall("kill", -1, SIGKILL);
    return;
  }
  const self = Number(/\nPid:\s+(\d+)/.exec(readProcText("/proc/self/status") ?? "")?.[1] ?? 0);
  const parent = new Map<number, number>();
  for (const pid of listNumericEntries("/proc")) {
    const st = readProcText(`/proc/${pid}/stat`);
    if (st === null) continue;
    parent.set(pid, Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[1]));
  }
  for (const pid of parent.keys()) {
    let p = parent.get(pid);
    for (let hops = 0; p !== undefined && p > 1 && hops < 4096; hops++) {
      if (p === self) {
        syscall("kill", pid, SIGKILL);
        break;
      }
      p = parent.get(p);
    }
  }
}

/**
 * Kills what is left of the command and reaps every orphan (this process is
 * their subreaper) until none is left. True when no child is left to wait
 * for within `budgetMs` — the runner's proof of release.
 */
function sweepAndReap(pidns: boolean, budgetMs: number): boolean {
  const end = Date.now() + budgetMs;
  for (;;) {
    killDescendants(pidns);
    for (;;) {
      const r = syscall("wait4", -1, null, WNOHANG | WALL, null);
      if (r.ret > 0n) continue;
      if (r.ret === -1n && r.errno === ECHILD) return true;
      break;
    }
    if (Date.now() > end) return false;
    sleepSync(10);
  }
}

async function runCommandJob(
  job: CommandJob,
  o: Stage2Options,
  writer: NdjsonWriter,
  reader: NdjsonReader,
): Promise<DoneFrame> {
  const keep = { stdout: new StreamKeeper(), stderr: new StreamKeeper() };
  const started = performance.now();
  const base = (ended: DoneFrame["ended"], extra: Partial<DoneFrame> = {}): DoneFrame => ({
    v: IPC_PROTOCOL_VERSION,
    type: "runner.done",
    ended,
    exit_code: null,
    signal: null,
    duration_ms: Math.round(performance.now() - started),
    released: true,
    stdout: keep.stdout.capture(),
    stderr: keep.stderr.capture(),
    ...extra,
  });
  const cwd = job.cwd === "" ? o.scratch : `${o.scratch}/${job.cwd}`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(job.path, {
      args: job.argv.slice(1),
      cwd,
      clearEnv: true,
      env: job.env,
      stdin: job.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch {
    return base("spawn_failed", { released: sweepAndReap(o.pidns, 1000) });
  }
  if (job.stdin !== undefined) {
    // The job's input (a skill's JSON arguments [LC-3]), then end of file. A
    // program that exits without reading it must not fail the runner.
    const input = Uint8Array.from(atob(job.stdin), (c) => c.charCodeAt(0));
    const w = child.stdin.getWriter();
    void w.write(input).then(() => w.close()).catch(() => {});
  }
  let ended: DoneFrame["ended"] | null = null;
  const killAll = (why: DoneFrame["ended"]) => {
    ended ??= why;
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    killDescendants(o.pidns);
  };
  const timer = setTimeout(() => killAll("timeout"), job.timeout_ms);
  // A `runner.kill` from the server (cancel) ends everything.
  const control = (async () => {
    try {
      for (;;) {
        const f = await reader.next(RUNNER_FRAME_WAIT_MS, parserOf(ServerToRunnerSchema));
        if (f === null) break;
        if (f.type === "runner.kill") killAll("cancelled");
      }
    } catch { /* protocol error: the server will kill us */ }
  })();
  void control;

  let liveLeft = job.live_max_bytes ?? RUNNER_LIVE_OUTPUT_MAX_BYTES;
  const pending: Record<"stdout" | "stderr", Uint8Array[]> = { stdout: [], stderr: [] };
  const flush = async () => {
    for (const stream of ["stdout", "stderr"] as const) {
      const parts = pending[stream];
      pending[stream] = [];
      for (const part of parts) {
        for (let i = 0; i < part.length && liveLeft > 0; i += RUNNER_CHUNK_MAX_BYTES) {
          const slice = part.subarray(
            i,
            Math.min(part.length, i + RUNNER_CHUNK_MAX_BYTES, i + liveLeft),
          );
          liveLeft -= slice.length;
          await writer.send({
            v: IPC_PROTOCOL_VERSION,
            type: "runner.output",
            stream,
            data: toB64(slice),
          });
        }
      }
    }
  };
  let flushing: Promise<void> = Promise.resolve();
  const ticker = setInterval(() => {
    flushing = flushing.then(flush);
  }, RUNNER_LIVE_OUTPUT_COALESCE_MS);
  const pump = async (stream: "stdout" | "stderr", rs: ReadableStream<Uint8Array>) => {
    for await (const chunk of rs) {
      keep[stream].push(chunk);
      if (liveLeft > 0) pending[stream].push(chunk.slice());
    }
  };
  const pumps = Promise.all([pump("stdout", child.stdout), pump("stderr", child.stderr)]);
  const status = await child.status;
  clearTimeout(timer);
  // The program is gone; with a PID namespace so is everything it started.
  // The sweep covers the host without one, and proves release either way.
  const released = sweepAndReap(o.pidns, 5000);
  // Every writer of the pipes is dead now, so the pumps end.
  await pumps;
  clearInterval(ticker);
  await flushing;
  await flush();
  const signal = status.signal ?? null;
  return base(ended ?? (signal !== null ? "signaled" : "exited"), {
    exit_code: signal === null ? status.code : null,
    signal,
    released,
  });
}
/** runtime-compile in the runner: the bundled TypeScript compiler over the read-only scratch. */
async function runCompileJob(job: CompileJob, o: Stage2Options): Promise<DoneFrame> {
  const started = performance.now();
  const empty = new StreamKeeper().capture();
  const frame = (compile: DoneFrame["compile"]): DoneFrame => ({
    v: IPC_PROTOCOL_VERSION,
    type: "runner.done",
    ended: "exited",
    exit_code: compile?.code === "ok" && compile.count === 0 ? 0 : 1,
    signal: null,
    duration_ms: Math.round(performance.now() - started),
    released: true,
    stdout: empty,
    stderr: empty,
    compile,
  });
  if (!o.readOnly || job.path.split("/").some((p) => p === ".." || p === "")) {
    return frame({ code: "path_not_found", diagnostics: "", count: 0 });
  }
  const { default: ts } = await import("typescript");
  const { checkWorkspaceFile } = await import("../runtime/exec/compile_check.ts");
  const r = checkWorkspaceFile(ts, o.scratch, job.path, COMPILE_DIAGNOSTICS_MAX_BYTES);
  if (!r.ok) return frame({ code: r.code, diagnostics: "", count: 0 });
  return frame({ code: "ok", diagnostics: r.diagnostics, count: r.count });
}

/**
 * document/extract_text in the runner [LC-4]: the document is the only file of
 * the read-only scratch; RLIMIT_DATA is lowered to DOCUMENT_RLIMIT_DATA_BYTES
 * before a byte of it is parsed (the server's wall timer bounds the time).
 */
async function runExtractJob(job: ExtractJob, o: Stage2Options): Promise<DoneFrame> {
  const started = performance.now();
  const empty = new StreamKeeper().capture();
  const frame = (extract: DoneFrame["extract"]): DoneFrame => ({
    v: IPC_PROTOCOL_VERSION,
    type: "runner.done",
    ended: "exited",
    exit_code: extract?.code === "ok" ? 0 : 1,
    signal: null,
    duration_ms: Math.round(performance.now() - started),
    released: true,
    stdout: empty,
    stderr: empty,
    extract,
  });
  const refuse = (code: NonNullable<DoneFrame["extract"]>["code"]) =>
    frame({ code, text: "", total_chars: 0, next_offset: null, pages: null });
  if (!o.readOnly) return refuse("path_not_found");
  const lowered = applyRlimits([
    { resource: RLIMIT_DATA, name: "data", value: BigInt(DOCUMENT_RLIMIT_DATA_BYTES) },
  ]);
  if (!lowered.ok) return refuse("document_resource_limit");
  // stdout carries the frames: the libraries' console chatter (pdf.js warns with
  // console.log) must never reach it.
  for (const k of ["log", "info", "warn", "error", "debug", "trace"] as const) {
    console[k] = () => {};
  }
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(`${o.scratch}/${job.path}`);
  } catch {
    return refuse("path_not_found");
  }
  const { extractDocument, textWindow } = await import("../runtime/documents/extract_core.ts");
  const r = await extractDocument(bytes, job.format);
  if (!r.ok) return refuse(r.code);
  const w = textWindow(r.text, job.offset, job.limit);
  return frame({ code: "ok", ...w, pages: r.pages });
}

// Not compiled, this module is its own entry (a smaller module graph than
// main.ts, so a runner starts faster) or, pre-bundled as one script, that of
// dist/runner.js (tools/build/worker.ts) [PF-1]; compiled, main.ts routes
// `runner` here. No top-level await: the bundle is a script, not a module.
if (import.meta.main) {
  runnerCommand(Deno.args).then((code) => Deno.exit(code));
}
