/**
 * When the model is paused by the Broker's circuit [#18]: a Turn that
 * failed with `model_temporarily_unhealthy` means the circuit for that model
 * opened at (about) that Turn's end and stays open CIRCUIT_OPEN_MS; until
 * then Send waits and the composer counts down. Pure.
 */

/** Mirrors runtime/limits.ts CIRCUIT_OPEN_MS (a unit test keeps them equal). */
export const CIRCUIT_OPEN_MS = 30 * 1000;
export const CIRCUIT_CODE = "model_temporarily_unhealthy";

/** The time the newest circuit-paused Turn's pause ends, or null. */
export function pausedUntil(
  turns: readonly { code: string | null; finishedAt: number | null }[],
): number | null {
  for (let i = turns.length - 1; i >= 0; i--) {
    const t = turns[i];
    if (t.finishedAt === null) continue;
    return t.code === CIRCUIT_CODE ? t.finishedAt + CIRCUIT_OPEN_MS : null;
  }
  return null;
}

/** Whole seconds left (rounded up), 0 once the pause is over. */
export function secondsLeft(until: number | null, now: number): number {
  return until === null ? 0 : Math.max(0, Math.ceil((until - now) / 1000));
}
