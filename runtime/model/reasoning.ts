/**
 * The reasoning of one logical call [MB-12]: `message.thinking` kept apart
 * from the answer. Pure apart from the injected clock and delta sink.
 *
 * What this file enforces:
 * - reasoning never reaches the answer buffer, the repetition guard or the
 *   12 KiB answer ceiling (the caller feeds it here only);
 * - at most REASONING_COMMIT_MAX_BYTES are kept per call: past it the
 *   UTF-8-safe prefix is kept, REASONING_MARKER is appended once and the
 *   rest is dropped (the stream goes on: the answer is still to come);
 * - deltas to the live sink are coalesced (the first at once, then ≥ 256
 *   bytes or ≥ 50 ms) and their concatenation equals the committed text.
 */
import {
  CONTENT_DELTA_COALESCE_MS,
  REASONING_COMMIT_MAX_BYTES,
  REASONING_DELTA_COALESCE_BYTES,
} from "../limits.ts";
import { utf8Prefix } from "./answer.ts";
import type { ContentDelta } from "./types.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

/** The one fixed marker appended when a call's reasoning passes 32 KiB. */
export const REASONING_MARKER = "\n\n[Reasoning cut: it reached the 32 KiB limit.]";

const enc = new TextEncoder();
const dec = new TextDecoder();
export const REASONING_CONTENT_LIMIT_BYTES = REASONING_COMMIT_MAX_BYTES -
  utf8Bytes(REASONING_MARKER);

export class ReasoningBuffer {
  #bytes = new Uint8Array(1024);
  #len = 0;
  #sent = 0;
  #deltas = 0;
  #cut = false;
  #lastFlush: number;
  #onDelta?: (d: ContentDelta) => void;
  #now: () => number;

  constructor(onDelta?: (d: ContentDelta) => void, now: () => number = Date.now) {
    this.#onDelta = onDelta;
    this.#now = now;
    this.#lastFlush = now();
  }

  get cut(): boolean {
    return this.#cut;
  }

  append(text: string): void {
    if (this.#cut || text.length === 0) return;
    let chunk: Uint8Array = enc.encode(text);
    if (this.#len + chunk.length > REASONING_CONTENT_LIMIT_BYTES) {
      chunk = utf8Prefix(chunk, REASONING_CONTENT_LIMIT_BYTES - this.#len);
      this.#cut = true;
    }
    if (this.#len + chunk.length > this.#bytes.length) {
      const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, this.#len + chunk.length));
      bigger.set(this.#bytes.subarray(0, this.#len));
      this.#bytes = bigger;
    }
    this.#bytes.set(chunk, this.#len);
    this.#len += chunk.length;
    if (this.#cut) return this.#flush(REASONING_MARKER);
    const now = this.#now();
    const pending = this.#len - this.#sent;
    if (
      this.#deltas === 0 || pending >= REASONING_DELTA_COALESCE_BYTES ||
      now - this.#lastFlush >= CONTENT_DELTA_COALESCE_MS
    ) this.#flush("");
  }

  /** Flushes what is pending; returns the text to commit ("" when the model did not reason). */
  finish(): string {
    this.#flush("");
    return dec.decode(this.#bytes.subarray(0, this.#len)) + (this.#cut ? REASONING_MARKER : "");
  }

  #flush(suffix: string): void {
    const text = dec.decode(this.#bytes.subarray(this.#sent, this.#len)) + suffix;
    this.#sent = this.#len;
    this.#lastFlush = this.#now();
    if (text.length === 0 || !this.#onDelta) return;
    this.#onDelta({ text, index: this.#deltas++ });
  }
}
