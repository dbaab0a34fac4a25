/**
 * Doctor's end-to-end sandbox check [PK-1, PK-5]: spawns one real Worker
 * through the production command and supervisor, and reports whether it
 * reached verified confinement (attestation + /proc on every thread), how
 * long that took, and how many threads were checked. No work is sent; the
 * Worker is killed and reaped and its probe Run root removed.
 *
 * What this file enforces: the report is what actually happened to a real
 * Worker on this host — a refusal is reported with its fixed code, never
 * guessed from host features.
 */
import { AppError, type ErrorCode } from "../errors.ts";
import type { HomeLayout } from "../home.ts";
import { ensurePrivateDir } from "../path_safety.ts";
import { silentLogger } from "../log.ts";
import { readProcSnapshot } from "../../sandbox/attestation.ts";
import { spawnConfinedWorker } from "./supervisor.ts";
import { WORKER_PROBE_DEADLINE_MS } from "../limits.ts";

export type WorkerProbeReport =
  | { ok: true; attestedMs: number; threads: number; landlockAbi: number }
  | { ok: false; code: ErrorCode; detail: string };

/** Spawns, verifies and kills one confined Worker under `<home>/.runtime/doctor/`. */
export async function probeConfinedWorker(home: HomeLayout): Promise<WorkerProbeReport> {
  const dir = ensurePrivateDir(home.root, ".runtime/doctor");
  const runRoot = `${dir}/probe-${crypto.randomUUID()}`;
  Deno.mkdirSync(runRoot, { mode: 0o700 });
  const t0 = performance.now();
  try {
    const w = await spawnConfinedWorker({
      runRoot,
      deadlineMs: WORKER_PROBE_DEADLINE_MS,
      log: silentLogger,
      parseFrame: (v) => ({ ok: true, frame: v }),
    });
    const attestedMs = Math.round(performance.now() - t0);
    const threads = readProcSnapshot(w.pid)?.tasks.size ?? 0;
    await w.kill("killed");
    return { ok: true, attestedMs, threads, landlockAbi: w.attestation.landlock_abi };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    await Deno.remove(runRoot, { recursive: true }).catch((e: unknown) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    return { ok: false, code: err.code, detail: err.detail ?? "" };
  }
}
