/**
 * The pre-bundled Worker is run only while it is fresh [PF-1]: a bundle older
 * than any source it was built from, or without a usable list of sources, is
 * never chosen (the Worker then runs main.ts, which is always current); the
 * command runner's bundle (dist/runner.js) likewise, else runner_entry.ts.
 */
import { assertEquals } from "../helpers/assert.ts";
import {
  productionRunnerModule,
  RUNNER_BUNDLE,
  RUNNER_BUNDLE_INPUTS,
  runnerBundleFresh,
  WORKER_BUNDLE,
  WORKER_BUNDLE_INPUTS,
  workerBundleFresh,
} from "../../runtime/worker/bundle.ts";
import { buildRunner, buildWorker } from "../../tools/build/worker.ts";

function fixture(): { dir: string; bundle: string; list: string; a: string; b: string } {
  const dir = Deno.makeTempDirSync({ prefix: "ab-worker-bundle-" });
  const a = `${dir}/a.ts`;
  const b = `${dir}/b.ts`;
  Deno.writeTextFileSync(a, "export const a = 1;");
  Deno.writeTextFileSync(b, "export const b = 2;");
  const bundle = `${dir}/worker.js`;
  Deno.writeTextFileSync(bundle, "// bundle");
  const t = new Date(Date.now() - 60_000);
  Deno.utimeSync(a, t, t);
  Deno.utimeSync(b, t, t);
  const list = `${dir}/worker.inputs.json`;
  Deno.writeTextFileSync(list, JSON.stringify([a, b]));
  return { dir, bundle, list, a, b };
}

Deno.test("a bundle newer than every source it lists is fresh", () => {
  const f = fixture();
  try {
    assertEquals(workerBundleFresh(f.bundle, f.list), true);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("one source edited after the build makes the bundle stale", () => {
  const f = fixture();
  try {
    const later = new Date(Date.now() + 60_000);
    Deno.utimeSync(f.b, later, later);
    assertEquals(workerBundleFresh(f.bundle, f.list), false);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("a missing bundle, list or listed source, or a malformed list, is never fresh", () => {
  const f = fixture();
  try {
    assertEquals(workerBundleFresh(`${f.dir}/absent.js`, f.list), false);
    assertEquals(workerBundleFresh(f.bundle, `${f.dir}/absent.json`), false);
    for (const bad of ["[]", "{}", '["relative/a.ts"]', "[1]", "not json"]) {
      Deno.writeTextFileSync(f.list, bad);
      assertEquals(workerBundleFresh(f.bundle, f.list), false, bad);
    }
    Deno.writeTextFileSync(f.list, JSON.stringify([f.a, `${f.dir}/deleted.ts`]));
    assertEquals(workerBundleFresh(f.bundle, f.list), false);
  } finally {
    Deno.removeSync(f.dir, { recursive: true });
  }
});

Deno.test("a runner runs dist/runner.js only while it is fresh, runner_entry.ts otherwise", () => {
  const expected = runnerBundleFresh() ? RUNNER_BUNDLE : new URL(
    "../../sandbox/runner_entry.ts",
    import.meta.url,
  );
  assertEquals(productionRunnerModule().href, expected.href);
  // Both candidates sit below a code root the runner already grants (dist, sandbox).
  assertEquals(RUNNER_BUNDLE.pathname.endsWith("/dist/runner.js"), true);
  assertEquals(RUNNER_BUNDLE_INPUTS.pathname.endsWith("/dist/runner.inputs.json"), true);
});

Deno.test("the built runner bundle lists its sources and is fresh right after a build", async () => {
  // The repository's own dist/: built here if stale, exactly as the launcher does.
  await buildRunner(true);
  assertEquals(runnerBundleFresh(), true);
  const inputs: string[] = JSON.parse(Deno.readTextFileSync(RUNNER_BUNDLE_INPUTS));
  const root = new URL("../../", import.meta.url).pathname;
  for (const src of ["sandbox/runner_entry.ts", "sandbox/runner_frames.ts", "runtime/limits.ts"]) {
    assertEquals(inputs.includes(`${root}${src}`), true, src);
  }
  // The packages a compile check or an extraction needs stay outside it.
  assertEquals(inputs.some((p) => p.includes("/node_modules/typescript/")), false);
  assertEquals(productionRunnerModule().href, RUNNER_BUNDLE.href);
});

Deno.test("stage 1's bundle leaves the body to stage 2, and the bundle stays stale-checked against the body's sources", async () => {
  await buildWorker(true);
  assertEquals(workerBundleFresh(), true);
  const root = new URL("../../", import.meta.url).pathname;
  // The list covers both builds: an edit to the body (only in stage 2's script) makes it stale.
  const inputs: string[] = JSON.parse(Deno.readTextFileSync(WORKER_BUNDLE_INPUTS));
  for (
    const src of [
      "sandbox/worker_entry.ts",
      "sandbox/confine.ts",
      "runtime/kernel/worker_main.ts",
      "runtime/kernel/harness_kernel.ts",
      "runtime/protocol/ipc.ts",
      "runtime/protocol/worker_frames.ts",
    ]
  ) {
    assertEquals(inputs.includes(`${root}${src}`), true, src);
  }
  // Stage 1 imports them as the sources themselves (never called there), not bundled.
  const stage1 = Deno.readTextFileSync(WORKER_BUNDLE);
  for (const m of ["runtime/kernel/worker_main.ts", "runtime/protocol/ipc.ts"]) {
    assertEquals(stage1.includes(`import("../${m}")`), true, m);
    assertEquals(Deno.statSync(new URL(`../${m}`, WORKER_BUNDLE)).isFile, true, m);
  }
  assertEquals(stage1.includes("safeParse"), false); // no zod in stage 1
});
