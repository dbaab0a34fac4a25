/**
 * The strict ustar parser for restores [OP-1]. Pure: no I/O.
 *
 * Accepts exactly what tar.ts writes — directories, regular files, and a pax
 * `path` record — and refuses everything else: hard and symbolic links,
 * devices, fifos, GNU long-name and global pax records, base-256 numbers,
 * bad checksums, data after the end-of-archive marker, and a stream that
 * ends early. Entry-count, per-entry, total and stream byte caps are checked
 * from each header, so a hostile archive is refused before its payload is
 * consumed. Path policy (what a path may name) is left to paths.ts.
 */
import { ArchiveError } from "./archive_error.ts";
import { BLOCK, padded, type TarEntryHeader, type TarEntryType } from "./tar.ts";

const dec = new TextDecoder("utf-8", { fatal: true });

export type TarEvent =
  | { kind: "entry"; entry: TarEntryHeader }
  | { kind: "data"; bytes: Uint8Array }
  | { kind: "entry_end" }
  | { kind: "end" };

export interface TarLimits {
  entriesMax: number;
  entryMaxBytes: number;
  totalMaxBytes: number;
  /** Every byte pushed, including headers, padding and trailer. */
  streamMaxBytes: number;
  paxMaxBytes: number;
  trailerMaxBytes: number;
}

function isZero(b: Uint8Array): boolean {
  for (const x of b) if (x !== 0) return false;
  return true;
}

function field(h: Uint8Array, off: number, len: number): Uint8Array {
  const f = h.subarray(off, off + len);
  const nul = f.indexOf(0);
  return nul < 0 ? f : f.subarray(0, nul);
}

function text(b: Uint8Array): string {
  try {
    return dec.decode(b);
  } catch (err) {
    if (err instanceof TypeError) throw new ArchiveError("path_invalid", "not UTF-8");
    throw err;
  }
}

/** Strict octal: optional leading spaces, 1+ digits, then only NUL/space. */
export function parseOctal(h: Uint8Array, off: number, len: number): number {
  const f = h.subarray(off, off + len);
  if (f[0] & 0x80) throw new ArchiveError("bad_header", "base-256 number");
  const s = String.fromCharCode(...f).replace(/[\0 ]+$/, "").replace(/^ +/, "");
  if (!/^[0-7]{1,12}$/.test(s)) throw new ArchiveError("bad_header", "numeric field");
  return parseInt(s, 8);
}

function checksumOk(h: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i];
  return parseOctal(h, 148, 8) === sum;
}

/** Parses a pax extended header body; only a `path` record is accepted. */
export function parsePax(body: Uint8Array): { path?: string } {
  const out: { path?: string } = {};
  let off = 0;
  while (off < body.length) {
    const sp = body.indexOf(0x20, off);
    if (sp < 0 || sp - off > 8) throw new ArchiveError("bad_header", "pax length");
    const lenText = String.fromCharCode(...body.subarray(off, sp));
    if (!/^[1-9][0-9]*$/.test(lenText)) throw new ArchiveError("bad_header", "pax length");
    const len = Number(lenText);
    if (off + len > body.length || body[off + len - 1] !== 0x0a) {
      throw new ArchiveError("bad_header", "pax record");
    }
    const rec = text(body.subarray(sp + 1, off + len - 1));
    const eq = rec.indexOf("=");
    const key = eq < 0 ? "" : rec.slice(0, eq);
    if (key !== "path" || out.path !== undefined) {
      throw new ArchiveError("unsupported_entry", "pax key");
    }
    out.path = rec.slice(eq + 1);
    off += len;
  }
  return out;
}

type State =
  | { s: "header" }
  | { s: "data"; remaining: number; pad: number }
  | { s: "pad"; remaining: number }
  | { s: "pax"; remaining: number; pad: number; buf: Uint8Array; got: number }
  | { s: "zero1" }
  | { s: "ended" };

/**
 * Incremental parser. `push` returns the events its chunk completes; `data`
 * events are views into the pushed chunk, so consume them before pushing the
 * next one. `finish` throws `truncated` unless the end marker was seen.
 */
export class TarParser {
  #limits: TarLimits;
  #state: State = { s: "header" };
  #hdr = new Uint8Array(BLOCK);
  #hdrGot = 0;
  #paxPath: string | undefined;
  #entries = 0;
  #total = 0;
  #stream = 0;
  #trailer = 0;

  constructor(limits: TarLimits) {
    this.#limits = limits;
  }

  get ended(): boolean {
    return this.#state.s === "ended";
  }

  push(chunk: Uint8Array): TarEvent[] {
    this.#stream += chunk.length;
    if (this.#stream > this.#limits.streamMaxBytes) throw new ArchiveError("archive_too_large");
    const out: TarEvent[] = [];
    let off = 0;
    while (off < chunk.length) {
      const st = this.#state;
      const avail = chunk.length - off;
      if (st.s === "header" || st.s === "zero1") {
        const n = Math.min(avail, BLOCK - this.#hdrGot);
        this.#hdr.set(chunk.subarray(off, off + n), this.#hdrGot);
        this.#hdrGot += n;
        off += n;
        if (this.#hdrGot === BLOCK) {
          this.#hdrGot = 0;
          this.#block(out);
        }
      } else if (st.s === "data") {
        const n = Math.min(avail, st.remaining);
        if (n > 0) out.push({ kind: "data", bytes: chunk.subarray(off, off + n) });
        st.remaining -= n;
        off += n;
        if (st.remaining === 0) {
          out.push({ kind: "entry_end" });
          this.#state = st.pad > 0 ? { s: "pad", remaining: st.pad } : { s: "header" };
        }
      } else if (st.s === "pad") {
        const n = Math.min(avail, st.remaining);
        st.remaining -= n;
        off += n;
        if (st.remaining === 0) this.#state = { s: "header" };
      } else if (st.s === "pax") {
        const n = Math.min(avail, st.remaining);
        st.buf.set(chunk.subarray(off, off + n), st.got);
        st.got += n;
        st.remaining -= n;
        off += n;
        if (st.remaining === 0) {
          this.#paxPath = parsePax(st.buf).path;
          this.#state = st.pad > 0 ? { s: "pad", remaining: st.pad } : { s: "header" };
        }
      } else {
        this.#trailer += avail;
        if (this.#trailer > this.#limits.trailerMaxBytes) throw new ArchiveError("trailing_data");
        if (!isZero(chunk.subarray(off))) throw new ArchiveError("trailing_data");
        off = chunk.length;
      }
    }
    return out;
  }

  finish(): void {
    if (this.#state.s !== "ended" || this.#hdrGot !== 0) throw new ArchiveError("truncated");
  }

  #block(out: TarEvent[]): void {
    const h = this.#hdr;
    if (this.#state.s === "zero1") {
      if (!isZero(h)) throw new ArchiveError("bad_header", "lone zero block");
      this.#state = { s: "ended" };
      out.push({ kind: "end" });
      return;
    }
    if (isZero(h)) {
      if (this.#paxPath !== undefined) throw new ArchiveError("bad_header", "dangling pax");
      this.#state = { s: "zero1" };
      return;
    }
    if (String.fromCharCode(...h.subarray(257, 265)) !== "ustar\u000000") {
      throw new ArchiveError("not_tar");
    }
    if (!checksumOk(h)) throw new ArchiveError("bad_header", "checksum");
    const flag = String.fromCharCode(h[156]);
    const size = parseOctal(h, 124, 12);
    switch (flag) {
      case "1":
      case "2":
        throw new ArchiveError("link_entry");
      case "3":
      case "4":
      case "6":
        throw new ArchiveError("special_entry");
      case "x": {
        if (this.#paxPath !== undefined) throw new ArchiveError("bad_header", "double pax");
        if (size === 0 || size > this.#limits.paxMaxBytes) {
          throw new ArchiveError("bad_header", "pax size");
        }
        this.#state = {
          s: "pax",
          remaining: size,
          pad: padded(size) - size,
          buf: new Uint8Array(size),
          got: 0,
        };
        return;
      }
      case "0":
      case "\0":
      case "5":
        break;
      default:
        throw new ArchiveError("unsupported_entry");
    }
    const type: TarEntryType = flag === "5" ? "dir" : "file";
    if (++this.#entries > this.#limits.entriesMax) throw new ArchiveError("too_many_entries");
    if (type === "dir" && size !== 0) throw new ArchiveError("bad_header", "dir with size");
    if (size > this.#limits.entryMaxBytes) throw new ArchiveError("entry_too_large");
    this.#total += size;
    if (this.#total > this.#limits.totalMaxBytes) throw new ArchiveError("archive_too_large");
    let path = this.#paxPath ?? this.#ustarPath(h);
    this.#paxPath = undefined;
    if (type === "dir" && path.endsWith("/")) path = path.slice(0, -1);
    const entry: TarEntryHeader = {
      path,
      type,
      size,
      mode: parseOctal(h, 100, 8) & 0o7777,
      mtime: parseOctal(h, 136, 12),
    };
    out.push({ kind: "entry", entry });
    if (type === "file" && size > 0) {
      this.#state = { s: "data", remaining: size, pad: padded(size) - size };
    } else {
      out.push({ kind: "entry_end" });
    }
  }

  #ustarPath(h: Uint8Array): string {
    const name = text(field(h, 0, 100));
    const prefix = text(field(h, 345, 155));
    return prefix ? `${prefix}/${name}` : name;
  }
}
