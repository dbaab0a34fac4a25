/**
 * The repetition guard [MB-7] — pure, no I/O, no clock.
 *
 * Rule: within the last REPETITION_WINDOW_CODEPOINTS (2048) code points of the
 * visible answer, an exact suffix cycle of REPETITION_CYCLE_MIN_BYTES..MAX
 * (32..512) bytes repeated at least REPETITION_MIN_REPEATS (3) times and
 * covering at least REPETITION_MIN_TOTAL_BYTES (512) bytes, checked at most
 * once per REPETITION_CHECK_EVERY_BYTES (64) new bytes.
 *
 * On a hit the guard reports where to cut: the answer keeps everything before
 * the repeated region plus one copy of the cycle (never less than what was
 * already sent), moved forward to a UTF-8 code point boundary. The broker then
 * drops the unsent tail, appends the fixed marker and closes the stream.
 */
import {
  REPETITION_CHECK_EVERY_BYTES,
  REPETITION_CYCLE_MAX_BYTES,
  REPETITION_CYCLE_MIN_BYTES,
  REPETITION_MIN_REPEATS,
  REPETITION_MIN_TOTAL_BYTES,
  REPETITION_WINDOW_CODEPOINTS,
} from "../limits.ts";

/** The one fixed marker appended after a repetition cut. */
export const REPETITION_MARKER =
  "\n\n[Answer cut: the model kept repeating itself; the repeated tail was dropped.]";

export interface SuffixCycle {
  /** Cycle length in bytes. */
  cycleBytes: number;
  /** How many times the cycle repeats at the end (≥ 3). */
  repeats: number;
}

/**
 * Finds the shortest qualifying exact suffix cycle in `tail` (the bytes of the
 * last ≤ 2048 code points), or null.
 */
export function findSuffixCycle(tail: Uint8Array): SuffixCycle | null {
  const n = tail.length;
  const maxL = Math.min(REPETITION_CYCLE_MAX_BYTES, Math.floor(n / REPETITION_MIN_REPEATS));
  for (let L = REPETITION_CYCLE_MIN_BYTES; L <= maxL; L++) {
    let k = 1;
    while ((k + 1) * L <= n && equalRanges(tail, n - (k + 1) * L, n - L, L)) k++;
    if (k >= REPETITION_MIN_REPEATS && k * L >= REPETITION_MIN_TOTAL_BYTES) {
      return { cycleBytes: L, repeats: k };
    }
  }
  return null;
}

function equalRanges(b: Uint8Array, a: number, c: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (b[a + i] !== b[c + i]) return false;
  return true;
}

/** Byte offset where the last `codepoints` code points of `bytes[0:end]` start. */
export function windowStart(bytes: Uint8Array, end: number, codepoints: number): number {
  let seen = 0;
  let i = end;
  while (i > 0 && seen < codepoints) {
    i--;
    if ((bytes[i] & 0xc0) !== 0x80) seen++;
  }
  return i;
}

/** Moves `at` forward to the next UTF-8 code point boundary (or `end`). */
export function nextBoundary(bytes: Uint8Array, at: number, end: number): number {
  let i = at;
  while (i < end && (bytes[i] & 0xc0) === 0x80) i++;
  return i;
}

/** Incremental guard over the visible answer bytes of one plain-phase call. */
export class RepetitionGuard {
  #buf = new Uint8Array(4096);
  #len = 0;
  #sinceCheck = 0;
  checks = 0;

  get length(): number {
    return this.#len;
  }

  /**
   * Appends answer bytes. Returns the byte offset to cut the answer at when the
   * rule fires (never below `sentBytes`), else null.
   */
  push(chunk: Uint8Array, sentBytes: number): number | null {
    if (this.#len + chunk.length > this.#buf.length) {
      const bigger = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + chunk.length));
      bigger.set(this.#buf.subarray(0, this.#len));
      this.#buf = bigger;
    }
    this.#buf.set(chunk, this.#len);
    this.#len += chunk.length;
    this.#sinceCheck += chunk.length;
    if (this.#sinceCheck < REPETITION_CHECK_EVERY_BYTES) return null;
    this.#sinceCheck = 0;
    this.checks++;
    const start = windowStart(this.#buf, this.#len, REPETITION_WINDOW_CODEPOINTS);
    const hit = findSuffixCycle(this.#buf.subarray(start, this.#len));
    if (hit === null) return null;
    const regionStart = this.#len - hit.repeats * hit.cycleBytes;
    const keep = Math.max(regionStart + hit.cycleBytes, sentBytes);
    return nextBoundary(this.#buf, keep, this.#len);
  }
}
