/**
 * [PF-5] The heap trimmer gives glibc's free pages back only after a Run
 * ended, at most once per tick, and returns resident memory that a freed
 * native allocation left behind; [PF-2] it waits while a Run is active, up to
 * its deferral bound.
 */
import {
  noteRunEnded,
  noteRunStarted,
  noteStartUpEnded,
  startHeapTrim,
} from "../../runtime/heap_trim.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

/** Lets `n` turns of the event loop run (the trimmer reacts on a later turn). */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
}

Deno.test("a trim happens only when a Run ended since the last one", () => {
  const t = startHeapTrim({ intervalMs: 3_600_000 });
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

Deno.test("the end of the start-up makes the next tick trim, without a Run", () => {
  const t = startHeapTrim({ intervalMs: 3_600_000 });
  try {
    t.tick(); // whatever earlier tests left
    const before = t.trims;
    assertEquals(t.tick(), false);
    noteStartUpEnded();
    assertEquals(t.tick(), true);
    assertEquals(t.tick(), false);
    assertEquals(t.trims, before + 1);
  } finally {
    t.stop();
  }
});

Deno.test("a trim waits while a Run is active and happens once none is", () => {
  const t = startHeapTrim({ intervalMs: 3_600_000 });
  try {
    t.tick(); // whatever earlier tests left
    const before = t.trims;
    noteRunStarted();
    noteRunStarted();
    noteRunEnded(); // one of two ended: the other still streams
    assertEquals(t.tick(), false);
    assertEquals(t.tick(), false);
    noteRunEnded();
    assertEquals(t.tick(), true);
    assertEquals(t.trims, before + 1);
  } finally {
    t.stop();
  }
});

Deno.test("a due trim runs as soon as the last active Run ends, not before", async () => {
  const t = startHeapTrim({ intervalMs: 0 });
  try {
    t.tick();
    const before = t.trims;
    noteRunStarted();
    noteRunStarted();
    noteRunEnded();
    // One Run still streams: nothing happens on its own.
    await turns(5);
    assertEquals(t.trims, before);
    noteRunEnded();
    for (let i = 0; i < 100 && t.trims === before; i++) await new Promise((r) => setTimeout(r, 0));
    assertEquals(t.trims, before + 1);
  } finally {
    t.stop();
  }
});

Deno.test("a Run's end does not trim before the interval since the last trim passed", async () => {
  const t = startHeapTrim({ intervalMs: 3_600_000 });
  try {
    t.tick();
    const before = t.trims;
    noteRunStarted();
    noteRunEnded();
    await turns(5);
    assertEquals(t.trims, before);
  } finally {
    t.stop();
  }
});

Deno.test("a trim deferred past its bound happens although a Run is active", () => {
  const t = startHeapTrim({ intervalMs: 3_600_000, deferMaxMs: 0 });
  try {
    t.tick();
    const before = t.trims;
    noteRunStarted();
    noteRunStarted();
    noteRunEnded();
    assertEquals(t.tick(), true);
    assertEquals(t.trims, before + 1);
    noteRunEnded();
  } finally {
    t.stop();
  }
});

Deno.test("a trim returns the free pages of the C heap to the kernel", async () => {
  // In its own process: `deno test --parallel` runs other test modules on threads of this one,
  // and any of them may trim the shared C heap between the frees and the count below.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      "--config",
      new URL("../../deno.json", import.meta.url).pathname,
      "--allow-ffi",
      new URL("./heap_trim_probe.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert(out.success, `probe failed: ${stderr}`);
  const r = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    pages: number;
    before: number;
    after: number;
    trimmed: boolean;
  };
  assert(r.trimmed, "the trimmer did not trim after a Run ended");
  assert(r.pages > 8000, `pages ${r.pages}`);
  // Without a trim, interleaved frees return nothing; the trim returns (nearly) every page.
  assert(r.before >= r.pages * 0.9, `resident before the trim: ${r.before} of ${r.pages}`);
  assert(r.after <= r.pages * 0.1, `resident after the trim: ${r.after} of ${r.pages}`);
});

Deno.test("a trim first collects the dead JS objects that hold native memory", async () => {
  const t = startHeapTrim({ intervalMs: 3_600_000 });
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
