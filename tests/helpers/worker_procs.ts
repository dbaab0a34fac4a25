/**
 * The server's Worker processes as the kernel shows them (/proc), for tests
 * that kill, stop or inspect a real confined Worker: its pid by Run, its
 * state, and the bytes waiting unread in its stdin pipe.
 */
import { assert, assertEquals } from "./assert.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { closeFd, cstr, O_NONBLOCK, O_RDONLY, syscall } from "../../sandbox/libc.ts";

/** How long `waitFor` waits for a state the server reaches on its own. */
export const STATE_WAIT_MS = 20_000;

/** Direct children of `pid` (all threads), read from /proc. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    const c = readProcText(`/proc/${pid}/task/${t.name}/children`) ?? "";
    for (const x of c.trim().split(/\s+/)) if (x) out.push(Number(x));
  }
  return out;
}

/** The server's Worker for `runId` (its cwd is the Run root), or null. */
export function workerOfRun(serverPid: number, runId: string): number | null {
  for (const pid of childrenOf(serverPid)) {
    try {
      if (Deno.readLinkSync(`/proc/${pid}/cwd`).endsWith(`/runs/${runId}`)) return pid;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return null;
}

/** True once `pid` has exited (zombie or reaped): its pipe ends are closed. */
export function exited(pid: number): boolean {
  const st = readProcText(`/proc/${pid}/status`);
  return st === null || /^State:\s+[ZX]/m.test(st);
}

/** True once `pid` is stopped by a signal. */
export function stopped(pid: number): boolean {
  return /^State:\s+T/m.test(readProcText(`/proc/${pid}/status`) ?? "");
}

const AT_FDCWD = -100;
const FIONREAD = 0x541b;

/** Bytes waiting unread in the pipe that is `pid`'s stdin. */
export function stdinPending(pid: number): number {
  const path = cstr(`/proc/${pid}/fd/0`);
  const fd = Number(syscall("openat", AT_FDCWD, path, O_RDONLY | O_NONBLOCK).ret);
  assert(fd >= 0, "the Worker's stdin can be opened");
  try {
    const n = new Uint8Array(4);
    assertEquals(syscall("ioctl", fd, FIONREAD, n).ret, 0n);
    return new DataView(n.buffer).getInt32(0, true);
  } finally {
    closeFd(fd);
  }
}

/**
 * Polls `ok` (a state, never a time) until it holds; fails after `timeoutMs`. The one polling
 * loop of the suite: tests wait on states through it instead of writing their own.
 */
export async function waitFor(
  what: string,
  ok: () => boolean | Promise<boolean>,
  timeoutMs = STATE_WAIT_MS,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
