/**
 * Crash injection for recovery tests. The ONLY place that reads the
 * `AGENT_BUILDER_TEST_FAULT` environment variable. When it names a fault point
 * (e.g. `agent.create.after_provisioning`), the server SIGKILLs itself the
 * moment it reaches that point, so a test can prove restart recovery
 * converges the half-done transition.
 *
 * Harmless in production: the variable is unset, `hit()` is a no-op, and the
 * value can only select one of the fixed points below (anything else is
 * ignored). It can only make this very process die — never skip a check.
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

export const FAULT_ENV = "AGENT_BUILDER_TEST_FAULT";

/** Reads the fault point from the environment once, at startup. */
export function faultInjectorFromEnv(): FaultInjector {
  let value: string | undefined;
  try {
    value = Deno.env.get(FAULT_ENV);
  } catch (err) {
    // Without env permission there is no way to configure a fault: none is armed.
    if (err instanceof Deno.errors.NotCapable) return NO_FAULTS;
    throw err;
  }
  const armed = (FAULT_POINTS as readonly string[]).find((p) => p === value);
  if (!armed) return NO_FAULTS;
  return {
    hit(point) {
      if (point === armed) Deno.kill(Deno.pid, "SIGKILL");
    },
  };
}
