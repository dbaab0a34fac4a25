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
 * Run ended since the last trim (or the start-up ended: `noteStartUpEnded`;
 * measured: the idle server's RSS 97.9 → 87 MiB), on an unref'd timer (it
 * never keeps the process alive).
 *
 * A trim holds the event loop for the whole collection (tens of ms, up to
 * ~200 ms measured under load), so it waits until no Run is active [PF-2]:
 * the stall then falls where nobody waits for a stream — at the latest tick,
 * or at once when the last active Run ends and a trim is due. A server that is
 * never idle still trims once HEAP_TRIM_DEFER_MAX_MS passed since the last trim.
 *
 * What this file enforces: nothing beyond that; where libc has no
 * `malloc_trim` (not glibc) it does nothing.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { HEAP_TRIM_DEFER_MAX_MS, HEAP_TRIM_INTERVAL_MS } from "./limits.ts";

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
/** Runs started and not yet ended (process-wide, like the Runs' memory). */
let activeRuns = 0;

/** Marks that a Run started: no trim while it is active (up to HEAP_TRIM_DEFER_MAX_MS). */
export function noteRunStarted(): void {
  activeRuns++;
}

/**
 * Marks that the server finished starting: the next tick trims what the start-up freed
 * (migrations, recovery, the Agents' checks) without waiting for a Run to end.
 */
export function noteStartUpEnded(): void {
  dirty = true;
}

/** The running trimmer's "a moment without Runs" hook, if any. */
let onIdle: (() => void) | null = null;

/**
 * Marks that a Run ended (its native memory was freed). When it was the last active Run, the
 * trim that was due meanwhile runs right away, in the gap before the next Run: under back-to-back
 * Turns a periodic tick almost always finds one active.
 */
export function noteRunEnded(): void {
  activeRuns = Math.max(0, activeRuns - 1);
  dirty = true;
  if (activeRuns === 0 && onIdle !== null) {
    const idle = setTimeout(onIdle, 0);
    Deno.unrefTimer(idle);
  }
}

export interface HeapTrimmer {
  /** Trims now if a Run ended since the last trim and none is active (or the deferral ran out); returns whether it trimmed. */
  tick(): boolean;
  /** Trims performed so far (for tests). */
  readonly trims: number;
  stop(): void;
}

export interface HeapTrimOptions {
  /** @default HEAP_TRIM_INTERVAL_MS */
  intervalMs?: number;
  /** @default HEAP_TRIM_DEFER_MAX_MS */
  deferMaxMs?: number;
}

/** Starts the periodic trim (a no-op trimmer where glibc's `malloc_trim` is absent). */
export function startHeapTrim(o: HeapTrimOptions = {}): HeapTrimmer {
  const intervalMs = o.intervalMs ?? HEAP_TRIM_INTERVAL_MS;
  const deferMaxMs = o.deferMaxMs ?? HEAP_TRIM_DEFER_MAX_MS;
  const trim = libcTrim();
  const gc = fullGc();
  let trims = 0;
  let lastTrim = performance.now();
  const tick = (): boolean => {
    if (!dirty || trim === null) return false;
    if (activeRuns > 0 && performance.now() - lastTrim < deferMaxMs) return false;
    dirty = false;
    lastTrim = performance.now();
    gc?.();
    trim();
    trims++;
    return true;
  };
  const timer = setInterval(tick, intervalMs);
  Deno.unrefTimer(timer);
  const idleHook = () => {
    if (activeRuns === 0 && performance.now() - lastTrim >= intervalMs) tick();
  };
  onIdle = idleHook;
  return {
    tick,
    get trims() {
      return trims;
    },
    stop: () => {
      clearInterval(timer);
      if (onIdle === idleHook) onIdle = null;
    },
  };
}
