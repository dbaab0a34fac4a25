/**
 * The server side of the runner [EX-1, EX-2, EX-4]: `runCommand()` runs one
 * program in a freshly confined runner process and returns only when every
 * process of it is proven gone (or says `outcome_unknown`).
 *
 * Sequence: validate (argv/cwd/timeout bounds; a cwd that is not a real
 * directory inside the scratch) → resolve argv[0] on RUNNER_PATH (or `deno`)
 * → take a slot (≤ 1 per Run, ≤ 2 in the server, wait ≤ 30 s, else
 * `exec_busy`) → hand the scratch and tmp to the sandbox uid (as root) →
 * spawn `runner` (clean environment, only fds 0–2) → read its attestation →
 * verify /proc (every task: NoNewPrivs, Seccomp 2 with one filter more than
 * ours, capabilities zero, uids/gids non-zero as root, own session; as root
 * also its own PID and mount namespaces) → pin it with a pidfd → release the
 * job → stream output → `runner.done` → prove release.
 *
 * What this file enforces: nothing runs before verification; the runner is
 * killed through the pidfd on any protocol violation or when it overruns the
 * wall timeout by RUNNER_RELEASE_TIMEOUT_MS; release is proven by the
 * runner's own sweep and, with a PID namespace, by this process finding no
 * process left in that namespace (it kills any it finds) — otherwise the
 * outcome is `outcome_unknown`. The caller owns the scratch and tmp dirs.
 * See runner_types.ts for the interface and docs/runner.md for the design.
 */
import { AppError } from "../errors.ts";
import {
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMMAND_ARGV_MAX_TOTAL_BYTES,
  COMMAND_SLOT_WAIT_MS,
  COMMAND_TIMEOUT_MAX_S,
  COMMAND_TIMEOUT_MIN_S,
  COMMANDS_ACTIVE_MAX,
  RUNNER_LINE_MAX_BYTES,
  RUNNER_READY_TIMEOUT_MS,
  RUNNER_RELEASE_TIMEOUT_MS,
  SANDBOX_NICE_INCREMENT,
  TASK_WALL_MAX_MS,
  TASKS_ACTIVE_SERVER_MAX,
} from "../limits.ts";
import {
  type AttestationFrame,
  AttestationFrameSchema,
  IPC_PROTOCOL_VERSION,
  NdjsonReader,
  NdjsonWriter,
  type SandboxFailureFrame,
  SandboxFailureFrameSchema,
} from "../protocol/ipc.ts";
import {
  attestationProblems,
  parseStatus,
  pinProcess,
  readProcSnapshot,
  selfHoldsCapabilities,
  selfIsRoot,
  selfSeccompFilters,
} from "../../sandbox/attestation.ts";
import { denoRunFlags, sandboxIdentityArgs } from "../../sandbox/worker_entry.ts";
import { resolveSandboxIdentity, sandboxUser } from "../../sandbox/identity.ts";
import {
  AT_SYMLINK_NOFOLLOW,
  closeFd,
  cstr,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  S_IFDIR,
  S_IFMT,
  statx,
  syscall,
} from "../../sandbox/libc.ts";
import { lowerAutogroupOf, spawnBelow } from "../../sandbox/priority.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";
import {
  ownMemoryCgroup,
  removeRunnerCgroup,
  runnerCgroupDir,
  sweepStaleRunnerCgroups,
} from "../../sandbox/memory_cgroup.ts";
import { listDir } from "../../linuxfs/dirents.ts";
import {
  type CommandJob,
  type CompileJob,
  type DoneFrame,
  type ExtractJob,
  parserOf,
  type ReleaseFrame,
  RunnerToServerSchema,
} from "../../sandbox/runner_frames.ts";
import { RUNNER_SCRATCH_MOUNT, RUNNER_TMP_MOUNT } from "../../sandbox/runner_entry.ts";
import type {
  BoundedText,
  CommandOutcome,
  CommandResult,
  OutputDelta,
  RunCommandOptions,
} from "./runner_types.ts";
import { sandboxDenoDir } from "../worker/supervisor.ts";
import { utf8Bytes } from "../protocol/utf8.ts";
import { errorName } from "../log.ts";
import { productionRunnerModule } from "../worker/bundle.ts";

export type { CommandResult, RunCommandOptions } from "./runner_types.ts";

/** Where a bare argv[0] is looked up [EX-2]. */
export const RUNNER_PATH = ["/usr/local/bin", "/usr/bin", "/bin"];

const SIGKILL = 9;

// ── validation ──────────────────────────────────────────────────────────────

function invalid(detail: string): never {
  throw new AppError("tool_invalid_arguments", detail);
}

/** argv, cwd and timeout bounds [EX-2]; returns the normalised cwd ("" = root). */
export function validateCommand(
  argv: readonly string[],
  cwd: string,
  timeoutS: number,
  maxTimeoutS: number = COMMAND_TIMEOUT_MAX_S,
): string {
  if (!Array.isArray(argv) || argv.length < 1 || argv.length > COMMAND_ARGV_MAX_ITEMS) {
    invalid("argv must have 1..64 items");
  }
  let total = 0;
  for (const a of argv) {
    if (typeof a !== "string" || a.includes("\0")) invalid("argv item with NUL");
    const n = utf8Bytes(a);
    if (n > COMMAND_ARG_MAX_ITEM_BYTES) invalid("argv item too long");
    total += n;
  }
  if (total > COMMAND_ARGV_MAX_TOTAL_BYTES) invalid("argv too long");
  if (argv[0] === "") invalid("empty program");
  if (
    !Number.isInteger(timeoutS) || timeoutS < COMMAND_TIMEOUT_MIN_S ||
    timeoutS > maxTimeoutS
  ) invalid("timeout_s out of range");
  if (typeof cwd !== "string" || cwd.includes("\0") || cwd.startsWith("/")) invalid("bad cwd");
  const parts = cwd.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.some((p) => p === "..")) invalid("cwd escapes the workspace");
  if (utf8Bytes(cwd) > 1024 || parts.length > 32) invalid("cwd too long");
  return parts.join("/");
}

/** argv[0] → an absolute program path, or `exec_unknown_program`. */
export function resolveProgram(name: string): string {
  if (name === "deno") {
    // The product's own runtime; a compiled executable is not a Deno CLI.
    if (!Deno.build.standalone) return Deno.execPath();
    throw new AppError("exec_unknown_program", "deno is not available in a compiled build");
  }
  if (!/^[A-Za-z0-9._+-]{1,255}$/.test(name) || name === "." || name === "..") {
    throw new AppError("exec_unknown_program", "argv[0] must be a bare program name");
  }
  for (const dir of RUNNER_PATH) {
    const p = `${dir}/${name}`;
    const st = statx(-100, p, 0);
    if (st.ok && (st.st.mode & S_IFMT) === 0o100000 && (st.st.mode & 0o111) !== 0) return p;
  }
  throw new AppError("exec_unknown_program", `${name} not found`);
}

const lstatx = (path: string) => statx(-100, path, AT_SYMLINK_NOFOLLOW);

/** The cwd must be a real directory chain inside the scratch (no symlinks). */
function checkCwd(scratchDir: string, cwd: string): void {
  let path = scratchDir;
  for (const part of cwd === "" ? [] : cwd.split("/")) {
    path = `${path}/${part}`;
    const st = lstatx(path);
    if (!st.ok || (st.st.mode & S_IFMT) !== S_IFDIR) invalid("cwd is not a directory");
  }
}

// ── slots [EX-2] ────────────────────────────────────────────────────────────

const active = new Set<string>();
let waiters: Array<() => void> = [];

function wake(): void {
  const w = waiters;
  waiters = [];
  for (const f of w) f();
}

/** Takes a slot for `key`; waits ≤ waitMs for one, else `exec_busy`. */
export async function acquireCommandSlot(
  key: string,
  waitMs = COMMAND_SLOT_WAIT_MS,
  signal?: AbortSignal,
): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  while (active.has(key) || active.size >= COMMANDS_ACTIVE_MAX) {
    const left = deadline - Date.now();
    if (left <= 0) throw new AppError("exec_busy", "no command slot within the wait");
    if (signal?.aborted) throw new AppError("run_cancelled", "cancelled while waiting");
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, left);
      const onAbort = () => done();
      signal?.addEventListener("abort", onAbort, { once: true });
      function done() {
        clearTimeout(t);
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }
      waiters.push(done);
    });
  }
  active.add(key);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    active.delete(key);
    wake();
  };
}

/** Background Tasks [EX-6]: their own server-wide pool, separate from the foreground slots. */
const background = new Set<string>();

/** Takes a background slot for `key` at once, or `tasks_busy` (a Task never waits). */
export function acquireBackgroundSlot(key: string): () => void {
  if (background.has(key) || background.size >= TASKS_ACTIVE_SERVER_MAX) {
    throw new AppError("tasks_busy", "no background slot");
  }
  background.add(key);
  return () => void background.delete(key);
}

// ── hand-over to the sandbox uid ────────────────────────────────────────────

/**
 * As root: makes the sandbox uid own `dir` and everything below it that it
 * does not own yet (symlinks themselves, never their targets), so the
 * command can write its scratch and tmp. Bounded by the scratch bounds the
 * caller enforces [EX-3]. A no-op for an unprivileged server.
 */
export function handOverToSandbox(dir: string, user = sandboxUser()): void {
  if (!selfIsRoot()) return;
  const id = resolveSandboxIdentity(user);
  if (id === null) throw new AppError("sandbox_unavailable", `sandbox user ${user} unresolved`);
  const chownAt = (dirfd: number, name: string) => {
    const r = syscall("fchownat", dirfd, cstr(name), id.uid, id.gid, AT_SYMLINK_NOFOLLOW);
    if (r.ret !== 0n) throw new AppError("sandbox_unavailable", `chown errno ${r.errno}`);
  };
  const walk = (path: string, depth: number) => {
    if (depth > 64) throw new AppError("sandbox_unavailable", "scratch too deep");
    const o = syscall(
      "openat",
      -100,
      cstr(path),
      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
      0,
    );
    if (o.ret < 0n) throw new AppError("sandbox_unavailable", `open errno ${o.errno}`);
    const fd = Number(o.ret);
    try {
      const list = listDir(fd, 1_000_000);
      if (!list.ok) throw new AppError("sandbox_unavailable", "scratch unreadable");
      for (const e of list.entries) {
        const st = statx(fd, e.name, AT_SYMLINK_NOFOLLOW);
        if (!st.ok) continue; // vanished
        if (st.st.uid !== id.uid || st.st.gid !== id.gid) chownAt(fd, e.name);
        if ((st.st.mode & S_IFMT) === S_IFDIR) walk(`${path}/${e.name}`, depth + 1);
      }
    } finally {
      closeFd(fd);
    }
  };
  const top = lstatx(dir);
  if (!top.ok || (top.st.mode & S_IFMT) !== S_IFDIR) {
    throw new AppError("sandbox_unavailable", "not a directory");
  }
  if (top.st.uid !== id.uid || top.st.gid !== id.gid) chownAt(-100, dir);
  walk(dir, 0);
}

// ── output ──────────────────────────────────────────────────────────────────

// CSI, OSC (BEL or ST terminated), DCS/SOS/PM/APC strings, escapes with
// intermediates (ESC ( B), other two-byte escapes (ESC c), a lone ESC, C1 CSI.
const ANSI =
  // deno-lint-ignore no-control-regex
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -/]+[0-~]|\x1b[@-~]|\x1b|\x9b[0-?]*[ -/]*[@-~]/g;

/** Invalid UTF-8 replaced (U+FFFD), ANSI escapes removed [EX-4]. */
export function cleanText(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes).replace(ANSI, "");
}

function fromB64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The kept head and tail of a stream as text, with a marker where the middle was cut. */
export function boundedText(head: Uint8Array, tail: Uint8Array, total: number): BoundedText {
  const omitted = total - head.length - tail.length;
  if (omitted <= 0) {
    const all = new Uint8Array(head.length + tail.length);
    all.set(head);
    all.set(tail, head.length);
    return { text: cleanText(all), total_bytes: total, truncated: false };
  }
  return {
    text: `${cleanText(head)}\n[… ${omitted} bytes omitted …]\n${cleanText(tail)}`,
    total_bytes: total,
    truncated: true,
  };
}

// ── spawning and verification ───────────────────────────────────────────────

interface RunnerDirs {
  scratchDir: string;
  tmpDir: string;
}

function runnerArgs(
  dirs: RunnerDirs,
  denoDir: string | null,
  readOnly: boolean,
): { exe: string; args: string[] } {
  const tail = [
    ...(readOnly ? ["--read-only-scratch"] : []),
    "--scratch",
    dirs.scratchDir,
    "--tmp",
    dirs.tmpDir,
    "--parent",
    String(Deno.pid),
    ...(denoDir ? ["--deno-dir", denoDir] : []),
    ...sandboxIdentityArgs(),
  ];
  if (Deno.build.standalone) return { exe: Deno.execPath(), args: ["runner", ...tail] };
  return {
    exe: Deno.execPath(),
    args: [
      ...denoRunFlags(),
      // dist/runner.js when fresh, runner_entry.ts otherwise [PF-1].
      productionRunnerModule().pathname,
      ...tail,
    ],
  };
}

function nsLink(pid: number | "self", ns: string): string | null {
  const buf = new Uint8Array(64);
  const r = syscall("readlinkat", -100, cstr(`/proc/${pid}/ns/${ns}`), buf, buf.length);
  return r.ret > 0n ? new TextDecoder().decode(buf.subarray(0, Number(r.ret))) : null;
}

/** Pids whose PID namespace is `ns` (e.g. "pid:[4026532841]"). */
function pidsInNamespace(ns: string): number[] {
  return listNumericEntries("/proc").filter((pid) => nsLink(pid, "pid") === ns);
}

/** Kills whatever is left in `ns` and waits until nothing is; true when proven empty. */
async function drainNamespace(ns: string, budgetMs: number): Promise<boolean> {
  const end = Date.now() + budgetMs;
  for (;;) {
    const left = pidsInNamespace(ns);
    if (left.length === 0) return true;
    for (const pid of left) {
      const fd = syscall("pidfd_open", pid, 0);
      if (fd.ret < 0n) continue;
      // Re-check through the pinned identity before signalling.
      if (nsLink(pid, "pid") === ns) syscall("pidfd_send_signal", Number(fd.ret), SIGKILL, null, 0);
      closeFd(Number(fd.ret));
    }
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

type FirstFrame =
  | { kind: "attest"; frame: AttestationFrame }
  | { kind: "fail"; frame: SandboxFailureFrame };
const FIRST: (v: unknown) => { ok: true; frame: FirstFrame } | { ok: false } = (v) => {
  const a = AttestationFrameSchema.safeParse(v);
  if (a.success) return { ok: true, frame: { kind: "attest", frame: a.data } };
  const f = SandboxFailureFrameSchema.safeParse(v);
  if (f.success) return { ok: true, frame: { kind: "fail", frame: f.data } };
  return { ok: false };
};

let staleSwept = false;

/** What one runner execution produced, before it is shaped into a tool result. */
export interface RunnerOutcome {
  done: DoneFrame | null;
  /** The server's own proof that nothing is left (namespace empty / runner's sweep). */
  released: boolean;
  pidNamespace: boolean;
  /** Runner spawn → verified ready, ms (for the benchmark). */
  readyMs: number;
}

export interface ExecuteJobOptions extends RunnerDirs {
  /** Compile and extract jobs get the scratch read-only (it is their input). */
  job: CommandJob | CompileJob | ExtractJob;
  /** Kill the runner when it is still there this long after release. */
  backstopMs: number;
  signal?: AbortSignal;
  onOutput?: (d: OutputDelta) => void;
  /** A command job that gets the scratch read-only too (a skill's own directory [LC-3]). */
  readOnlyScratch?: boolean;
  /** Runner stderr (diagnostics of the runner itself): discarded in production. */
  stderr?: "null" | "inherit";
  /** A background Task streams for up to 30 min: no bound on frames or bytes in total. */
  unboundedStream?: boolean;
  /**
   * Called with the runner's pid once it is verified, before its job is released (tests: an
   * error thrown here stands for any unexpected failure between spawn and release).
   */
  onVerified?: (runnerPid: number) => void;
}

/**
 * Spawns one runner, verifies it, releases `job` to it and follows it to the
 * end. Throws `sandbox_unavailable` / `sandbox_attestation_failed` when the
 * runner could not be confined or verified (nothing ran).
 */
export async function executeInRunner(o: ExecuteJobOptions): Promise<RunnerOutcome> {
  const t0 = performance.now();
  const denoDir = sandboxDenoDir();
  const { exe, args } = runnerArgs(
    o,
    denoDir,
    o.job.kind === "compile" || o.job.kind === "extract" || o.readOnlyScratch === true,
  );
  const env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  if (denoDir !== null) env.DENO_DIR = denoDir;
  let child: Deno.ChildProcess;
  try {
    // [PF-2] Below the server's loop from its first instruction (stage 1 sets it again).
    child = spawnBelow({ executable: exe, args }, {
      clearEnv: true,
      env,
      cwd: "/",
      stdin: "piped",
      stdout: "piped",
      stderr: o.stderr ?? "null",
    }, SANDBOX_NICE_INCREMENT);
  } catch (err) {
    throw new AppError("sandbox_unavailable", `runner spawn failed: ${errorName(err)}`);
  }
  const stage1Pid = child.pid;
  const reader = new NdjsonReader(child.stdout, {
    maxLineBytes: RUNNER_LINE_MAX_BYTES,
    maxLines: o.unboundedStream ? Number.MAX_SAFE_INTEGER : 8192,
    maxTotalBytes: o.unboundedStream ? Number.MAX_SAFE_INTEGER : 8 * RUNNER_LINE_MAX_BYTES,
  });
  const writer = new NdjsonWriter(child.stdin, RUNNER_LINE_MAX_BYTES);
  let pidfd = -1;
  let reaped = false;
  const status = child.status.then((s) => {
    reaped = true;
    return s;
  });
  const hardKill = () => {
    if (reaped) return;
    // Stage 2 through its pinned pidfd, and stage 1 (whose death would take
    // stage 2 along through its parent-death signal anyway).
    if (pidfd >= 0) syscall("pidfd_send_signal", pidfd, SIGKILL, null, 0);
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  };
  const closeAll = async () => {
    await writer.close().catch(() => {});
    await reader.cancel().catch(() => {});
  };
  // The runner's memory cgroup (root, where the host offers one): stage 1 made it.
  let memDir: string | null = null;
  const refuse = (code: "sandbox_unavailable" | "sandbox_attestation_failed", d: string): never => {
    throw new AppError(code, d);
  };

  /** Reads, checks and pins the runner stage 1 started; refuses (throws) when it cannot. */
  async function verifyRunner(): Promise<{ ns: string | null; pidNamespace: boolean }> {
    const first = await reader.next(RUNNER_READY_TIMEOUT_MS, FIRST).catch((e: unknown) => {
      if (e instanceof AppError) return null;
      throw e;
    });
    if (first === null) return refuse("sandbox_unavailable", "runner gave no attestation");
    if (first.kind === "fail") {
      return refuse(
        "sandbox_unavailable",
        `runner step ${first.frame.step} errno ${first.frame.errno}`,
      );
    }
    // The runner is stage 1's only child (spawned from its main thread).
    const kids = (readProcText(`/proc/${stage1Pid}/task/${stage1Pid}/children`) ?? "").trim()
      .split(/\s+/).filter((x) => x !== "").map(Number);
    if (kids.length !== 1) return refuse("sandbox_attestation_failed", "runner not found");
    const pid = kids[0];
    const snap = readProcSnapshot(pid);
    if (snap === null) return refuse("sandbox_attestation_failed", "runner vanished");
    const root = selfIsRoot();
    const problems = attestationProblems(first.frame, snap, {
      pid,
      supervisorPid: stage1Pid,
      seccompFilters: selfSeccompFilters() + 1,
      requireEmptyBounding: selfHoldsCapabilities(),
      requireUnprivileged: root,
    });
    // As root the runner must have its own PID and mount namespaces.
    const ns = nsLink(pid, "pid_for_children");
    const pidNamespace = ns !== null && ns !== nsLink("self", "pid");
    if (root && !pidNamespace) problems.push("no own PID namespace");
    if (root && nsLink(pid, "mnt") === nsLink("self", "mnt")) {
      problems.push("no own mount namespace");
    }
    // Stage 1 lives on (it waits for stage 2): no thread of it may keep root
    // or a capability.
    if (root) {
      for (const tid of listNumericEntries(`/proc/${stage1Pid}/task`)) {
        const st = parseStatus(readProcText(`/proc/${stage1Pid}/task/${tid}/status`) ?? "");
        const ids = [
          ...(st.get("Uid") ?? "0").split(/\s+/),
          ...(st.get("Gid") ?? "0").split(/\s+/),
        ];
        if (ids.some((x) => !/^[1-9][0-9]*$/.test(x))) {
          problems.push(`stage 1 task ${tid}: root id`);
        }
        for (const f of ["CapEff", "CapPrm", "CapAmb"]) {
          if (!/^0+$/.test(st.get(f) ?? "")) problems.push(`stage 1 task ${tid}: ${f}`);
        }
      }
    }
    const cgroupDir = memDir;
    if (cgroupDir !== null) {
      const leaf = cgroupDir.slice(cgroupDir.lastIndexOf("/"));
      const mine = (readProcText(`/proc/${pid}/cgroup`) ?? "").split("\n").some((l) =>
        /(^|[:,])memory:|^0::/.test(l) && l.endsWith(leaf)
      );
      if (!mine) problems.push("not in its memory cgroup");
    }
    if (problems.length > 0) {
      return refuse("sandbox_attestation_failed", problems.join("; "));
    }
    const pinned = pinProcess(pid);
    if (pinned === null) {
      return refuse("sandbox_attestation_failed", "runner identity could not be pinned");
    }
    pidfd = pinned.pidfd;
    // [PF-2] Stage 2 started its own session, so its own autogroup: that group's weight, not only
    // its threads' nice, is what orders the command against the server (best effort;
    // sandbox/priority.ts).
    lowerAutogroupOf(pid, SANDBOX_NICE_INCREMENT);
    o.onVerified?.(pid);
    return { ns, pidNamespace };
  }

  // From the spawn to the release, whatever ends this call — a refusal or an error nobody
  // expected (a /proc read that failed, a bug) — ends the runner first: a runner left waiting
  // for its release would hold its caller, its slot and its processes until the server exits.
  let verified: { ns: string | null; pidNamespace: boolean };
  try {
    const memPlace = selfIsRoot() ? ownMemoryCgroup() : null;
    memDir = memPlace === null ? null : runnerCgroupDir(memPlace, stage1Pid);
    if (memPlace !== null && !staleSwept) {
      // Once per server: what a crashed predecessor left behind goes first.
      staleSwept = true;
      await sweepStaleRunnerCgroups(memPlace);
    }
    verified = await verifyRunner();
  } catch (err) {
    hardKill();
    await status;
    await closeAll();
    if (memDir !== null) await removeRunnerCgroup(memDir, RUNNER_RELEASE_TIMEOUT_MS);
    if (pidfd >= 0) closeFd(pidfd);
    pidfd = -1;
    throw err;
  }
  const { ns, pidNamespace } = verified;
  const readyMs = performance.now() - t0;

  const release: ReleaseFrame = { v: IPC_PROTOCOL_VERSION, type: "runner.release", job: o.job };
  let done: DoneFrame | null = null;
  const backstop = setTimeout(hardKill, o.backstopMs);
  const onAbort = () => {
    writer.send({ v: IPC_PROTOCOL_VERSION, type: "runner.kill" }).catch(() => {});
    // The runner gets the release budget to end everything itself.
    setTimeout(hardKill, RUNNER_RELEASE_TIMEOUT_MS);
  };
  try {
    await writer.send(release);
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener("abort", onAbort, { once: true });
    const decoders = {
      stdout: new TextDecoder("utf-8", { fatal: false }),
      stderr: new TextDecoder("utf-8", { fatal: false }),
    };
    const parse = parserOf(RunnerToServerSchema);
    for (;;) {
      const f = await reader.next(o.backstopMs + RUNNER_RELEASE_TIMEOUT_MS, parse);
      if (f === null) break;
      if (f.type === "runner.output") {
        if (o.onOutput) {
          const text = decoders[f.stream].decode(fromB64(f.data), { stream: true }).replace(
            ANSI,
            "",
          );
          if (text !== "") o.onOutput({ stream: f.stream, text });
        }
      } else {
        done = f;
      }
    }
  } catch (err) {
    // A protocol violation (or a write to a dead runner): kill and report no result.
    if (!(err instanceof AppError) && !(err instanceof Deno.errors.BrokenPipe)) {
      hardKill();
      await status;
      clearTimeout(backstop);
      throw err;
    }
    hardKill();
    done = null;
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
  }
  // The backstop stays armed until stage 1 is reaped: end of output is not the end of the runner.
  await status;
  clearTimeout(backstop);
  closeFd(pidfd);
  pidfd = -1;
  await closeAll();
  // Proof of release: with a PID namespace, nothing may be left in it (we kill
  // what is); without one, the runner's own sweep is all there is.
  let released = done?.released ?? false;
  if (pidNamespace && ns !== null) {
    released = (await drainNamespace(ns, RUNNER_RELEASE_TIMEOUT_MS)) && (done?.released ?? true);
    if (done === null) released = false;
  }
  // The cgroup must be empty to go: anything it still held is killed first.
  if (memDir !== null && !(await removeRunnerCgroup(memDir, RUNNER_RELEASE_TIMEOUT_MS))) {
    released = false;
  }
  return { done, released, pidNamespace, readyMs };
}

/** Runs one program in the runner sandbox; see runner_types.ts. */
export async function runCommand(opts: RunCommandOptions): Promise<CommandResult> {
  const bg = opts.background === true;
  const cwd = validateCommand(
    opts.argv,
    opts.cwd,
    opts.timeoutS,
    bg ? TASK_WALL_MAX_MS / 1000 : COMMAND_TIMEOUT_MAX_S,
  );
  const path = resolveProgram(opts.argv[0]);
  for (const d of [opts.scratchDir, opts.tmpDir]) {
    if (!d.startsWith("/")) invalid("scratch and tmp must be absolute");
  }
  checkCwd(opts.scratchDir, cwd);
  const releaseSlot = bg
    ? acquireBackgroundSlot(opts.runKey)
    : await acquireCommandSlot(opts.runKey, COMMAND_SLOT_WAIT_MS, opts.signal);
  try {
    handOverToSandbox(opts.scratchDir);
    handOverToSandbox(opts.tmpDir);
    const root = selfIsRoot();
    const home = root ? RUNNER_SCRATCH_MOUNT : opts.scratchDir;
    const tmp = root ? RUNNER_TMP_MOUNT : opts.tmpDir;
    const job: CommandJob = {
      kind: "command",
      path,
      argv: [...opts.argv],
      cwd,
      env: {
        PATH: RUNNER_PATH.join(":"),
        HOME: home,
        TMPDIR: tmp,
        LANG: "C.UTF-8",
        DENO_DIR: `${home}/.deno`,
        DENO_NO_UPDATE_CHECK: "1",
      },
      timeout_ms: opts.timeoutS * 1000,
      ...(bg ? { live_max_bytes: Number.MAX_SAFE_INTEGER } : {}),
    };
    const r = await executeInRunner({
      job,
      scratchDir: opts.scratchDir,
      tmpDir: opts.tmpDir,
      backstopMs: job.timeout_ms + RUNNER_RELEASE_TIMEOUT_MS,
      signal: opts.signal,
      onOutput: opts.onOutput,
      unboundedStream: bg,
    });
    return shapeResult(r);
  } finally {
    releaseSlot();
  }
}

const EMPTY: BoundedText = { text: "", total_bytes: 0, truncated: false };

function shapeResult(r: RunnerOutcome): CommandResult {
  const d = r.done;
  const text = (c: DoneFrame["stdout"] | undefined): BoundedText =>
    c === undefined ? EMPTY : boundedText(fromB64(c.head), fromB64(c.tail), c.total_bytes);
  let outcome: CommandOutcome;
  if (d === null || !r.released) outcome = "outcome_unknown";
  else if (d.ended === "spawn_failed") outcome = "outcome_unknown";
  else outcome = d.ended;
  return {
    outcome,
    exit_code: d?.exit_code ?? null,
    signal: d?.signal ?? null,
    duration_ms: d?.duration_ms ?? 0,
    stdout: text(d?.stdout),
    stderr: text(d?.stderr),
    pid_namespace: r.pidNamespace,
  };
}
