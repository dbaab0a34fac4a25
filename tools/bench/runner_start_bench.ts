/**
 * Command start overhead of the runner [EX-1, EX-2]: runs `true` through the
 * production runner (stage 1 → namespaces, Landlock, capability drop →
 * stage 2 → seccomp → attestation → /proc verification → release → program
 * exec → release proof) repeatedly and prints the medians of
 * runner start → verified ready, and runner start → result (the program
 * itself takes ~1 ms), next to a plain `true` through Deno.Command.
 * Run as root for the production path: deno run -A tools/bench/runner_start_bench.ts
 */
import { executeInRunner } from "../../runtime/exec/runner.ts";
import type { CommandJob } from "../../sandbox/runner_frames.ts";
import { measure } from "./report.ts";
import { buildRunner } from "../build/worker.ts";

const RUNS = 9;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The production runner runs dist/runner.js when it is fresh [PF-1]: measure that one.
await buildRunner(true);
const base = Deno.makeTempDirSync({ prefix: "ab-runner-bench-" });
try {
  Deno.chmodSync(base, 0o700);
  Deno.mkdirSync(`${base}/scratch`);
  Deno.mkdirSync(`${base}/tmp`);
  const job: CommandJob = {
    kind: "command",
    path: "/bin/true",
    argv: ["true"],
    cwd: "",
    env: { PATH: "/usr/bin:/bin" },
    timeout_ms: 10_000,
  };
  const ready: number[] = [];
  const total: number[] = [];
  let pidns = false;
  for (let i = 0; i < RUNS + 1; i++) {
    const t0 = performance.now();
    const r = await executeInRunner({
      job,
      scratchDir: `${base}/scratch`,
      tmpDir: `${base}/tmp`,
      backstopMs: 30_000,
    });
    const ms = performance.now() - t0;
    if (r.done?.exit_code !== 0 || !r.released) throw new Error("runner did not run `true`");
    pidns = r.pidNamespace;
    if (i === 0) continue; // warm-up: fills the sandbox module cache
    ready.push(r.readyMs);
    total.push(ms);
  }
  const plain: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await new Deno.Command("/bin/true").output();
    plain.push(performance.now() - t0);
  }
  console.log(`runner start → verified ready (median of ${RUNS}): ${median(ready).toFixed(0)} ms`);
  console.log(
    `runner start → result of \`true\` (median of ${RUNS}): ${median(total).toFixed(0)} ms`,
  );
  console.log(`  min ${Math.min(...total).toFixed(0)} ms, max ${Math.max(...total).toFixed(0)} ms`);
  console.log(`  PID namespace: ${pidns}`);
  console.log(`baseline: \`true\` through Deno.Command (median): ${median(plain).toFixed(1)} ms`);
  measure("runner_start", "runner start → verified ready, median", median(ready), "ms");
  measure("runner_start", "runner start → result of `true`, median", median(total), "ms");
  measure("runner_start", "`true` through Deno.Command (baseline), median", median(plain), "ms");
} finally {
  Deno.removeSync(base, { recursive: true });
}
