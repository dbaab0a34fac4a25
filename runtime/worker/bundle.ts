/**
 * Which file a non-compiled Worker runs [PF-1, PF-5]: the pre-bundled
 * `dist/worker.js` (tools/build/worker.ts) when it is fresh, main.ts otherwise;
 * and likewise which file a non-compiled command runner runs: `dist/runner.js`
 * when fresh, sandbox/runner_entry.ts otherwise [PF-1].
 * One file instead of a few hundred modules is most of a cold spawn: stage 2
 * runs as the sandbox uid under Landlock and cannot use Deno's module caches,
 * so it parses every module it loads from scratch (docs/performance.md).
 *
 * What this file enforces: a stale bundle is never run. The bundle is used
 * only while dist/worker.inputs.json (written after it) lists every source it
 * was built from and none is newer than it; anything missing or unreadable
 * means main.ts (runner_entry.ts), which is always correct, only slower.
 */
import { mainStage2Entry, type Stage2Entry } from "../../sandbox/worker_entry.ts";

const DIST = new URL("../../dist/", import.meta.url);
/** The bundled Worker: stage 1 runs it; stage 2 runs worker_stage2.js, the same entry. */
export const WORKER_BUNDLE = new URL("worker.js", DIST);
const WORKER_BUNDLE_FILES = [
  WORKER_BUNDLE,
  new URL("worker_stage2.js", DIST),
  new URL("worker_stage2.txt", DIST),
];
/** The absolute source paths the bundle was built from (a JSON array). */
export const WORKER_BUNDLE_INPUTS = new URL("worker.inputs.json", DIST);

/** The bundled command runner: both of its stages run it (tools/build/worker.ts). */
export const RUNNER_BUNDLE = new URL("runner.js", DIST);
const RUNNER_BUNDLE_FILES = [RUNNER_BUNDLE, new URL("runner.txt", DIST)];
/** The absolute source paths the runner bundle was built from (a JSON array). */
export const RUNNER_BUNDLE_INPUTS = new URL("runner.inputs.json", DIST);

const mtimeMs = (p: string | URL): number => Deno.statSync(p).mtime?.getTime() ?? Infinity;

/** True when `bundle` (dist/worker.js by default) exists and no source it was built from is newer. */
export function workerBundleFresh(
  bundle: string | URL = WORKER_BUNDLE,
  inputList: string | URL = WORKER_BUNDLE_INPUTS,
): boolean {
  try {
    const built = Math.min(
      ...(bundle === WORKER_BUNDLE
        ? WORKER_BUNDLE_FILES
        : bundle === RUNNER_BUNDLE
        ? RUNNER_BUNDLE_FILES
        : [bundle]).map((f) => mtimeMs(f)),
    );
    const inputs: unknown = JSON.parse(Deno.readTextFileSync(inputList));
    if (!Array.isArray(inputs) || inputs.length === 0) return false;
    return inputs.every((p) => typeof p === "string" && p.startsWith("/") && mtimeMs(p) <= built);
  } catch {
    return false; // missing bundle, list or source: never guess
  }
}

/**
 * The module a production (non-compiled) Worker starts with: stage 1 runs it
 * and names stage 2's (the bundle's own stage-2 build, or main.ts again).
 */
export function productionStage2Entry(): Stage2Entry {
  return workerBundleFresh() ? { module: WORKER_BUNDLE, argsPrefix: [] } : mainStage2Entry();
}

/** True when dist/runner.js exists and no source it was built from is newer. */
export function runnerBundleFresh(): boolean {
  return workerBundleFresh(RUNNER_BUNDLE, RUNNER_BUNDLE_INPUTS);
}

/**
 * The module a production (non-compiled) runner starts with; its stage 1
 * spawns stage 2 from the same module. The bundle's directory (dist) is one
 * of the code roots already, so Landlock grants nothing new [PF-1].
 */
export function productionRunnerModule(): URL {
  return runnerBundleFresh()
    ? RUNNER_BUNDLE
    : new URL("../../sandbox/runner_entry.ts", import.meta.url);
}
