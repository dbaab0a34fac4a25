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
 *   [EV-5] against the real server.
 *
 * Harmless in production: both are unset. A value that does not parse selects
 * nothing. They can only delay work that is cancellable anyway or make a Run
 * fail closed — never skip a check, never write anything.
 */
import { EVENT_KINDS, type EventKind } from "../protocol/events.ts";
import { type PhasePause, PREPARATION_PHASES, type PreparationPhase } from "./preparation.ts";

export const PREPARATION_PAUSE_ENV = "AGENT_BUILDER_TEST_PREPARATION_PAUSE";
export const JOURNAL_FAULT_ENV = "AGENT_BUILDER_TEST_JOURNAL_FAULT";
const PAUSE_MAX_MS = 10_000;

export interface RunTestHooks {
  preparationPause: PhasePause | null;
  /** Event kind whose first durable write of each Run fails (null: none). */
  journalFault: EventKind | null;
}

export const NO_RUN_TEST_HOOKS: RunTestHooks = { preparationPause: null, journalFault: null };

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
  return { preparationPause, journalFault };
}
