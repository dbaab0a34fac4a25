/**
 * Worker supervisor: spawns one confined Worker per Run, refuses it unless
 * its sandbox is verified, and owns the process until it is reaped and its
 * Run root removed [SB-1, SB-4, SB-6].
 *
 * ── Interface (for the Run service) ───────────────────────────────────────
 *   const w = await spawnConfinedWorker({ runRoot, deadlineMs, log, parseFrame });
 *     // resolves only after the attestation frame AND /proc agree (every
 *     // thread: NoNewPrivs 1, Seccomp 2, one filter, no capabilities, own
 *     // session/pgrp, PPid = us). Rejects with AppError:
 *     //   sandbox_unavailable        a confinement step failed / no attestation
 *     //   sandbox_attestation_failed the frame or /proc disagree (impostor)
 *     // and in both cases the child is already killed and reaped.
 *   w.pid, w.startTime, w.attestation          verified facts
 *   await w.send(frame)        one bounded NDJSON line; ≤ IPC_ROUNDS_MAX sends;
 *                              worker_crashed when the Worker is gone
 *   await w.receive(timeoutMs?) next frame validated by `parseFrame`, null at
 *                              EOF; a violation kills the Worker and rejects
 *                              with worker_protocol_error
 *   await w.endInput()         closes stdin (EOF) — the Worker should then exit
 *   await w.cancel(graceMs?)   closes stdin, kills after the grace
 *   await w.kill(reason)       SIGKILL through a pidfd (no pid-reuse race)
 *   const exit = await w.exited  { code, signal, reason, errorCode } after reap,
 *                                process-group check and Run-root removal
 * Frames on the wire are `{ v: IPC_PROTOCOL_VERSION, type, ... }`; the caller
 * supplies the zod-backed parser for work frames (worker_frames.ts).
 *
 * What this file enforces: the Worker starts with an empty environment plus
 * fixed variables, only fds 0–2, cwd = Run root; no work frame can be sent
 * before verification; a deadline kills; the Run tree is watched at most once
 * per RUN_TREE_CHECK_INTERVAL_MS against RUN_TREE_* bounds and overruns kill;
 * kills go to the verified process identity (pidfd opened after the start
 * time matched); the Run root is removed once the process group is gone.
 */
import type { ErrorCode } from "../errors.ts";
import { AppError } from "../errors.ts";
import {
  IPC_ATTESTATION_TIMEOUT_MS,
  IPC_REPLY_TIMEOUT_MS,
  IPC_ROUNDS_MAX,
  RUN_TREE_CHECK_INTERVAL_MS,
  SANDBOX_NICE_INCREMENT,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import {
  type AttestationFrame,
  AttestationFrameSchema,
  NdjsonReader,
  NdjsonWriter,
  protocolError,
  type SandboxFailureFrame,
  SandboxFailureFrameSchema,
} from "../protocol/ipc.ts";
import {
  attestationProblems,
  pinProcess,
  readProcSnapshot,
  selfHoldsCapabilities,
  selfIsRoot,
  selfSeccompFilters,
} from "../../sandbox/attestation.ts";
import { denoRunFlags, sandboxIdentityArgs } from "../../sandbox/worker_entry.ts";
import { productionStage2Entry } from "./bundle.ts";
import {
  AT_FDCWD,
  AT_SYMLINK_NOFOLLOW,
  closeFd,
  cstr,
  EEXIST,
  S_IFDIR,
  S_IFMT,
  statx,
  syscall,
} from "../../sandbox/libc.ts";
import { spawnBelow } from "../../sandbox/priority.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { measureRunTree, runTreeOverLimit } from "./run_tree.ts";
import { errorName } from "../log.ts";

/** Why a Worker ended. */
export type WorkerExitReason =
  | "exited"
  | "deadline"
  | "tree_limit"
  | "protocol"
  | "cancelled"
  | "killed";

export interface WorkerExit {
  code: number | null;
  signal: string | null;
  reason: WorkerExitReason;
  /** The fixed code a Run should fail with, or null for a clean exit 0. */
  errorCode: ErrorCode | null;
}

export type FrameParser<T> = (value: unknown) => { ok: true; frame: T } | { ok: false };

/** How the Worker is started; tests point it at a probe entry that uses the same confinement. */
export interface WorkerCommandSpec {
  executable: string;
  args: string[];
}

export interface SpawnWorkerOptions<T> {
  /** Existing Run root (absolute); read-only for the Worker, removed at terminal. */
  runRoot: string;
  /**
   * Wall-clock bound from attestation to kill. A pooled Worker has none until
   * `claim` arms it for its Run. @default none
   */
  deadlineMs?: number;
  log: Logger;
  /** Validates inbound work frames. */
  parseFrame: FrameParser<T>;
  /** Remove the Run root after the Worker is gone. @default true */
  removeRunRoot?: boolean;
  /** Worker stderr: discarded in production. @default "null" */
  stderr?: "null" | "inherit";
  /** @default the production `worker` command of this executable */
  command?: (runRoot: string, parentPid: number, denoDir: string | null) => WorkerCommandSpec;
  /** @default IPC_ATTESTATION_TIMEOUT_MS */
  attestationTimeoutMs?: number;
}

export interface WorkerHandle<T> {
  readonly pid: number;
  readonly startTime: bigint;
  readonly attestation: AttestationFrame;
  send(frame: object): Promise<void>;
  receive(timeoutMs?: number): Promise<T | null>;
  /** Closes the Worker's stdin (end of input) without cancelling. */
  endInput(): Promise<void>;
  cancel(graceMs?: number): Promise<WorkerExit>;
  kill(reason: WorkerExitReason): Promise<WorkerExit>;
  readonly exited: Promise<WorkerExit>;
  /**
   * Hands a pooled Worker to its Run: renames its root to `runRoot` (which must
   * not exist; same filesystem, so the Worker's cwd and Landlock rules follow
   * the directory), then watches and removes that root and arms the deadline.
   * On failure the Worker is killed and the error rethrown.
   */
  claim(runRoot: string, deadlineMs: number): void;
}

/** Where the pinned Deno keeps its module cache (passed explicitly to the Worker). */
export function resolveDenoDir(): string | null {
  if (Deno.build.standalone) return null;
  const env = Deno.env.get("DENO_DIR");
  if (env?.startsWith("/")) return env;
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  if (xdg?.startsWith("/")) return `${xdg}/deno`;
  const home = Deno.env.get("HOME");
  return home?.startsWith("/") ? `${home}/.cache/deno` : null;
}

/**
 * Where a root server keeps the module cache its sandboxes read (see
 * sandboxDenoDir): in RAM when /dev/shm is a tmpfs [PF-4], else on disk.
 */
export const SANDBOX_DENO_DIR = "/dev/shm/agent-builder-deno-cache";
export const SANDBOX_DENO_DIR_ON_DISK = "/var/tmp/agent-builder-deno-cache";

/** Whether the mount at exactly `mountPoint` is a tmpfs (the last mount there wins). */
export function isTmpfsMount(mountPoint: string, mounts: string): boolean {
  let tmpfs = false;
  for (const line of mounts.split("\n")) {
    const [, point, type] = line.split(" ");
    if (point === mountPoint) tmpfs = type === "tmpfs";
  }
  return tmpfs;
}

let chosenCacheDir: string | null = null;

/** SANDBOX_DENO_DIR on a tmpfs, else the one on disk (decided once per process). */
function sandboxCacheDir(): string {
  if (chosenCacheDir !== null) return chosenCacheDir;
  let mounts = "";
  try {
    // Through the syscall: Deno refuses /proc/self/* to a server without --allow-all.
    mounts = readProcText("/proc/self/mounts") ?? "";
  } catch {
    // Unreadable or over the read bound: the disk location.
  }
  chosenCacheDir = isTmpfsMount("/dev/shm", mounts) ? SANDBOX_DENO_DIR : SANDBOX_DENO_DIR_ON_DISK;
  return chosenCacheDir;
}

/**
 * The module cache a sandbox (Worker, runner) uses when not compiled. A root
 * server's own cache lives below /root (0700), which the sandbox uid cannot
 * search: stage 2 would transpile every module again on each start. So a
 * root server gives its sandboxes a cache in a searchable place: stage 1
 * (still root) fills it as it loads the same module graph, stage 2 (the
 * sandbox uid) reads it. It is used only when it is a real directory owned by
 * root and not writable by group or others (/dev/shm and /var/tmp are
 * world-writable, so anything else may have been planted); otherwise the
 * server's own cache.
 *
 * [PF-4] It lives on a tmpfs when there is one: every Worker's stage 1 is the
 * only process with Deno's cache databases (SQLite, WAL mode) open, so each
 * start truncates and rewrites their three 32 KiB WAL indexes (-shm) — about
 * 96 KiB of page writes per Worker on a disk, charged to the server when it
 * reaps the Worker, i.e. more than the Turn's own database writes. In RAM
 * they are never written to storage; the cache is derived data, refilled
 * after a reboot by the first start.
 */
export function sandboxDenoDir(): string | null {
  const own = resolveDenoDir();
  if (own === null || Number(syscall("getuid").ret) !== 0) return own;
  // Through the syscalls: Deno refuses /dev/* paths to a server without --allow-all.
  const dir = sandboxCacheDir();
  const made = syscall("mkdirat", AT_FDCWD, cstr(dir), 0o755);
  if (made.ret !== 0n && made.errno !== EEXIST) return own;
  const st = statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW);
  if (!st.ok || (st.st.mode & S_IFMT) !== S_IFDIR || st.st.uid !== 0) return own;
  return (st.st.mode & 0o022) === 0 ? dir : own;
}

/** The production command line: this executable in `worker` mode (stage 1). */
export function productionWorkerCommand(
  runRoot: string,
  parentPid: number,
  denoDir: string | null,
): WorkerCommandSpec {
  const tail = ["--run-root", runRoot, "--parent", String(parentPid)];
  if (Deno.build.standalone) return { executable: Deno.execPath(), args: ["worker", ...tail] };
  // dist/worker.js when fresh (both stages run it), main.ts otherwise [PF-1].
  const entry = productionStage2Entry();
  const dd = denoDir === null ? [] : ["--deno-dir", denoDir];
  return {
    executable: Deno.execPath(),
    args: [...denoRunFlags(), entry.module.pathname, ...entry.argsPrefix, ...tail, ...dd],
  };
}

/** The fixed code a Worker's ending maps to (exported for the table test). */
export function exitCodeFor(
  reason: WorkerExitReason,
  code: number | null,
  signal: string | null = null,
): ErrorCode | null {
  switch (reason) {
    case "deadline":
      return "model_turn_deadline";
    case "tree_limit":
      return "worker_resource_limit";
    case "protocol":
      return "worker_protocol_error";
    case "cancelled":
      return "run_cancelled";
    case "killed":
      return "worker_crashed";
    case "exited":
      // The kernel enforces RLIMIT_CPU / RLIMIT_FSIZE with these signals.
      if (signal === "SIGXCPU" || signal === "SIGXFSZ") return "worker_resource_limit";
      return code === 0 ? null : "worker_crashed";
    default: {
      const never: never = reason;
      return never;
    }
  }
}

const SIGKILL = 9;

function killChild(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch (err) {
    if (!(err instanceof TypeError)) throw err; // TypeError: already exited
  }
}

/** Writes/cancels on a pipe whose other end is gone fail; nothing else is ignored. */
function ignoreClosedPipe(err: unknown): void {
  if (err instanceof Deno.errors.BrokenPipe || err instanceof TypeError) return;
  throw err;
}
type FirstFrame =
  | { kind: "attest"; frame: AttestationFrame }
  | { kind: "fail"; frame: SandboxFailureFrame };
const FIRST_FRAME: FrameParser<FirstFrame> = (v) => {
  const a = AttestationFrameSchema.safeParse(v);
  if (a.success) return { ok: true, frame: { kind: "attest", frame: a.data } };
  const f = SandboxFailureFrameSchema.safeParse(v);
  if (f.success) return { ok: true, frame: { kind: "fail", frame: f.data } };
  return { ok: false };
};

/** Spawns a Worker and returns it only once its confinement is verified. */
export async function spawnConfinedWorker<T>(
  opts: SpawnWorkerOptions<T>,
): Promise<WorkerHandle<T>> {
  if (!opts.runRoot.startsWith("/")) throw new AppError("sandbox_unavailable", "relative run root");
  const denoDir = sandboxDenoDir();
  const base = (opts.command ?? productionWorkerCommand)(opts.runRoot, Deno.pid, denoDir);
  // SECURITY: a root server's Worker switches to the unprivileged sandbox uid
  // in stage 1 (which refuses to continue as root without one) [SB-7].
  const spec = { ...base, args: [...base.args, ...sandboxIdentityArgs()] };
  const env: Record<string, string> = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" };
  if (denoDir !== null) env.DENO_DIR = denoDir;
  let child: Deno.ChildProcess;
  try {
    // [PF-2] Below the server's loop from its first instruction (stage 1 sets it again).
    child = spawnBelow(spec, {
      clearEnv: true,
      env,
      cwd: opts.runRoot,
      stdin: "piped",
      stdout: "piped",
      stderr: opts.stderr ?? "null",
    }, SANDBOX_NICE_INCREMENT);
  } catch (err) {
    // NotCapable: this process may not run programs (no --allow-run).
    if (
      err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied ||
      err instanceof Deno.errors.NotCapable
    ) {
      throw new AppError("sandbox_unavailable", `spawn failed: ${err.name}`);
    }
    throw err;
  }
  const pid = child.pid;
  const reader = new NdjsonReader(child.stdout);
  const writer = new NdjsonWriter(child.stdin);
  const status = child.status;
  let pidfd = -1;
  let reason: WorkerExitReason | null = null;

  let reaped = false;
  // SECURITY: the signal goes through a pidfd opened after the identity
  // (pid + start time) was verified, so a recycled pid can never be hit.
  const hardKill = (why: WorkerExitReason) => {
    if (reaped) return;
    reason ??= why;
    if (pidfd >= 0) syscall("pidfd_send_signal", pidfd, SIGKILL, null, 0);
    else killChild(child);
  };
  const refuse = async (code: ErrorCode, detail: string): Promise<never> => {
    killChild(child);
    const st = await status;
    // Both pipes are released here: a refused Worker must not cost the
    // Control Plane a descriptor per attempt.
    await writer.close().catch(ignoreClosedPipe);
    await reader.cancel().catch(ignoreClosedPipe);
    opts.log.warn("worker_refused", { code, pid, detail, exit: st.code, signal: st.signal });
    throw new AppError(code, detail);
  };

  type First = FirstFrame | { kind: "error"; detail: string };
  const first: First = await reader.next(
    opts.attestationTimeoutMs ?? IPC_ATTESTATION_TIMEOUT_MS,
    FIRST_FRAME,
  ).then(
    (f): First => f ?? { kind: "error", detail: "worker exited before attestation" },
    (err: unknown): First => {
      if (!(err instanceof AppError)) throw err;
      return { kind: "error", detail: `no attestation: ${err.detail}` };
    },
  );
  if (first.kind === "error") return refuse("sandbox_unavailable", first.detail);
  if (first.kind === "fail") {
    return refuse("sandbox_unavailable", `step ${first.frame.step} errno ${first.frame.errno}`);
  }
  const snap = readProcSnapshot(pid);
  if (snap === null) return refuse("sandbox_attestation_failed", "process vanished");
  const problems = attestationProblems(first.frame, snap, {
    pid,
    supervisorPid: Deno.pid,
    seccompFilters: selfSeccompFilters() + 1,
    requireEmptyBounding: selfHoldsCapabilities(),
    requireUnprivileged: selfIsRoot(),
  });
  if (problems.length > 0) return refuse("sandbox_attestation_failed", problems.join("; "));
  const pinned = pinProcess(pid);
  if (pinned === null) return refuse("sandbox_attestation_failed", "identity could not be pinned");
  pidfd = pinned.pidfd;
  opts.log.info("worker_attested", { pid, threads: snap.tasks.size });

  let root = opts.runRoot;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const armDeadline = (ms: number) => {
    clearTimeout(deadline);
    deadline = setTimeout(() => hardKill("deadline"), ms);
  };
  if (opts.deadlineMs !== undefined) armDeadline(opts.deadlineMs);
  let scanning = false;
  const watch = setInterval(() => {
    if (scanning) return;
    scanning = true;
    const measured = root;
    measureRunTree(measured).then((usage) => {
      if (runTreeOverLimit(usage)) hardKill("tree_limit");
    }, (err: unknown) => {
      // A scan that raced `claim`'s rename measured a path that moved: the next one counts.
      if (measured !== root) return;
      // Fail closed: a Run tree that cannot be measured ends the Worker.
      opts.log.error("run_tree_watch_failed", { pid, error: errorName(err) });
      hardKill("tree_limit");
    }).finally(() => scanning = false);
  }, RUN_TREE_CHECK_INTERVAL_MS);

  const exited: Promise<WorkerExit> = (async () => {
    const st = await status;
    reaped = true;
    clearTimeout(deadline);
    clearInterval(watch);
    closeFd(pidfd);
    pidfd = -1;
    // The process group is gone with its leader: stage 1 never forks and stage
    // 2's seccomp filter denies every process-creating call, so the group
    // (pgrp == pid, verified at attestation) never had another member.
    // Release both pipes whatever ended the Worker (a kill leaves stdin open).
    await writer.close().catch(ignoreClosedPipe);
    await reader.cancel().catch(ignoreClosedPipe);
    if (opts.removeRunRoot ?? true) {
      await Deno.remove(root, { recursive: true }).catch((err: unknown) => {
        // Already gone is fine; anything else is reported, and the exit still resolves
        // so the Run reaches its terminal state.
        if (!(err instanceof Deno.errors.NotFound)) {
          opts.log.error("run_root_cleanup_failed", { pid, error: errorName(err) });
        }
      });
    }
    const r = reason ?? "exited";
    const exit: WorkerExit = {
      code: st.signal === null ? st.code : null,
      signal: st.signal,
      reason: r,
      errorCode: exitCodeFor(r, st.signal === null ? st.code : null, st.signal),
    };
    opts.log.info("worker_exited", { pid, reason: r, code: exit.code, signal: exit.signal });
    return exit;
  })();

  let sends = 0;
  return {
    pid,
    startTime: pinned.startTime,
    attestation: first.frame,
    exited,
    async send(frame) {
      if (++sends > IPC_ROUNDS_MAX) {
        hardKill("protocol");
        throw protocolError("rounds exceeded");
      }
      // Reaped: its pipes are already released, so there is nothing to write to.
      if (reaped) throw new AppError("worker_crashed", "worker already exited");
      try {
        await writer.send(frame);
      } catch (err) {
        if (!(err instanceof Deno.errors.BrokenPipe)) throw err;
        throw new AppError("worker_crashed", "worker stdin closed");
      }
    },
    async receive(timeoutMs = IPC_REPLY_TIMEOUT_MS) {
      try {
        return await reader.next(timeoutMs, opts.parseFrame);
      } catch (err) {
        if (err instanceof AppError) hardKill("protocol");
        throw err;
      }
    },
    async endInput() {
      await writer.close().catch(ignoreClosedPipe);
    },
    async cancel(graceMs = 1000) {
      reason ??= "cancelled";
      await writer.close().catch(ignoreClosedPipe);
      const t = setTimeout(() => hardKill("cancelled"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(t);
      }
    },
    kill(why) {
      hardKill(why);
      return exited;
    },
    claim(runRoot, deadlineMs) {
      if (reaped) throw new AppError("worker_crashed", "worker already exited");
      try {
        // Synchronous: no watch scan starts between the rename and the assignment.
        Deno.renameSync(root, runRoot);
      } catch (err) {
        hardKill("killed");
        throw err;
      }
      root = runRoot;
      armDeadline(deadlineMs);
    },
  };
}
