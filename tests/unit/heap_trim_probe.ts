/**
 * heap_trim_test's measurement, run alone in its own process: frees 64 MiB of
 * small native allocations interleaved with survivors, counts (mincore) which
 * of the freed whole pages are resident, trims once through the heap trimmer
 * after a Run ended, and counts again. Prints
 * `{"pages","before","after","trimmed"}` as JSON.
 */
import { noteRunEnded, startHeapTrim } from "../../runtime/heap_trim.ts";

const t = startHeapTrim({ intervalMs: 3_600_000 });
const lib = Deno.dlopen(
  "libc.so.6",
  {
    malloc: { parameters: ["usize"], result: "pointer" },
    free: { parameters: ["pointer"], result: "void" },
    memset: { parameters: ["pointer", "i32", "usize"], result: "pointer" },
    mincore: { parameters: ["usize", "usize", "buffer"], result: "i32" },
  } as const,
);
// 64 MiB of small native allocations, interleaved with a survivor so the freed chunks are not at
// the heap's top.
const freed: bigint[] = [];
const kept: Deno.PointerValue[] = [];
for (let i = 0; i < 16384; i++) {
  const p = lib.symbols.malloc(4096n);
  lib.symbols.memset(p, 1, 4096n);
  freed.push(BigInt(Deno.UnsafePointer.value(p)));
  if (i % 64 === 0) kept.push(lib.symbols.malloc(64n));
}
for (const v of freed) lib.symbols.free(Deno.UnsafePointer.create(v));
// The freed chunks coalesce into runs of 64 (a survivor between runs): the whole pages inside each
// run, less its first and last, are free memory the trim may return. Which of them are resident is
// asked of the kernel page by page (mincore).
const page = 4096n;
const sorted = [...freed].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
const pages: bigint[] = [];
let runStart = sorted[0];
let runEnd = sorted[0] + 4096n;
const addRun = () => {
  for (let a = (runStart + page - 1n) / page * page + page; a + 2n * page <= runEnd; a += page) {
    pages.push(a);
  }
};
for (const v of sorted.slice(1)) {
  if (v - runEnd <= 32n) runEnd = v + 4096n;
  else {
    addRun();
    runStart = v;
    runEnd = v + 4096n;
  }
}
addRun();
const vec = new Uint8Array(1);
const resident = () =>
  pages.filter((start) => {
    if (lib.symbols.mincore(start, page, vec) !== 0) return false; // unmapped: not resident
    return (vec[0] & 1) === 1;
  }).length;
const before = resident();
noteRunEnded();
const trimmed = t.tick();
const after = resident();
for (const p of kept) lib.symbols.free(p);
t.stop();
lib.close();
console.log(JSON.stringify({ pages: pages.length, before, after, trimmed }));
