/**
 * An event-loop lag monitor for benchmarks [PF-2]: a timer every
 * LOOP_LAG_TICK_MS; when it fires late, the loop was held that much longer
 * (by a callback, a collection, or not being scheduled), and the stall — wall
 * clock time of its end and its length — is appended to a log as
 * `<epoch ms> <lag ms>`. Armed in the test server entry by
 * AGENT_BUILDER_TEST_LOOP_LAG_LOG; the shipped entry never runs it.
 */
export const LOOP_LAG_TICK_MS = 2;
/** Stalls shorter than this are not logged. */
export const LOOP_LAG_LOG_MIN_MS = 5;

export function startLoopLagLog(path: string): void {
  Deno.writeTextFileSync(path, "");
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    const lag = now - last - LOOP_LAG_TICK_MS;
    last = now;
    if (lag >= LOOP_LAG_LOG_MIN_MS) {
      Deno.writeTextFileSync(path, `${Date.now()} ${lag.toFixed(1)}\n`, { append: true });
    }
  }, LOOP_LAG_TICK_MS);
  Deno.unrefTimer(timer);
}

/** The longest stall logged at `path` that overlaps [from, to] (epoch ms), or 0. */
export function maxLagBetween(path: string, from: number, to: number): number {
  let max = 0;
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    const [end, lag] = line.split(" ").map(Number);
    if (!Number.isFinite(end) || !Number.isFinite(lag)) continue;
    if (end >= from && end - lag <= to && lag > max) max = lag;
  }
  return max;
}
