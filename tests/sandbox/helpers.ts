/** Shared set-up for sandbox tests: run roots, the probe entry command, a recording logger. */
import type { WorkerCommandSpec } from "../../runtime/worker/supervisor.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";
import type { Logger } from "../../runtime/log.ts";
import { O_CLOEXEC, syscall } from "../../sandbox/libc.ts";

/** The probe entry (same confinement as production), optionally with one injected fault. */
export function probeCommand(fault?: string) {
  return (runRoot: string, parentPid: number, denoDir: string | null): WorkerCommandSpec => ({
    executable: Deno.execPath(),
    args: [
      ...denoRunFlags(),
      new URL("./probe_worker.ts", import.meta.url).pathname,
      ...(fault ? ["--fault", fault] : []),
      "--run-root",
      runRoot,
      "--parent",
      String(parentPid),
      ...(denoDir ? ["--deno-dir", denoDir] : []),
    ],
  });
}

/** A script run with plain `deno run` (no confinement at all). */
export function scriptCommand(module: string, ...args: string[]) {
  return (): WorkerCommandSpec => ({
    executable: Deno.execPath(),
    args: [...denoRunFlags(), new URL(module, import.meta.url).pathname, ...args],
  });
}

export interface Sandbox {
  base: string;
  runRoot: string;
  cleanup(): void;
}

/** A private base dir holding a Run root and an `outside` dir next to it. */
export function makeSandboxDirs(): Sandbox {
  const base = Deno.makeTempDirSync({ prefix: "ab-sb-" });
  // World-readable on purpose: the Worker runs as `nobody`, and an EACCES
  // here must come from Landlock, not from file modes (the layer tests).
  Deno.chmodSync(base, 0o755);
  const runRoot = `${base}/run`;
  for (const d of ["", "/home", "/tmp", "/input", "/work", "/output"]) {
    Deno.mkdirSync(`${runRoot}${d}`);
    Deno.chmodSync(`${runRoot}${d}`, 0o755);
  }
  Deno.mkdirSync(`${base}/outside`);
  Deno.chmodSync(`${base}/outside`, 0o755);
  return {
    base,
    runRoot,
    cleanup: () => Deno.removeSync(base, { recursive: true }),
  };
}

export interface RecordingLogger extends Logger {
  events: Array<{ level: string; event: string; fields?: Record<string, unknown> }>;
}

export function recordingLogger(): RecordingLogger {
  const events: RecordingLogger["events"] = [];
  const rec = (level: string) => (event: string, fields?: Record<string, unknown>) =>
    events.push({ level, event, fields });
  return {
    events,
    info: rec("info"),
    warn: rec("warn"),
    error: rec("error"),
    flush() {},
    close() {},
  };
}

/** Accepts any value as a frame (tests check the shape themselves). */
export const anyFrame = (v: unknown) => ({
  ok: true as const,
  frame: v as Record<string, unknown>,
});

/**
 * Listens on an abstract unix socket in THIS (unconfined) process, outside the
 * Worker's Landlock domain; returns the name and a closer.
 */
export function listenAbstract(): { name: string; close(): void } {
  const name = `ab-probe-${crypto.randomUUID()}`;
  const s = syscall("socket", 1, /* AF_UNIX */ 1 /* SOCK_STREAM */ | O_CLOEXEC, 0);
  if (s.ret < 0n) throw new Error(`socket errno ${s.errno}`);
  const fd = Number(s.ret);
  const addr = new Uint8Array(110);
  new DataView(addr.buffer).setUint16(0, 1, true);
  addr.set(new TextEncoder().encode(name), 3);
  const b = syscall("bind", fd, addr, 3 + name.length);
  const l = syscall("listen", fd, 4);
  if (b.ret !== 0n || l.ret !== 0n) {
    syscall("close", fd);
    throw new Error(`bind/listen errno ${b.errno || l.errno}`);
  }
  return { name, close: () => void syscall("close", fd) };
}
