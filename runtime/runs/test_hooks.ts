/**
 * Test-only hooks of the Run service: a type and its "none" value. The product
 * never arms them — `createApp` receives them as an option, and only the test
 * entry (tests/helpers/test_server_entry.ts) passes any. They can only delay
 * work that is cancellable anyway or make a Run fail closed sooner — never skip
 * a check, never lengthen a bound, never write anything.
 */
import type { EventKind } from "../protocol/events.ts";
import type { PhasePause, PreparationPhase } from "./preparation.ts";

export interface RunTestHooks {
  /** Pauses every context preparation at the start of one phase (null: none). */
  preparationPause: PhasePause | null;
  /** Event kind whose first durable write of each Run fails inside its transaction (null: none). */
  journalFault: EventKind | null;
  /** A shorter Run deadline (null: RUN_DEADLINE_MS). */
  runDeadlineMs: number | null;
  /**
   * A smaller per-Agent checkpoint bound, so expiry is provable without writing 64 MiB
   * [TL-11] (absent or null: CHECKPOINT_AGENT_MAX_BYTES).
   */
  checkpointMaxBytes?: number | null;
  /** A shorter subagent wall [LC-2] (null: SUBAGENT_WALL_MS). */
  subagentWallMs?: number | null;
}

export const NO_RUN_TEST_HOOKS: RunTestHooks = {
  preparationPause: null,
  journalFault: null,
  runDeadlineMs: null,
};

/** A pause of `ms` at the start of `phase` that ends early when the operation is cancelled. */
export function pauseAt(phase: PreparationPhase, ms: number): PhasePause {
  return (p, signal) => {
    if (p !== phase || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const t = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
    });
  };
}
