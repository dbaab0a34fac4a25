/**
 * file/grep over a 1,000-file workspace [TL-5]: builds a temp workspace of
 * 1,000 small text files (≈ 1.5 MiB in 20 directories, inside the 2 MiB read
 * and 1,024 file caps), runs literal and regex-subset searches several times
 * and prints the median wall time. The no-match searches are also run with
 * `rg -j1` (whole process, start-up included) on the same tree in the same
 * run when ripgrep is installed (tools/bench/run.sh installs Debian's
 * `ripgrep` when missing); the goal is ≤ 2 × rg [PF-3].
 * Run: deno run --config deno.json -A tools/bench/grep_bench.ts
 */
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { fileGrep } from "../../runtime/tools/file_grep.ts";
import { atMost, measure } from "./report.ts";

/** Median wall time of `rg -j1 <args> <dir>` (whole process), or null without ripgrep. */
async function rgMedian(args: string[], dir: string, runs: number): Promise<number | null> {
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    try {
      const out = await new Deno.Command("rg", {
        args: ["-j1", ...args, "--", dir],
        stdout: "null",
        stderr: "null",
      }).output();
      if (out.code > 1) throw new Error(`rg exited ${out.code}`); // 1 = no match
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return null;
      throw err;
    }
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

const FILES = 1000;
const RUNS = 9;

const dir = Deno.makeTempDirSync({ prefix: "ab-grep-bench-" });
try {
  Deno.chmodSync(dir, 0o700);
  let bytes = 0;
  for (let i = 0; i < FILES; i++) {
    const sub = `${dir}/pkg${i % 20}`;
    Deno.mkdirSync(sub, { recursive: true, mode: 0o700 });
    const lines = Array.from(
      { length: 30 },
      (_, j) =>
        `export const value_${i}_${j} = compute(${j}); // line ${j}${j === 7 ? " needle" : ""}`,
    );
    const text = lines.join("\n") + "\n";
    bytes += text.length;
    Deno.writeTextFileSync(`${sub}/file${i}.ts`, text, { mode: 0o600 });
  }
  const o = openWorkspaceRoot(dir);
  if (!o.ok) throw new Error(o.code);
  try {
    for (
      const [label, args, rgArgs] of [
        ["literal, 1,000 candidate matches (stops at a result cap)", { pattern: "needle" }, null],
        ["literal, no match (reads every file)", { pattern: "absent-token" }, [
          "-F",
          "absent-token",
        ]],
        [
          "regex subset, no match",
          { pattern: "value_\\d\\d?\\d?_9\\d = x", regex: true },
          ["value_\\d\\d?\\d?_9\\d = x"],
        ],
      ] as const
    ) {
      const times: number[] = [];
      let summary = "";
      let timeouts = 0;
      for (let r = 0; r < RUNS; r++) {
        const t0 = performance.now();
        const res = fileGrep(o.root, args);
        times.push(performance.now() - t0);
        // The 1 s deadline failing a run closed is a measurement (a loaded host), not a crash.
        if (!res.ok && res.code === "file_timeout") {
          timeouts++;
          continue;
        }
        if (!res.ok) throw new Error(`${label}: ${res.code}`);
        summary =
          `matches=${res.matches.length} files=${res.files_searched} truncated=${res.truncated}`;
      }
      summary += ` timeouts=${timeouts}/${RUNS}`;
      times.sort((a, b) => a - b);
      const median = times[Math.floor(RUNS / 2)];
      const rg = rgArgs === null ? null : await rgMedian([...rgArgs], dir, RUNS);
      if (rg !== null) console.log(`rg -j1 ${label}: median ${rg.toFixed(1)} ms (whole process)`);
      measure(
        "grep",
        `file/grep ${label}, median`,
        median,
        "ms",
        rg === null ? null : atMost(2 * rg, `≤ 2 × rg -j1 (${rg.toFixed(1)} ms) [PF-3]`),
      );
      console.log(
        `grep ${label}: median ${
          median.toFixed(1)
        } ms over ${RUNS} runs (${summary}; workspace ${FILES} files, ${
          (bytes / 1024).toFixed(0)
        } KiB)`,
      );
    }
  } finally {
    o.root.close();
  }
} finally {
  Deno.removeSync(dir, { recursive: true });
}
