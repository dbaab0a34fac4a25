/**
 * Scratch copies and change sets over a 1,000-file workspace [EX-3, EX-4]:
 * builds a temp workspace of 1,000 small text files (≈ 1.5 MiB in 20
 * directories) on the home's filesystem, then times (median of several runs)
 * the first copy, a sync with nothing changed, a sync after the workspace
 * changed 10 files, and the change set after a "command" changed 10 files in
 * the scratch (digests and unified diffs). The command start overhead
 * (runner start → program exec) is runner_start_bench.ts's.
 * Run: deno run --config deno.json -A tools/bench/scratch_bench.ts [dir]
 */
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { computeChangeSet } from "../../runtime/exec/change_set.ts";
import { ScratchCopy } from "../../runtime/exec/scratch.ts";
import { measure } from "./report.ts";

const FILES = 1000;
const RUNS = 7;
const base = Deno.args[0];

const root = Deno.makeTempDirSync({ prefix: "ab-scratch-bench-", dir: base });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  Deno.chmodSync(root, 0o700);
  const ws = `${root}/ws`;
  Deno.mkdirSync(ws, { mode: 0o700 });
  let bytes = 0;
  for (let i = 0; i < FILES; i++) {
    const sub = `${ws}/pkg${i % 20}`;
    Deno.mkdirSync(sub, { recursive: true, mode: 0o700 });
    const text = Array.from({ length: 30 }, (_, j) => `export const v_${i}_${j} = ${j};`)
      .join("\n") + "\n";
    bytes += text.length;
    Deno.writeTextFileSync(`${sub}/file${i}.ts`, text, { mode: 0o600 });
  }
  const first: number[] = [];
  const idle: number[] = [];
  const changed: number[] = [];
  const changeSet: number[] = [];
  let method = "";
  for (let r = 0; r < RUNS; r++) {
    const s = new ScratchCopy({ workspaceDir: ws, scratchDir: `${root}/scratch`, owner: null });
    let t0 = performance.now();
    const a = s.sync();
    first.push(performance.now() - t0);
    if (!a.ok) throw new Error(a.code);
    method = a.reflinked > 0 ? "reflink" : "copy";
    t0 = performance.now();
    if (!s.sync().ok) throw new Error("sync");
    idle.push(performance.now() - t0);
    for (let i = 0; i < 10; i++) {
      Deno.writeTextFileSync(`${ws}/pkg${i % 20}/file${i}.ts`, `export const r = ${r};\n`);
    }
    t0 = performance.now();
    const c = s.sync();
    changed.push(performance.now() - t0);
    if (!c.ok || c.copied !== 10) throw new Error("changed sync");
    for (let i = 100; i < 110; i++) {
      Deno.writeTextFileSync(
        `${root}/scratch/pkg${i % 20}/file${i}.ts`,
        `export const formatted = ${i};\n`,
      );
    }
    const o = openWorkspaceRoot(ws);
    if (!o.ok) throw new Error(o.code);
    t0 = performance.now();
    const cs = computeChangeSet(s, o.root.fd);
    changeSet.push(performance.now() - t0);
    o.root.close();
    if (!cs.ok || cs.set.entries.length !== 10) throw new Error("change set");
    s.removeSync();
  }
  const kib = (bytes / 1024).toFixed(0);
  console.log(
    `scratch first copy (${method}): median ${median(first).toFixed(1)} ms over ${RUNS} runs ` +
      `(workspace ${FILES} files, ${kib} KiB in 20 directories)`,
  );
  console.log(`scratch sync, nothing changed: median ${median(idle).toFixed(1)} ms`);
  measure("scratch", `first copy of ${FILES} files, median`, median(first), "ms");
  measure("scratch", "sync, nothing changed, median", median(idle), "ms");
  measure("scratch", "sync, 10 files changed, median", median(changed), "ms");
  measure("scratch", "change set of 10 files, median", median(changeSet), "ms");
  console.log(`scratch sync, 10 files changed: median ${median(changed).toFixed(1)} ms`);
  console.log(
    `change set, 10 files modified (digests + diffs): median ${median(changeSet).toFixed(1)} ms`,
  );
} finally {
  Deno.removeSync(root, { recursive: true });
}
