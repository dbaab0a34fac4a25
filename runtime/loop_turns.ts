/**
 * One Run-path section per loop turn [PF-2]: requests that arrive together
 * (four submits in one batch of connections) would otherwise run their
 * synchronous parts back to back in one turn of the event loop, and the loop
 * stalls for their sum. `nextLoopTurn()` resumes its waiters one per loop
 * iteration, in arrival order, so timers, I/O and the other Runs get the loop
 * between two of them.
 *
 * The turn is an immediate (node:timers `setImmediate`, the loop's check
 * phase): a `setTimeout(0)` hop costs ~2.2 ms in Deno (timer granularity), an
 * immediate ~0.03 ms, and a lone submit pays two hops. (A MessageChannel
 * message is no turn at all: a queued message is delivered inside the same
 * microtask checkpoint.)
 *
 * What this file enforces: at most one waiter resumes per loop iteration; FIFO.
 */
import { setImmediate } from "node:timers";

const waiting: Array<() => void> = [];

function grant(): void {
  const next = waiting.shift();
  if (waiting.length > 0) setImmediate(grant);
  next?.();
}

/** Resolves on a later loop iteration, after every earlier waiter had its own. */
export function nextLoopTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) setImmediate(grant);
  });
}
