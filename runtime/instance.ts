/**
 * Single instance per home [OP-2]: an exclusive, non-blocking flock on
 * `.runtime/control-plane/lock` held for the life of the server, plus a pid
 * record naming the holder by pid *and* process start time, so nothing ever
 * signals a recycled pid.
 */
import { AppError } from "./errors.ts";
import { checkManagedPath, ensurePrivateDir, writePrivateFileAtomic } from "./path_safety.ts";
import {
  closeFd,
  cstr,
  EWOULDBLOCK,
  O_CLOEXEC,
  O_CREAT,
  O_NOFOLLOW,
  O_RDWR,
  syscall,
} from "../sandbox/libc.ts";
import { readProcText } from "../sandbox/procfs.ts";
import { INSTANCE_LOCK_RETRY_MS, INSTANCE_LOCK_RETRY_STEP_MS } from "./limits.ts";

const LOCK_EX = 2;
const LOCK_NB = 4;

export interface PidRecord {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. */
  start_ticks: number;
}

/** Reads a process's start time; null when the process does not exist. */
export function processStartTicks(pid: number): number | null {
  const stat = readProcText(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // comm (field 2) may contain spaces and parens; fields after the last ')' are fixed.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(rest[19]);
}

export interface InstanceLock {
  release(): void;
}

/**
 * Takes the home's instance lock, retrying a contended lock for at most
 * INSTANCE_LOCK_RETRY_MS. Throws AppError("instance_locked") when another
 * process holds it.
 */
export function acquireInstanceLock(root: string): InstanceLock {
  const dir = ensurePrivateDir(root, ".runtime/control-plane");
  checkManagedPath(root, ".runtime/control-plane/lock", "file", true);
  const r = syscall(
    "openat",
    -100,
    cstr(`${dir}/lock`),
    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
    0o600,
  );
  if (r.ret < 0n) throw new AppError("unsafe_path", `lock open errno ${r.errno}`);
  const fd = Number(r.ret);
  const deadline = Date.now() + INSTANCE_LOCK_RETRY_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const l = syscall("flock", fd, LOCK_EX | LOCK_NB);
    if (l.ret === 0n) break;
    if (l.errno !== EWOULDBLOCK) {
      closeFd(fd);
      throw new AppError("unsafe_path", `flock errno ${l.errno}`);
    }
    if (Date.now() >= deadline) {
      closeFd(fd);
      throw new AppError("instance_locked");
    }
    Atomics.wait(pause, 0, 0, INSTANCE_LOCK_RETRY_STEP_MS);
  }
  const record: PidRecord = { pid: Deno.pid, start_ticks: processStartTicks(Deno.pid) ?? 0 };
  writePrivateFileAtomic(
    root,
    ".runtime/control-plane/server.pid",
    new TextEncoder().encode(JSON.stringify(record) + "\n"),
  );
  return {
    release() {
      try {
        Deno.removeSync(`${dir}/server.pid`);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
      closeFd(fd);
    },
  };
}

/**
 * Whether a live server holds this home: the lock is held by someone else.
 * Used by `restore` to refuse while serving.
 */
export function isHomeServed(root: string): boolean {
  try {
    const lock = acquireInstanceLock(root);
    lock.release();
    return false;
  } catch (err) {
    if (err instanceof AppError && err.code === "instance_locked") return true;
    throw err;
  }
}

/** Reads and validates the pid record: returns it only when that exact process is alive. */
export function readLivePidRecord(root: string): PidRecord | null {
  if (!checkManagedPath(root, ".runtime/control-plane/server.pid", "file", true)) return null;
  const text = Deno.readTextFileSync(`${root}/.runtime/control-plane/server.pid`);
  const rec = JSON.parse(text) as PidRecord;
  if (!Number.isSafeInteger(rec.pid) || rec.pid <= 1) return null;
  const ticks = processStartTicks(rec.pid);
  return ticks !== null && ticks === rec.start_ticks ? rec : null;
}
