/**
 * Worker spawn cost [SB-1, SB-2]: spawns the production confined Worker
 * (stage 1 → execve → stage 2 → attestation → /proc verification of every
 * thread) repeatedly and prints the median spawn-to-attested latency and the
 * Worker's resident memory right after attestation and once it has loaded its
 * body and run its warm-up Turn (what a pooled Worker holds), next to a plain
 * `deno run` of an empty script as the baseline process start.
 * Run: deno run --config deno.json -A tools/bench/worker_spawn_bench.ts
 */
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { silentLogger } from "../../runtime/log.ts";
import { parseStatus } from "../../sandbox/attestation.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { atMost, measure } from "./report.ts";
import { bareDenoStartMs } from "./bare_start.ts";
import { buildWorker } from "../build/worker.ts";

const RUNS = 9;
/** How long after attestation a Worker has loaded its body and finished its warm-up Turn. */
const SETTLE_MS = 1000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const kib = (v: string | undefined) => Number((v ?? "0").replace(/\s*kB$/, ""));

// The production Worker runs dist/worker.js when it is fresh [PF-1]: measure that one.
await buildWorker(true);
const base = Deno.makeTempDirSync({ prefix: "ab-spawn-bench-" });
try {
  Deno.chmodSync(base, 0o700);
  const latency: number[] = [];
  const rss: number[] = [];
  const threads: number[] = [];
  const cpu: number[] = [];
  const rssSettled: number[] = [];
  const threadsSettled: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < RUNS + 1; i++) {
    // The floor beside each spawn: read after all the spawns, it swung 15.8–22.6 ms run to run.
    if (i > 0) plain.push(await bareDenoStartMs(1));
    const runRoot = `${base}/run${i}`;
    Deno.mkdirSync(runRoot, { mode: 0o700 });
    const t0 = performance.now();
    const w = await spawnConfinedWorker({
      runRoot,
      deadlineMs: 30_000,
      log: silentLogger,
      parseFrame: (v) => ({ ok: true, frame: v }),
    });
    const ms = performance.now() - t0;
    const status = parseStatus(readProcText(`/proc/${w.pid}/status`) ?? "");
    // utime + stime (clock ticks of 10 ms) of both stages: the pid survives the execve. Unlike
    // the wall time, this hardly moves with the machine's load.
    const stat = (readProcText(`/proc/${w.pid}/stat`) ?? "").split(") ")[1]?.split(" ") ?? [];
    const cpuMs = (Number(stat[11]) + Number(stat[12])) * 10;
    // Stage 2 loads the body and runs its warm-up Turn after attestation [PF-1]: the memory
    // a pooled Worker holds while it waits is measured once that is done.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const settled = parseStatus(readProcText(`/proc/${w.pid}/status`) ?? "");
    await w.kill("killed");
    if (i === 0) continue; // warm-up: fills the module cache
    latency.push(ms);
    rss.push(kib(status.get("VmRSS")));
    threads.push(Number(status.get("Threads")));
    cpu.push(cpuMs);
    rssSettled.push(kib(settled.get("VmRSS")));
    threadsSettled.push(Number(settled.get("Threads")));
  }

  const bare = median(plain);

  console.log(`worker spawn → attested (median of ${RUNS}): ${median(latency).toFixed(0)} ms`);
  console.log(
    `  min ${Math.min(...latency).toFixed(0)} ms, max ${Math.max(...latency).toFixed(0)} ms`,
  );
  console.log(`worker RSS after attestation (median): ${(median(rss) / 1024).toFixed(1)} MiB`);
  console.log(`worker threads after attestation (median): ${median(threads)}`);
  console.log(
    `worker RSS / threads ${SETTLE_MS} ms after attestation (median): ${
      (median(rssSettled) / 1024).toFixed(1)
    } MiB / ${median(threadsSettled)}`,
  );
  console.log(`worker CPU of both stages until attested (median): ${median(cpu)} ms`);
  measure(
    "worker_spawn",
    "worker spawn → attested (cold), median",
    median(latency),
    "ms",
    atMost(1.5 * 2 * bare, `≤ 1.5 × 2 bare Deno start-ups (${(2 * bare).toFixed(0)} ms) [PF-1]`),
  );
  measure("worker_spawn", "bare `deno run` of an empty script, median", bare, "ms");
  measure("worker_spawn", "worker CPU (both stages) until attested, median", median(cpu), "ms");
  measure("worker_spawn", "worker threads after attestation, median", median(threads), "threads");
  measure("worker_spawn", "worker RSS after attestation, median", median(rss) / 1024, "MiB");
  measure(
    "worker_spawn",
    "worker RSS 1 s after attestation (body loaded, warmed up), median",
    median(rssSettled) / 1024,
    "MiB",
    atMost(60, "≤ 60 MiB [PF-5]"),
  );
  measure(
    "worker_spawn",
    "worker threads 1 s after attestation, median",
    median(threadsSettled),
    "threads",
  );
  console.log(`baseline: plain \`deno run\` of an empty script (median): ${bare.toFixed(1)} ms`);
} finally {
  Deno.removeSync(base, { recursive: true });
}
