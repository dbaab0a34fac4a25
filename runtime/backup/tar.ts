/**
 * The ustar writer for backups [OP-1]. Pure: no I/O (the sink is injected).
 *
 * Emits only directories and regular files, plus a pax `path` record when a
 * path does not fit the ustar name/prefix fields — exactly what
 * tar_parser.ts accepts. Numeric fields are octal (never base-256), owner
 * ids are zero, and a file's bytes must add up to its declared size.
 */

export const BLOCK = 512;
const MAX_OCTAL_11 = 8 ** 11 - 1;
const enc = new TextEncoder();

export type TarEntryType = "file" | "dir";

export interface TarEntryHeader {
  path: string;
  type: TarEntryType;
  size: number;
  /** Permission bits only (0o7777 masked). */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
}

function putString(h: Uint8Array, off: number, len: number, s: Uint8Array): void {
  if (s.length > len) throw new RangeError("field overflow");
  h.set(s, off);
}

function putOctal(h: Uint8Array, off: number, len: number, n: number): void {
  if (!Number.isSafeInteger(n) || n < 0 || n > 8 ** (len - 1) - 1) {
    throw new RangeError("numeric field overflow");
  }
  putString(h, off, len - 1, enc.encode(n.toString(8).padStart(len - 1, "0")));
}

/** Splits a UTF-8 path into ustar prefix/name, or null when it does not fit. */
function splitUstarPath(p: Uint8Array): { prefix: Uint8Array; name: Uint8Array } | null {
  if (p.length <= 100) return { prefix: new Uint8Array(0), name: p };
  for (let i = Math.min(p.length - 1, 155); i > 0; i--) {
    if (p[i] === 0x2f && p.length - i - 1 <= 100 && p.length - i - 1 > 0) {
      return { prefix: p.subarray(0, i), name: p.subarray(i + 1) };
    }
  }
  return null;
}

function rawHeader(
  name: Uint8Array,
  prefix: Uint8Array,
  typeflag: string,
  size: number,
  mode: number,
  mtime: number,
): Uint8Array {
  const h = new Uint8Array(BLOCK);
  putString(h, 0, 100, name);
  putOctal(h, 100, 8, mode & 0o7777);
  putOctal(h, 108, 8, 0);
  putOctal(h, 116, 8, 0);
  putOctal(h, 124, 12, size);
  putOctal(h, 136, 12, Math.max(0, Math.min(MAX_OCTAL_11, Math.floor(mtime))));
  h.fill(0x20, 148, 156);
  h[156] = typeflag.charCodeAt(0);
  putString(h, 257, 6, enc.encode("ustar\0"));
  putString(h, 263, 2, enc.encode("00"));
  putString(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  putString(h, 148, 8, enc.encode(sum.toString(8).padStart(6, "0") + "\0 "));
  return h;
}

/** One pax record `"<len> <key>=<value>\n"` where len counts the whole record. */
export function paxRecord(key: string, value: string): Uint8Array {
  const body = enc.encode(` ${key}=${value}\n`);
  let len = body.length + 1;
  while (String(len).length + body.length > len) len++;
  return enc.encode(`${len}${new TextDecoder().decode(body)}`);
}

/**
 * Encodes the header block(s) of one entry: a pax `x` header + record when the
 * path does not fit ustar, then the ustar header. Directory paths get a
 * trailing slash.
 */
export function encodeHeader(e: TarEntryHeader): Uint8Array {
  const path = e.type === "dir" ? `${e.path}/` : e.path;
  const bytes = enc.encode(path);
  const flag = e.type === "dir" ? "5" : "0";
  const size = e.type === "dir" ? 0 : e.size;
  const split = splitUstarPath(bytes);
  if (split) return rawHeader(split.name, split.prefix, flag, size, e.mode, e.mtime);
  const rec = paxRecord("path", path);
  const paxHdr = rawHeader(enc.encode("PaxHeader"), new Uint8Array(0), "x", rec.length, 0o600, 0);
  const out = new Uint8Array(BLOCK + padded(rec.length) + BLOCK);
  out.set(paxHdr, 0);
  out.set(rec, BLOCK);
  const short = bytes.subarray(bytes.length - Math.min(99, bytes.length));
  out.set(
    rawHeader(short, new Uint8Array(0), flag, size, e.mode, e.mtime),
    BLOCK + padded(rec.length),
  );
  return out;
}

/** `n` rounded up to a whole number of blocks. */
export function padded(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE: Uint8Array = new Uint8Array(2 * BLOCK);

/**
 * Streams entries into `sink` (which must consume each chunk synchronously).
 * Guards the ustar contract: a file's bytes must add up to its header size.
 */
export class TarWriter {
  #sink: (chunk: Uint8Array) => void;
  #open: { remaining: number; size: number } | null = null;
  #done = false;
  bytesWritten = 0;

  constructor(sink: (chunk: Uint8Array) => void) {
    this.#sink = sink;
  }

  #emit(chunk: Uint8Array): void {
    this.bytesWritten += chunk.length;
    this.#sink(chunk);
  }

  addDir(path: string, mode: number, mtime: number): void {
    this.#idle();
    this.#emit(encodeHeader({ path, type: "dir", size: 0, mode, mtime }));
  }

  beginFile(path: string, size: number, mode: number, mtime: number): void {
    this.#idle();
    this.#emit(encodeHeader({ path, type: "file", size, mode, mtime }));
    this.#open = { remaining: size, size };
  }

  write(chunk: Uint8Array): void {
    if (!this.#open || chunk.length > this.#open.remaining) {
      throw new RangeError("tar write exceeds the declared size");
    }
    this.#open.remaining -= chunk.length;
    if (chunk.length > 0) this.#emit(chunk);
  }

  endFile(): void {
    if (!this.#open || this.#open.remaining !== 0) {
      throw new RangeError("tar file shorter than its declared size");
    }
    const pad = padded(this.#open.size) - this.#open.size;
    if (pad > 0) this.#emit(new Uint8Array(pad));
    this.#open = null;
  }

  /** Adds a whole in-memory file. */
  addFile(path: string, data: Uint8Array, mode: number, mtime: number): void {
    this.beginFile(path, data.length, mode, mtime);
    this.write(data);
    this.endFile();
  }

  finish(): void {
    this.#idle();
    this.#emit(END_OF_ARCHIVE);
    this.#done = true;
  }

  #idle(): void {
    if (this.#open || this.#done) throw new RangeError("tar writer is not idle");
  }
}
