/** Shared set-up for sandbox tests: run roots, the probe entry command, a recording logger. */
import type { WorkerCommandSpec } from "../../runtime/worker/supervisor.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";
import type { Logger } from "../../runtime/log.ts";

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
  Deno.chmodSync(base, 0o700);
  const runRoot = `${base}/run`;
  for (const d of ["", "/home", "/tmp", "/input", "/work", "/output"]) {
    Deno.mkdirSync(`${runRoot}${d}`, { mode: 0o700 });
  }
  Deno.mkdirSync(`${base}/outside`, { mode: 0o700 });
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
