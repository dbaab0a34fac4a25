/**
 * A Task's output spool [EX-6]: `output.log` in the Task root, stdout and
 * stderr in arrival order (as the runner streams them: ANSI-stripped, valid
 * UTF-8).
 *
 * What this file enforces: the file never exceeds TASK_OUTPUT_MAX_BYTES. When
 * a chunk would pass it, the file is rewritten (temp + rename) with its last
 * TASK_OUTPUT_TRIM_TO_BYTES (cut at a code-point boundary) and then grows
 * again — so the TAIL is what is kept, and `omitted` counts every byte that
 * was dropped from the front (what the API and the tools say). The spool is
 * written only by the server (0600); the command never sees it.
 */
import { TASK_OUTPUT_MAX_BYTES, TASK_OUTPUT_TRIM_TO_BYTES } from "../limits.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Index of the first byte at or after `i` that starts a code point. */
function boundary(b: Uint8Array, i: number): number {
  while (i < b.length && (b[i] & 0xc0) === 0x80) i++;
  return i;
}

export class OutputSpool {
  readonly path: string;
  readonly #max: number;
  readonly #trimTo: number;
  /** What the file holds (kept in memory as well: ≤ TASK_OUTPUT_MAX_BYTES). */
  #kept: Uint8Array[] = [];
  #keptBytes = 0;
  #total = 0;
  #omitted = 0;
  #file: Deno.FsFile | null;

  constructor(path: string, max = TASK_OUTPUT_MAX_BYTES, trimTo = TASK_OUTPUT_TRIM_TO_BYTES) {
    this.path = path;
    this.#max = max;
    this.#trimTo = trimTo;
    this.#file = Deno.openSync(path, { create: true, write: true, truncate: true, mode: 0o600 });
  }

  /** Bytes the command wrote in all. */
  get total(): number {
    return this.#total;
  }

  /** Bytes dropped from the front (0 while everything fits). */
  get omitted(): number {
    return this.#omitted;
  }

  append(text: string): void {
    if (this.#file === null || text === "") return;
    const b = enc.encode(text);
    this.#total += b.length;
    if (this.#keptBytes + b.length <= this.#max) {
      this.#kept.push(b);
      this.#keptBytes += b.length;
      this.#file.writeSync(b);
      return;
    }
    // Over the bound: keep the last trimTo bytes of (kept + chunk), rewrite the file.
    const all = new Uint8Array(this.#keptBytes + b.length);
    let at = 0;
    for (const k of this.#kept) {
      all.set(k, at);
      at += k.length;
    }
    all.set(b, at);
    const start = boundary(all, Math.max(0, all.length - this.#trimTo));
    const tail = all.slice(start);
    this.#omitted += start;
    this.#kept = [tail];
    this.#keptBytes = tail.length;
    this.#file.close();
    const tmp = `${this.path}.tmp`;
    Deno.writeFileSync(tmp, tail, { mode: 0o600 });
    Deno.renameSync(tmp, this.path);
    this.#file = Deno.openSync(this.path, { write: true, append: true });
  }

  /** The last `max` bytes kept (at a code-point boundary) and how many earlier bytes exist. */
  tail(max: number): { text: string; earlier: number } {
    return tailOfBytes(this.#joined(), max, this.#omitted);
  }

  #joined(): Uint8Array {
    if (this.#kept.length !== 1) {
      const all = new Uint8Array(this.#keptBytes);
      let at = 0;
      for (const k of this.#kept) {
        all.set(k, at);
        at += k.length;
      }
      this.#kept = [all];
    }
    return this.#kept[0] ?? new Uint8Array(0);
  }

  close(): void {
    this.#file?.close();
    this.#file = null;
  }
}

/** The last `max` bytes of `b` and the count of bytes before them (`omitted` already gone). */
export function tailOfBytes(
  b: Uint8Array,
  max: number,
  omitted: number,
): { text: string; earlier: number } {
  const start = b.length <= max ? 0 : boundary(b, b.length - max);
  return { text: dec.decode(b.subarray(start)), earlier: omitted + start };
}

/** Reads a finished Task's spool tail from its file (null when the file is gone). */
export function readSpoolTail(
  path: string,
  max: number,
  omitted: number,
): { text: string; earlier: number } | null {
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true });
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  try {
    const size = f.statSync().size;
    const from = Math.max(0, size - max - 3); // a few bytes more to find a boundary
    f.seekSync(from, Deno.SeekMode.Start);
    const buf = new Uint8Array(size - from);
    let got = 0;
    while (got < buf.length) {
      const n = f.readSync(buf.subarray(got));
      if (n === null || n === 0) break;
      got += n;
    }
    const r = tailOfBytes(buf.subarray(0, got), max, omitted + from);
    return r;
  } finally {
    f.close();
  }
}
