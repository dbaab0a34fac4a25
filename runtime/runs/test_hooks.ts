/**
 * Test-only hooks of the Run service, read from the environment ONCE at
 * startup. The ONLY place that reads these variables:
 *
 * - `AGENT_BUILDER_TEST_PREPARATION_PAUSE=<phase>:<ms>` pauses every context
 *   preparation at the start of `<phase>` for `<ms>` (≤ 10,000) so a test can
 *   observe and cancel an in-flight preparation over HTTP;
 * - `AGENT_BUILDER_TEST_JOURNAL_FAULT=<event kind>` makes the first durable
 *   journal write of a Run that contains an event of that kind fail INSIDE its
 *   SQLite transaction (which then really rolls back), so a test can prove
 *   [EV-5] against the real server;
 * - `AGENT_BUILDER_TEST_RUN_DEADLINE_MS=<ms>` SHORTENS the Control Plane's Run
 *   deadline (1,000 ≤ ms ≤ 240,000) so a test can prove [SB-5]'s deadline ends
 *   a Run that waits on something no model timer covers (an approval).
 *
 * Harmless in production: all are unset. A value that does not parse selects
 * nothing. They can only delay work that is cancellable anyway or make a Run
 * fail closed sooner — never skip a check, never lengthen a bound, never write
 * anything.
 */
import { RUN_DEADLINE_MS } from "../limits.ts";
import { EVENT_KINDS, type EventKind } from "../protocol/events.ts";
import { type PhasePause, PREPARATION_PHASES, type PreparationPhase } from "./preparation.ts";

export const PREPARATION_PAUSE_ENV = "AGENT_BUILDER_TEST_PREPARATION_PAUSE";
export const JOURNAL_FAULT_ENV = "AGENT_BUILDER_TEST_JOURNAL_FAULT";
export const RUN_DEADLINE_ENV = "AGENT_BUILDER_TEST_RUN_DEADLINE_MS";
const PAUSE_MAX_MS = 10_000;
const TEST_DEADLINE_MIN_MS = 1000;

export interface RunTestHooks {
  preparationPause: PhasePause | null;
  /** Event kind whose first durable write of each Run fails (null: none). */
  journalFault: EventKind | null;
  /** A shorter Run deadline (null: RUN_DEADLINE_MS). */
  runDeadlineMs: number | null;
}

export const NO_RUN_TEST_HOOKS: RunTestHooks = {
  preparationPause: null,
  journalFault: null,
  runDeadlineMs: null,
};

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch (err) {
    // Without env permission nothing can be configured: no hook is armed.
    if (err instanceof Deno.errors.NotCapable) return undefined;
    throw err;
  }
}

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

export function runTestHooksFromEnv(): RunTestHooks {
  let preparationPause: PhasePause | null = null;
  const m = /^([a-z_]+):(\d{1,5})$/.exec(readEnv(PREPARATION_PAUSE_ENV) ?? "");
  if (m && (PREPARATION_PHASES as readonly string[]).includes(m[1])) {
    const ms = Number(m[2]);
    if (ms <= PAUSE_MAX_MS) preparationPause = pauseAt(m[1] as PreparationPhase, ms);
  }
  const kind = readEnv(JOURNAL_FAULT_ENV);
  const journalFault = (EVENT_KINDS as readonly string[]).includes(kind ?? "")
    ? kind as EventKind
    : null;
  const d = /^\d{4,6}$/.exec(readEnv(RUN_DEADLINE_ENV) ?? "");
  const ms = d ? Number(d[0]) : NaN;
  const runDeadlineMs = ms >= TEST_DEADLINE_MIN_MS && ms <= RUN_DEADLINE_MS ? ms : null;
  return { preparationPause, journalFault, runDeadlineMs };
}
