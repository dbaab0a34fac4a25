/**
 * Bundles the Worker (sandbox/worker_bundle_entry.ts) with esbuild into
 * dist/worker.js plus dist/worker.inputs.json, the list of source files it was
 * built from [PF-1, PF-5]. A non-compiled server runs its Workers from the
 * bundle only while no listed input is newer than it (runtime/worker/bundle.ts);
 * otherwise from main.ts, so a stale bundle is never run.
 * `--if-stale` rebuilds only when an input is newer than the bundle.
 */
import { workerBundleFresh } from "../../runtime/worker/bundle.ts";

const root = new URL("../../", import.meta.url).pathname;
const esbuild = `${root}node_modules/.bin/esbuild`;

export async function buildWorker(ifStale: boolean): Promise<boolean> {
  if (ifStale && workerBundleFresh()) return false;
  Deno.mkdirSync(`${root}dist`, { recursive: true });
  const meta = `${root}dist/worker.meta.tmp.json`;
  const out = await new Deno.Command(esbuild, {
    args: [
      "sandbox/worker_bundle_entry.ts",
      "--bundle",
      "--format=esm",
      "--platform=neutral",
      "--target=es2022",
      "--minify",
      "--legal-comments=none",
      `--metafile=${meta}`,
      "--outfile=dist/worker.tmp.js",
      "--log-level=warning",
    ],
    cwd: root,
  }).output();
  if (!out.success) {
    await Deno.stderr.write(out.stderr);
    throw new Error("esbuild failed for the worker bundle");
  }
  // Atomic: a Worker spawned meanwhile reads the old bundle or the new one, never half of one.
  Deno.renameSync(`${root}dist/worker.tmp.js`, `${root}dist/worker.js`);
  // esbuild names inputs relative to cwd (the repository root).
  const inputs = Object.keys(JSON.parse(Deno.readTextFileSync(meta)).inputs as object)
    .map((p) => new URL(p, `file://${root}`).pathname);
  Deno.removeSync(meta);
  // Written after the bundle: the list is what the freshness check trusts.
  Deno.writeTextFileSync(`${root}dist/worker.inputs.tmp.json`, JSON.stringify(inputs));
  Deno.renameSync(`${root}dist/worker.inputs.tmp.json`, `${root}dist/worker.inputs.json`);
  return true;
}

if (import.meta.main) {
  const rebuilt = await buildWorker(Deno.args.includes("--if-stale"));
  if (rebuilt && !Deno.args.includes("--quiet")) {
    console.log("worker bundle built: dist/worker.js");
  }
}
