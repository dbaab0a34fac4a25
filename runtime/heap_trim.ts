/**
 * Giving the C allocator's free memory back to the kernel [PF-5].
 *
 * Every Turn allocates and frees native memory outside V8's heap (SQLite
 * pages and statements, Worker pipes, HTTP and stream buffers) on several
 * threads. glibc keeps freed chunks in its arenas and returns them to the
 * kernel only when the top of an arena is free, so fragmented arenas keep the
 * server's RSS rising Turn after Turn although what is in use stays flat
 * (measured: ~18 MiB in use, ~27 MiB free and resident). Each trim first runs
 * a full V8 collection (native memory held by dead JS objects is freed only
 * then), then `malloc_trim(0)` releases the free pages of every arena
 * (MADV_DONTNEED). It runs at most once per HEAP_TRIM_INTERVAL_MS, only when a
 * Run ended since the last trim, on an unref'd timer (it never keeps the
 * process alive).
 *
 * What this file enforces: nothing beyond that; where libc has no
 * `malloc_trim` (not glibc) it does nothing.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { HEAP_TRIM_INTERVAL_MS } from "./limits.ts";

type Trim = () => void;

let trimFn: Trim | null | undefined;
let gcFn: (() => void) | null | undefined;

/**
 * A full V8 collection. V8 sees neither SQLite's nor Deno's native memory
 * behind small JS objects (streams, pipes, buffers of a finished Run), and a
 * server whose JS heap is flat rarely runs a major collection, so that memory
 * stays allocated; one collection per trim frees it before the trim.
 */
function fullGc(): (() => void) | null {
  if (gcFn !== undefined) return gcFn;
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as unknown;
    gcFn = typeof gc === "function" ? () => void (gc as () => void)() : null;
  } catch {
    gcFn = null;
  }
  return gcFn;
}

/** glibc's `malloc_trim(0)`, or null where it is absent (or FFI is not allowed). */
function libcTrim(): Trim | null {
  if (trimFn !== undefined) return trimFn;
  try {
    const lib = Deno.dlopen(
      "libc.so.6",
      {
        malloc_trim: { parameters: ["usize"], result: "i32" },
      } as const,
    );
    trimFn = () => void lib.symbols.malloc_trim(0n);
  } catch {
    trimFn = null;
  }
  return trimFn;
}

/** Process-wide like the C heap itself: set when a Run ends, cleared by a trim. */
let dirty = false;

/** Marks that a Run ended (its native memory was freed): the next tick trims. */
export function noteRunEnded(): void {
  dirty = true;
}

export interface HeapTrimmer {
  /** Trims now if a Run ended since the last trim; returns whether it trimmed. */
  tick(): boolean;
  /** Trims performed so far (for tests). */
  readonly trims: number;
  stop(): void;
}

/** Starts the periodic trim (a no-op trimmer where glibc's `malloc_trim` is absent). */
export function startHeapTrim(intervalMs = HEAP_TRIM_INTERVAL_MS): HeapTrimmer {
  const trim = libcTrim();
  const gc = fullGc();
  let trims = 0;
  const tick = (): boolean => {
    if (!dirty || trim === null) return false;
    dirty = false;
    gc?.();
    trim();
    trims++;
    return true;
  };
  const timer = setInterval(tick, intervalMs);
  Deno.unrefTimer(timer);
  return {
    tick,
    get trims() {
      return trims;
    },
    stop: () => clearInterval(timer),
  };
}
