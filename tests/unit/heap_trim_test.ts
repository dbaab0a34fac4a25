/**
 * [PF-5] The heap trimmer gives glibc's free pages back only after a Run
 * ended, at most once per tick, and returns resident memory that a freed
 * native allocation left behind.
 */
import { noteRunEnded, startHeapTrim } from "../../runtime/heap_trim.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

function rssKiB(): number {
  return Number(/^VmRSS:\s*(\d+) kB$/m.exec(readProcText("/proc/self/status") ?? "")![1]);
}

Deno.test("a trim happens only when a Run ended since the last one", () => {
  const t = startHeapTrim(3_600_000);
  try {
    t.tick(); // whatever earlier tests left
    const before = t.trims;
    assertEquals(t.tick(), false);
    noteRunEnded();
    noteRunEnded();
    assertEquals(t.tick(), true);
    assertEquals(t.tick(), false);
    assertEquals(t.trims, before + 1);
  } finally {
    t.stop();
  }
});

Deno.test("a trim returns the free pages of the C heap to the kernel", () => {
  const t = startHeapTrim(3_600_000);
  try {
    // 64 MiB of small native allocations (SQLite's, through node:sqlite's statements),
    // interleaved with a survivor so the freed chunks are not at the heap's top.
    const lib = Deno.dlopen(
      "libc.so.6",
      {
        malloc: { parameters: ["usize"], result: "pointer" },
        free: { parameters: ["pointer"], result: "void" },
        memset: { parameters: ["pointer", "i32", "usize"], result: "pointer" },
      } as const,
    );
    try {
      const freed: Deno.PointerValue[] = [];
      const kept: Deno.PointerValue[] = [];
      for (let i = 0; i < 16384; i++) {
        const p = lib.symbols.malloc(4096n);
        lib.symbols.memset(p, 1, 4096n);
        freed.push(p);
        if (i % 64 === 0) kept.push(lib.symbols.malloc(64n));
      }
      for (const p of freed) lib.symbols.free(p);
      const resident = rssKiB();
      noteRunEnded();
      assert(t.tick());
      const trimmed = rssKiB();
      for (const p of kept) lib.symbols.free(p);
      assert(
        // Half of the 64 MiB freed: other tests running in this process (--parallel) allocate
        // meanwhile, so RSS is only a lower bound of what the trim returned. Without the trim,
        // interleaved frees return nothing.
        resident - trimmed >= 16 * 1024,
        `RSS ${resident} KiB → ${trimmed} KiB after the trim: less than 16 MiB returned`,
      );
    } finally {
      lib.close();
    }
  } finally {
    t.stop();
  }
});

Deno.test("a trim first collects the dead JS objects that hold native memory", async () => {
  const t = startHeapTrim(3_600_000);
  try {
    let collected = false;
    const registry = new FinalizationRegistry(() => (collected = true));
    (() => registry.register({ buffer: new Uint8Array(1024) }, "dead"))();
    noteRunEnded();
    assert(t.tick());
    // Finalizers run as tasks after the collection: wait for the state, bounded.
    for (let i = 0; i < 1000 && !collected; i++) await new Promise((r) => setTimeout(r, 0));
    assert(collected, "the dead object was not collected by the trim");
  } finally {
    t.stop();
  }
});
