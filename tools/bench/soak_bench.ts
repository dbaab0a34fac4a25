/**
 * Memory soak [PF-5]: through the real server, real confined Workers and the
 * scripted model, SOAK_TURNS (default 400) sequential Turns round-robin over 4
 * Conversations, each a short streamed answer. Reports the server's resident
 * memory (VmRSS) idle, after the first 100 Turns and at the end; the goal is
 * that the end is within 10 % of the value after the first 100 (flat: only
 * LIVE_RUNS_IN_MEMORY Runs are meant to stay in memory).
 *
 * Both figures are read once the server has settled: HEAP_TRIM_INTERVAL_MS
 * (plus a margin) after the last Turn, so the server's own periodic full GC and
 * `malloc_trim` (runtime/heap_trim.ts) have run. Read at an arbitrary instant,
 * RSS swings by ±7 MiB with where V8 and the allocator are in their cycles
 * (two runs of the same tree read 106 → 98 and 93 → 104 MiB): that measured
 * the instant, not what a Turn leaves behind.
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/soak_bench.ts
 */
import { readProcText } from "../../sandbox/procfs.ts";
import * as scenarios from "../fake_ollama/scenarios.ts";
import { newConversation, readSse, startRunHarness, submit } from "../../tests/helpers/runs.ts";
import { atMost, measure } from "./report.ts";
import { HEAP_TRIM_INTERVAL_MS } from "../../runtime/limits.ts";

const TURNS = Number(Deno.env.get("SOAK_TURNS") ?? 400);
const BASE_AFTER = Math.min(100, Math.floor(TURNS / 4));
const CONVERSATIONS = 4;

/** VmRSS once the server's periodic trim has run after the last Turn (see the header). */
async function settledRssMiB(pid: number): Promise<number> {
  await new Promise((r) => setTimeout(r, HEAP_TRIM_INTERVAL_MS + 1_000));
  return rssMiB(pid);
}

function rssMiB(pid: number): number {
  const m = /^VmRSS:\s*(\d+) kB$/m.exec(readProcText(`/proc/${pid}/status`) ?? "");
  if (!m) throw new Error("no VmRSS");
  return Number(m[1]) / 1024;
}

/** Resident MiB by kind: the C allocator's main heap, other anonymous maps (V8's heap, thread arenas), files. */
function rssSplit(pid: number): string {
  let cur = "";
  const sum = { brk: 0, anon: 0, file: 0 };
  for (const line of Deno.readTextFileSync(`/proc/${pid}/smaps`).split("\n")) {
    const map = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (map) cur = map[1];
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kind = cur === "[heap]" ? "brk" : cur === "" || cur.startsWith("[") ? "anon" : "file";
    sum[kind] += Number(rss[1]) / 1024;
  }
  return `C heap ${sum.brk.toFixed(1)}, other anonymous ${sum.anon.toFixed(1)}, files ${
    sum.file.toFixed(1)
  } MiB`;
}

async function main(): Promise<void> {
  const h = await startRunHarness();
  try {
    const pid = h.server.child.pid;
    const idle = rssMiB(pid);
    const convs: string[] = [];
    for (let i = 0; i < CONVERSATIONS; i++) convs.push(await newConversation(h));
    let base = 0;
    const t0 = performance.now();
    for (let i = 1; i <= TURNS; i++) {
      h.ollama.enqueue(scenarios.text(`Answer number ${i}: ${"a few words ".repeat(10)}`));
      const r = await submit(h, convs[i % CONVERSATIONS], `soak question ${i}`);
      if (r.status !== 202) throw new Error(`submit ${r.status}`);
      const frames = await readSse(h, r.body.run_id, { timeoutMs: 120_000 });
      const end = frames.at(-1)!;
      if (end.event !== "run.completed") throw new Error(`turn ${i}: ${JSON.stringify(end.data)}`);
      if (i === BASE_AFTER) base = await settledRssMiB(pid);
      if (i % 100 === 0) {
        const when = i === BASE_AFTER ? "settled" : "at that instant";
        console.log(
          `  after ${i} Turns, ${when}: RSS ${rssMiB(pid).toFixed(1)} MiB (${rssSplit(pid)})`,
        );
      }
    }
    const last = await settledRssMiB(pid);
    console.log(`  after ${TURNS} Turns, settled: RSS ${last.toFixed(1)} MiB (${rssSplit(pid)})`);
    const growth = (last - base) / base;
    console.log(`soak: ${TURNS} Turns in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    console.log(
      `server RSS: idle ${idle.toFixed(1)} MiB, after ${BASE_AFTER} Turns ${
        base.toFixed(1)
      } MiB, after ${TURNS} ${last.toFixed(1)} MiB (${(growth * 100).toFixed(1)} %)`,
    );
    measure("soak", `server RSS after ${BASE_AFTER} Turns`, base, "MiB");
    measure(
      "soak",
      `server RSS after ${TURNS} Turns`,
      last,
      "MiB",
      atMost(1.1 * base, `≤ 1.1 × the value after ${BASE_AFTER} Turns [PF-5]`),
    );
  } finally {
    await h.close();
  }
}

await main();
