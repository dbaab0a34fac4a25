/**
 * The visible answer of one logical call: commit ceiling, delta coalescing and
 * the repetition guard hook [MB-6, MB-7]. Pure apart from the injected clock
 * and delta sink.
 *
 * What this file enforces:
 * - the committed answer (markers included) is at most ANSWER_COMMIT_MAX_BYTES;
 *   past the ceiling the UTF-8-safe prefix is kept and MAX_OUTPUT_MARKER is
 *   appended once; later content is ignored (the caller drains for usage);
 * - at most CONTENT_IPC_FRAMES_MAX deltas reach the sink: the first goes out at
 *   once, later ones are coalesced (≥ 96 bytes or ≥ 50 ms) and stop at 126; the
 *   final flush is one more;
 * - a repetition hit cuts the answer at the guard's offset (never below what
 *   was already sent) and appends REPETITION_MARKER once.
 */
import {
  ANSWER_COMMIT_MAX_BYTES,
  CONTENT_DELTA_COALESCE_BYTES,
  CONTENT_DELTA_COALESCE_MS,
  CONTENT_IPC_FRAMES_MAX,
} from "../limits.ts";
import { REPETITION_MARKER, RepetitionGuard } from "./repetition_guard.ts";
import type { ContentDelta } from "./types.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

/** The one fixed marker appended when the 12 KiB ceiling is reached. */
export const MAX_OUTPUT_MARKER = "\n\n[Answer cut: it reached the 12 KiB output limit.]";

const enc = new TextEncoder();
const dec = new TextDecoder();
const MARKER_ROOM = Math.max(
  utf8Bytes(MAX_OUTPUT_MARKER),
  utf8Bytes(REPETITION_MARKER),
);
/** Content bytes allowed before a marker, so content + marker ≤ the ceiling. */
export const CONTENT_LIMIT_BYTES = ANSWER_COMMIT_MAX_BYTES - MARKER_ROOM;
/** Intermediate deltas stop here so the final flush keeps the total ≤ 128. */
const INTERMEDIATE_DELTAS_MAX = CONTENT_IPC_FRAMES_MAX - 2;

export type AppendResult = "continue" | "max_output" | "repetition";

export interface AnswerOptions {
  guard: boolean;
  onDelta?: (d: ContentDelta) => void;
  now?: () => number;
}

export class AnswerBuffer {
  #bytes = new Uint8Array(1024);
  #len = 0;
  #sent = 0;
  #deltas = 0;
  #lastFlush: number;
  #state: "open" | "max_output" | "repetition" = "open";
  #guard: RepetitionGuard | null;
  #onDelta?: (d: ContentDelta) => void;
  #now: () => number;

  constructor(opts: AnswerOptions) {
    this.#guard = opts.guard ? new RepetitionGuard() : null;
    this.#onDelta = opts.onDelta;
    this.#now = opts.now ?? Date.now;
    this.#lastFlush = this.#now();
  }

  get state(): "open" | "max_output" | "repetition" {
    return this.#state;
  }

  get contentBytes(): number {
    return this.#len;
  }

  get deltasSent(): number {
    return this.#deltas;
  }

  /** Adds provider content. Ignored once the buffer is no longer open. */
  append(text: string): AppendResult {
    if (this.#state !== "open" || text.length === 0) {
      return this.#state === "open" ? "continue" : this.#state;
    }
    let chunk: Uint8Array = enc.encode(text);
    if (this.#len + chunk.length > CONTENT_LIMIT_BYTES) {
      chunk = utf8Prefix(chunk, CONTENT_LIMIT_BYTES - this.#len);
      this.#push(chunk);
      this.#state = "max_output";
      return "max_output";
    }
    this.#push(chunk);
    if (this.#guard) {
      const cut = this.#guard.push(chunk, this.#sent);
      if (cut !== null) {
        this.#len = Math.max(cut, this.#sent);
        this.#state = "repetition";
        return "repetition";
      }
    }
    this.#maybeFlush();
    return "continue";
  }

  /** Final flush (with the marker, if any); returns the text to commit. */
  finish(): string {
    const marker = this.#state === "max_output"
      ? MAX_OUTPUT_MARKER
      : this.#state === "repetition"
      ? REPETITION_MARKER
      : "";
    const rest = dec.decode(this.#bytes.subarray(this.#sent, this.#len)) + marker;
    if (rest.length > 0) this.#emit(rest);
    this.#sent = this.#len;
    return dec.decode(this.#bytes.subarray(0, this.#len)) + marker;
  }

  #push(chunk: Uint8Array): void {
    if (this.#len + chunk.length > this.#bytes.length) {
      const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, this.#len + chunk.length));
      bigger.set(this.#bytes.subarray(0, this.#len));
      this.#bytes = bigger;
    }
    this.#bytes.set(chunk, this.#len);
    this.#len += chunk.length;
  }

  #maybeFlush(): void {
    if (!this.#onDelta || this.#deltas >= INTERMEDIATE_DELTAS_MAX) return;
    const pending = this.#len - this.#sent;
    if (pending === 0) return;
    const now = this.#now();
    // The first delta goes out at once (time to first token); later ones coalesce.
    const due = this.#deltas === 0 || pending >= CONTENT_DELTA_COALESCE_BYTES ||
      now - this.#lastFlush >= CONTENT_DELTA_COALESCE_MS;
    if (!due) return;
    this.#emit(dec.decode(this.#bytes.subarray(this.#sent, this.#len)));
    this.#sent = this.#len;
    this.#lastFlush = now;
  }

  #emit(text: string): void {
    const index = this.#deltas++;
    this.#onDelta?.({ text, index });
  }
}

/** The longest prefix of `bytes` of at most `max` bytes ending on a code point boundary. */
export function utf8Prefix(bytes: Uint8Array, max: number): Uint8Array {
  if (bytes.length <= max) return bytes;
  let end = Math.max(0, max);
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end);
}
