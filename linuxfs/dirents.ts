/**
 * Bounded directory listing through getdents64 on an already-checked
 * directory fd [TL-5]. Enforces the entry budget while reading (the kernel
 * buffer is parsed incrementally and reading stops as soon as the budget is
 * spent), so a directory flood costs at most one buffer beyond the cap.
 *
 * Names that are not valid UTF-8 are reported as `invalid` (never decoded
 * lossily), so callers can refuse them instead of opening a different name.
 */
import { fileGetdents } from "../sandbox/libc.ts";

export const DT_UNKNOWN = 0;
export const DT_DIR = 4;
export const DT_REG = 8;
export const DT_LNK = 10;

export interface Dirent {
  name: string;
  /** d_type as reported by the filesystem; callers still fstat before trusting it. */
  type: number;
}

export type ListResult =
  | { ok: true; entries: Dirent[]; invalid: number; seen: number }
  | { ok: false; reason: "entries" | "io" };

const BUF_BYTES = 32 * 1024;
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Lists `dirfd` (without `.`/`..`). `budget` is the number of entries the
 * caller may still see; exceeding it returns `{ ok: false, reason: "entries" }`.
 */
export function listDir(dirfd: number, budget: number): ListResult {
  const entries: Dirent[] = [];
  let invalid = 0;
  let seen = 0;
  const buf = new Uint8Array(BUF_BYTES);
  const view = new DataView(buf.buffer);
  for (;;) {
    const n = fileGetdents(dirfd, buf);
    if (n < 0) return { ok: false, reason: "io" };
    if (n === 0) break;
    let off = 0;
    while (off < n) {
      const reclen = view.getUint16(off + 16, true);
      const type = buf[off + 18];
      let end = off + 19;
      while (end < off + reclen && buf[end] !== 0) end++;
      const raw = buf.subarray(off + 19, end);
      off += reclen;
      if (raw.length === 1 && raw[0] === 0x2e) continue;
      if (raw.length === 2 && raw[0] === 0x2e && raw[1] === 0x2e) continue;
      seen++;
      if (seen > budget) return { ok: false, reason: "entries" };
      let name: string;
      try {
        name = decoder.decode(raw);
      } catch (err) {
        if (!(err instanceof TypeError)) throw err;
        invalid++;
        continue;
      }
      entries.push({ name, type });
    }
  }
  return { ok: true, entries, invalid, seen };
}
