/**
 * The runner's memory cgroup [EX-2]: "a 4 GiB memory cgroup where the host
 * offers one". RLIMIT_DATA bounds each process; the cgroup bounds the
 * command as a whole (128 processes × 4 GiB would otherwise be allowed).
 *
 * Where: a child of the cgroup this process is in, named
 * `agent-builder-runner-<stage-1 pid>`, in the cgroup v1 `memory` hierarchy
 * (/sys/fs/cgroup/memory) or the v2 unified hierarchy (/sys/fs/cgroup) when
 * its parent enables the memory controller. Stage 1 (root, before the
 * capability drop) creates it, sets the limit (v1: limit_in_bytes and, when
 * swap accounting exists, memsw.limit_in_bytes; v2: memory.max and
 * memory.swap.max 0) and moves itself in; stage 2 and the command inherit
 * it and cannot leave (the sandbox uid cannot write cgroup files). The
 * server removes it once the runner is gone, killing anything still listed.
 *
 * What this file enforces: a host that offers memory cgroups gets one per
 * runner, or the runner does not start (a failed write is a failure, never a
 * silent skip); a host without them is reported as such (`offered: false`).
 * Raw syscalls only: stage 1 has no Deno file permissions.
 */
import { COMMAND_MEMORY_CGROUP_BYTES } from "../runtime/limits.ts";
import { closeFd, cstr, O_CLOEXEC, O_DIRECTORY, O_RDONLY, O_WRONLY, syscall } from "./libc.ts";
import { readProcText } from "./procfs.ts";

export const CGROUP_NAME_PREFIX = "agent-builder-runner-";
const AT_REMOVEDIR = 0x200;
const EEXIST = 17;

export interface MemoryCgroupPlace {
  version: 1 | 2;
  /** The directory of the cgroup this process is in. */
  parent: string;
}

/** Where this process's memory cgroup lives, or null when the host offers none. */
export function ownMemoryCgroup(): MemoryCgroupPlace | null {
  const text = readProcText("/proc/self/cgroup") ?? "";
  const v1 = /^\d+:(?:[^:\n]*,)?memory(?:,[^:\n]*)?:(\/[^\n]*)$/m.exec(text);
  if (v1 && isDir("/sys/fs/cgroup/memory")) {
    return { version: 1, parent: `/sys/fs/cgroup/memory${v1[1] === "/" ? "" : v1[1]}` };
  }
  const v2 = /^0::(\/[^\n]*)$/m.exec(text);
  if (v2) {
    const parent = `/sys/fs/cgroup${v2[1] === "/" ? "" : v2[1]}`;
    const ctl = readProcText(`${parent}/cgroup.subtree_control`) ?? "";
    if (/\bmemory\b/.test(ctl)) return { version: 2, parent };
  }
  return null;
}

function isDir(path: string): boolean {
  const o = syscall("openat", -100, cstr(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (o.ret < 0n) return false;
  closeFd(Number(o.ret));
  return true;
}

function writeFile(path: string, text: string): number {
  const o = syscall("openat", -100, cstr(path), O_WRONLY | O_CLOEXEC, 0);
  if (o.ret < 0n) return o.errno;
  const bytes = new TextEncoder().encode(text);
  const w = syscall("write", Number(o.ret), bytes, bytes.length);
  closeFd(Number(o.ret));
  return w.ret === BigInt(bytes.length) ? 0 : (w.errno || 5);
}

export type JoinResult =
  | { ok: true; offered: false }
  | { ok: true; offered: true; dir: string }
  | { ok: false; step: string; errno: number };

/** The runner cgroup of stage 1 `pid` below `place`. */
export function runnerCgroupDir(place: MemoryCgroupPlace, pid: number): string {
  return `${place.parent}/${CGROUP_NAME_PREFIX}${pid}`;
}

/** Stage 1: creates the runner's cgroup, sets the limit, moves this process in. */
export function joinRunnerMemoryCgroup(): JoinResult {
  const place = ownMemoryCgroup();
  if (place === null) return { ok: true, offered: false };
  const pid = Number(syscall("getpid").ret);
  const dir = runnerCgroupDir(place, pid);
  const mk = syscall("mkdirat", -100, cstr(dir), 0o755);
  if (mk.ret !== 0n && mk.errno !== EEXIST) {
    return { ok: false, step: "cgroup_mkdir", errno: mk.errno };
  }
  const limit = String(COMMAND_MEMORY_CGROUP_BYTES);
  const writes: Array<[string, string, boolean]> = place.version === 1
    ? [
      ["memory.limit_in_bytes", limit, true],
      // Swap accounting exists only when the kernel was booted with it.
      ["memory.memsw.limit_in_bytes", limit, false],
    ]
    : [["memory.max", limit, true], ["memory.swap.max", "0", false]];
  for (const [file, value, required] of writes) {
    const e = writeFile(`${dir}/${file}`, value);
    if (e !== 0 && (required || e !== 2 /* ENOENT */)) {
      return { ok: false, step: `cgroup_${file.replace(/\W/g, "_").slice(0, 20)}`, errno: e };
    }
  }
  const e = writeFile(`${dir}/cgroup.procs`, String(pid));
  if (e !== 0) return { ok: false, step: "cgroup_join", errno: e };
  return { ok: true, offered: true, dir };
}

/** Pids listed in a cgroup (empty when it is gone). */
export function cgroupPids(dir: string): number[] {
  return (readProcText(`${dir}/cgroup.procs`) ?? "").split("\n").filter((l) => /^\d+$/.test(l))
    .map(Number);
}

/** Server side: kills what the cgroup still holds and removes it; true when it is gone. */
export async function removeRunnerCgroup(dir: string, budgetMs: number): Promise<boolean> {
  const end = Date.now() + budgetMs;
  for (;;) {
    const r = syscall("unlinkat", -100, cstr(dir), AT_REMOVEDIR);
    if (r.ret === 0n || r.errno === 2 /* ENOENT */) return true;
    for (const pid of cgroupPids(dir)) {
      const fd = syscall("pidfd_open", pid, 0);
      if (fd.ret < 0n) continue;
      syscall("pidfd_send_signal", Number(fd.ret), 9, null, 0);
      closeFd(Number(fd.ret));
    }
    if (Date.now() > end) return false;
    await new Promise((res) => setTimeout(res, 20));
  }
}

/**
 * Removes runner cgroups left by a server that died (their stage 1 is gone),
 * killing anything they still hold. A cgroup whose stage-1 pid exists is
 * left alone (a live runner of this or another server, or a reused pid).
 */
export async function sweepStaleRunnerCgroups(place: MemoryCgroupPlace): Promise<number> {
  let removed = 0;
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(place.parent)];
  } catch {
    return 0;
  }
  for (const e of entries) {
    const m = new RegExp(`^${CGROUP_NAME_PREFIX}(\\d+)$`).exec(e.name);
    if (!e.isDirectory || m === null) continue;
    if (readProcText(`/proc/${m[1]}/stat`) !== null) continue;
    if (await removeRunnerCgroup(`${place.parent}/${e.name}`, 1000)) removed++;
  }
  return removed;
}
