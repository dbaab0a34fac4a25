/**
 * The per-model circuit breaker [MB-5]: two consecutive zero-first-frame
 * attempt failures for the same catalog model/profile open a short-circuit
 * for CIRCUIT_OPEN_MS, during which calls are refused before taking a slot or
 * opening HTTP (`model_temporarily_unhealthy`). A good first frame resets the
 * entry. Partial streams, idle stalls and cancels are not counted. At most
 * CIRCUIT_ENTRIES_MAX entries, in memory only (a restart clears it); the key is
 * the catalog id plus the profile digest — never the endpoint.
 */
import { CIRCUIT_ENTRIES_MAX, CIRCUIT_FAILURES_TO_OPEN } from "../limits.ts";

interface Entry {
  failures: number;
  openUntil: number;
}

export class CircuitBreaker {
  #entries = new Map<string, Entry>();
  readonly #openMs: number;
  readonly #now: () => number;

  constructor(openMs: number, now: () => number = Date.now) {
    this.#openMs = openMs;
    this.#now = now;
  }

  static key(modelId: string, profileDigest: string): string {
    return `${modelId}\0${profileDigest}`;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** True while the circuit for `key` is open. */
  isOpen(key: string): boolean {
    const e = this.#entries.get(key);
    return e !== undefined && e.openUntil > this.#now();
  }

  /** An attempt failed with no provider frame. Opens after the second in a row. */
  recordZeroFrameFailure(key: string): void {
    const e = this.#entries.get(key) ?? this.#insert(key);
    if (e.openUntil !== 0 && e.openUntil <= this.#now()) {
      e.openUntil = 0; // half-open probe failed: start counting again from one
      e.failures = 0;
    }
    e.failures++;
    if (e.failures >= CIRCUIT_FAILURES_TO_OPEN) e.openUntil = this.#now() + this.#openMs;
  }

  /** A good first frame arrived: forget the entry. */
  recordFirstFrame(key: string): void {
    this.#entries.delete(key);
  }

  #insert(key: string): Entry {
    if (this.#entries.size >= CIRCUIT_ENTRIES_MAX) {
      // Evict a closed entry first (oldest insertion), else the oldest entry.
      let victim: string | undefined;
      for (const [k, v] of this.#entries) {
        if (!(v.openUntil > this.#now())) {
          victim = k;
          break;
        }
      }
      this.#entries.delete(victim ?? this.#entries.keys().next().value!);
    }
    const e: Entry = { failures: 0, openUntil: 0 };
    this.#entries.set(key, e);
    return e;
  }
}
