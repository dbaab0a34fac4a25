/**
 * Crash injection for recovery tests: the fixed points at which a lifecycle
 * transition can be interrupted, and an injector that SIGKILLs this process
 * when it reaches the one armed point. The product never arms one — `createApp`
 * receives the injector as an option, and only the test entry
 * (tests/helpers/test_server_entry.ts) passes an armed one. It can only make
 * this very process die — never skip a check.
 */

/** Every point at which a lifecycle transition can be interrupted. */
export const FAULT_POINTS = [
  "agent.create.after_insert",
  "agent.create.after_provisioning",
  "agent.upgrade.after_fence",
  "agent.upgrade.after_stage",
  "agent.delete.after_fence",
  "agent.delete.after_remove_data",
] as const;

export type FaultPoint = typeof FAULT_POINTS[number];

export interface FaultInjector {
  /** Dies with SIGKILL when `point` is the configured fault; otherwise returns. */
  hit(point: FaultPoint): void;
}

export const NO_FAULTS: FaultInjector = { hit() {} };

/** An injector armed at `armed`: the process SIGKILLs itself on reaching it. */
export function faultInjectorAt(armed: FaultPoint): FaultInjector {
  return {
    hit(point) {
      if (point === armed) Deno.kill(Deno.pid, "SIGKILL");
    },
  };
}
