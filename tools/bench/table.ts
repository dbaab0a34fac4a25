/**
 * `deno task bench` [PF-6]: runs every tools/bench/*_bench.ts in turn (each
 * prints its own report as it goes), collects the rows they record through
 * report.ts, then prints ONE table — measure, value, goal, ratio — and writes
 * it with the date and the machine to bench-results.json (repo root, or the
 * path given as the first argument). A bench that fails is named in the
 * table and the task exits 1 after writing what the others measured.
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/table.ts [out.json]
 */
import { type Measure, type MeasureRow, toRow } from "./report.ts";
import { buildWorker } from "../build/worker.ts";

const repo = new URL("../../", import.meta.url).pathname;
const out = Deno.args[0] ?? `${repo}bench-results.json`;
const only = Deno.env.get("BENCH_ONLY"); // e.g. "grep" runs grep_bench.ts only

const benches = [...Deno.readDirSync(`${repo}tools/bench`)]
  .map((e) => e.name)
  .filter((n) => n.endsWith("_bench.ts") && (!only || n.startsWith(only)))
  .sort();

// Every bench that spawns Workers measures the production one: dist/worker.js, fresh [PF-1].
await buildWorker(true);
const tmp = Deno.makeTempFileSync({ prefix: "bench-rows-" });
const failed: string[] = [];
const started = new Date();
try {
  for (const b of benches) {
    console.log(`== tools/bench/${b}`);
    const st = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--config", `${repo}deno.json`, "-A", `${repo}tools/bench/${b}`],
      cwd: repo,
      env: { BENCH_RESULTS: tmp },
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
    if (!st.success) failed.push(b);
  }
  const rows: MeasureRow[] = Deno.readTextFileSync(tmp).split("\n").filter((l) => l !== "")
    .map((l) => toRow(JSON.parse(l) as Measure));
  const machine = machineInfo();
  console.log("");
  console.log(`== benchmark table (${started.toISOString()}; ${machine.summary})`);
  console.log(renderTable(rows));
  if (failed.length > 0) console.log(`FAILED benchmarks: ${failed.join(", ")}`);
  Deno.writeTextFileSync(
    out,
    JSON.stringify({ date: started.toISOString(), machine, failed, rows }, null, 2) + "\n",
  );
  console.log(`written: ${out}`);
} finally {
  Deno.removeSync(tmp);
}
if (failed.length > 0) Deno.exit(1);

/** The machine the numbers come from; the load average says whether it was shared. */
function machineInfo() {
  const cpus = navigator.hardwareConcurrency;
  const [l1, l5] = Deno.loadavg();
  const cpu = (() => {
    try {
      return /model name\s*:\s*(.*)/.exec(Deno.readTextFileSync("/proc/cpuinfo"))?.[1] ?? "?";
    } catch {
      return "?";
    }
  })();
  const memGiB = Math.round(Deno.systemMemoryInfo().total / 2 ** 30 * 10) / 10;
  const loaded = l1 > cpus;
  return {
    cpus,
    cpu,
    mem_gib: memGiB,
    kernel: Deno.osRelease(),
    deno: Deno.version.deno,
    loadavg_1m: l1,
    loadavg_5m: l5,
    loaded,
    summary: `${cpus} cores, ${cpu}, ${memGiB} GiB, Linux ${Deno.osRelease()}, load ${
      l1.toFixed(1)
    }${loaded ? " — LOADED machine (load above core count)" : ""}`,
  };
}

function fmt(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
}

/** One aligned text table: measure, value, goal, ratio (with ✓/✗ where there is a goal). */
function renderTable(rows: readonly MeasureRow[]): string {
  const cells = rows.map((r) => [
    `${r.bench}: ${r.measure}`,
    `${fmt(r.value)} ${r.unit}`,
    r.goal?.text ?? "—",
    r.ratio === null ? "—" : `${r.ratio.toFixed(2)} ${r.met ? "met" : "NOT met"}`,
  ]);
  const head = ["measure", "value", "goal", "ratio"];
  const w = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(w[i])).join(" | ").trimEnd();
  return [line(head), w.map((n) => "-".repeat(n)).join("-|-"), ...cells.map(line)].join("\n");
}
