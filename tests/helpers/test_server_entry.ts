/**
 * The test entry: `serve` with test-only hooks armed from the environment. The
 * ONLY place that reads `AGENT_BUILDER_TEST_*`; the shipped entry (main.ts →
 * runtime/cli/serve.ts) never does, and the App only receives hooks as options.
 *
 * - `AGENT_BUILDER_TEST_FAULT=<point>` SIGKILLs the server at that lifecycle
 *   point (runtime/agents/test_fault.ts) so recovery can be proven;
 * - `AGENT_BUILDER_TEST_PREPARATION_PAUSE=<phase>:<ms>` (ms ≤ 10,000) pauses
 *   every context preparation at the start of `<phase>`, ending at once on
 *   cancel, so a test can observe and cancel an in-flight preparation;
 * - `AGENT_BUILDER_TEST_JOURNAL_FAULT=<event kind>` fails the first durable
 *   journal write of a Run containing that kind INSIDE its SQLite transaction
 *   ([EV-5] against the real server);
 * - `AGENT_BUILDER_TEST_RUN_DEADLINE_MS=<ms>` (1,000 ≤ ms ≤ RUN_DEADLINE_MS)
 *   shortens the Run deadline ([SB-5] for a Run waiting on an approval);
 * - `AGENT_BUILDER_TEST_CHECKPOINT_MAX_BYTES=<n>` (1 ≤ n < CHECKPOINT_AGENT_MAX_BYTES)
 *   lowers the per-Agent checkpoint bound, so its expiry is provable without
 *   writing 64 MiB ([TL-11]);
 * - `AGENT_BUILDER_TEST_TASK_WALL_MS=<ms>` (1,000 ≤ ms ≤ TASK_WALL_MAX_MS)
 *   shortens the background-Task wall limit ([EX-6]: 30 min in the product);
 * - `AGENT_BUILDER_TEST_SUBAGENT_WALL_MS=<ms>` (1,000 ≤ ms ≤ SUBAGENT_WALL_MS)
 *   shortens the subagent wall ([LC-2] `subagent_timeout` without a 45 s wait);
 * - `AGENT_BUILDER_TEST_LOOP_LAG_LOG=<path>` logs the server's event-loop stalls
 *   to `<path>` (tests/helpers/loop_lag.ts; the [PF-2] benchmark reads it).
 *
 * A value that does not parse arms nothing (a test proves it for the fault).
 */
// First, as in main.ts: zod is configured before any schema is built.
import "../../runtime/zod_jitless.ts";
import {
  FAULT_POINTS,
  type FaultInjector,
  faultInjectorAt,
  NO_FAULTS,
} from "../../runtime/agents/test_fault.ts";
import { serveCommand, type ServeHooks } from "../../runtime/cli/serve.ts";
import {
  CHECKPOINT_AGENT_MAX_BYTES,
  RUN_DEADLINE_MS,
  SUBAGENT_WALL_MS,
  TASK_WALL_MAX_MS,
} from "../../runtime/limits.ts";
import { EVENT_KINDS, type EventKind } from "../../runtime/protocol/events.ts";
import {
  type PhasePause,
  PREPARATION_PHASES,
  type PreparationPhase,
} from "../../runtime/runs/preparation.ts";
import { pauseAt, type RunTestHooks } from "../../runtime/runs/test_hooks.ts";
import { UsageError } from "../../runtime/argv.ts";
import { startLoopLagLog } from "./loop_lag.ts";
import { AppError } from "../../runtime/errors.ts";

export const FAULT_ENV = "AGENT_BUILDER_TEST_FAULT";
export const PREPARATION_PAUSE_ENV = "AGENT_BUILDER_TEST_PREPARATION_PAUSE";
export const JOURNAL_FAULT_ENV = "AGENT_BUILDER_TEST_JOURNAL_FAULT";
export const RUN_DEADLINE_ENV = "AGENT_BUILDER_TEST_RUN_DEADLINE_MS";
export const CHECKPOINT_MAX_ENV = "AGENT_BUILDER_TEST_CHECKPOINT_MAX_BYTES";
export const TASK_WALL_ENV = "AGENT_BUILDER_TEST_TASK_WALL_MS";
export const SUBAGENT_WALL_ENV = "AGENT_BUILDER_TEST_SUBAGENT_WALL_MS";
export const LOOP_LAG_LOG_ENV = "AGENT_BUILDER_TEST_LOOP_LAG_LOG";
const PAUSE_MAX_MS = 10_000;
const TEST_DEADLINE_MIN_MS = 1000;

function faultsFrom(value: string | undefined): FaultInjector {
  const armed = FAULT_POINTS.find((p) => p === value);
  return armed ? faultInjectorAt(armed) : NO_FAULTS;
}

function runHooksFrom(env: (name: string) => string | undefined): RunTestHooks {
  let preparationPause: PhasePause | null = null;
  const m = /^([a-z_]+):(\d{1,5})$/.exec(env(PREPARATION_PAUSE_ENV) ?? "");
  if (m && (PREPARATION_PHASES as readonly string[]).includes(m[1])) {
    const ms = Number(m[2]);
    if (ms <= PAUSE_MAX_MS) preparationPause = pauseAt(m[1] as PreparationPhase, ms);
  }
  const kind = env(JOURNAL_FAULT_ENV);
  const journalFault = (EVENT_KINDS as readonly string[]).includes(kind ?? "")
    ? kind as EventKind
    : null;
  const d = /^\d{4,6}$/.exec(env(RUN_DEADLINE_ENV) ?? "");
  const ms = d ? Number(d[0]) : NaN;
  const runDeadlineMs = ms >= TEST_DEADLINE_MIN_MS && ms <= RUN_DEADLINE_MS ? ms : null;
  const c = /^\d{1,8}$/.exec(env(CHECKPOINT_MAX_ENV) ?? "");
  const cap = c ? Number(c[0]) : NaN;
  const checkpointMaxBytes = cap >= 1 && cap < CHECKPOINT_AGENT_MAX_BYTES ? cap : null;
  const w = /^\d{4,5}$/.exec(env(SUBAGENT_WALL_ENV) ?? "");
  const wall = w ? Number(w[0]) : NaN;
  const subagentWallMs = wall >= TEST_DEADLINE_MIN_MS && wall <= SUBAGENT_WALL_MS ? wall : null;
  return { preparationPause, journalFault, runDeadlineMs, checkpointMaxBytes, subagentWallMs };
}

/** The hooks the environment arms (none when no variable is set). */
export function hooksFromEnv(env: (name: string) => string | undefined): ServeHooks {
  const w = /^\d{4,7}$/.exec(env(TASK_WALL_ENV) ?? "");
  const wall = w ? Number(w[0]) : NaN;
  const taskWallMs = wall >= TEST_DEADLINE_MIN_MS && wall <= TASK_WALL_MAX_MS ? wall : null;
  return { faults: faultsFrom(env(FAULT_ENV)), runTestHooks: runHooksFrom(env), taskWallMs };
}

if (import.meta.main) {
  const [name, ...rest] = Deno.args;
  if (name !== "serve") {
    console.error("test_server_entry: only `serve` is supported");
    Deno.exit(2);
  }
  const lagLog = Deno.env.get(LOOP_LAG_LOG_ENV);
  if (lagLog) startLoopLagLog(lagLog);
  try {
    Deno.exit(await serveCommand(rest, hooksFromEnv((n) => Deno.env.get(n))));
  } catch (err) {
    if (err instanceof UsageError || err instanceof AppError) {
      console.error(`test_server_entry serve: ${err.message}`);
      Deno.exit(err instanceof UsageError ? 2 : 1);
    }
    throw err;
  }
}
