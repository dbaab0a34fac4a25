/**
 * DOCX (zip) bounds [LC-4], checked BEFORE any library inflates the archive.
 *
 *   const r = checkZipLimits(bytes);   // { ok: true, entries, expanded } | { ok: false, code }
 *
 * What this file enforces, in this order:
 *  1. the central directory is found and walked by hand (EOCD within the last
 *     64 KiB + 22 bytes, every record's signature and bounds checked; ZIP64
 *     markers are not followed — a 0xFFFF count or a 0xFFFFFFFF size is
 *     already past the bounds below);
 *  2. ≤ DOCX_ENTRIES_MAX entries (`document_zip_too_many_entries`);
 *  3. the declared expanded total ≤ DOCX_EXPANDED_MAX_BYTES
 *     (`document_zip_too_large`);
 *  4. the declared ratio expanded / compressed over the whole archive ≤
 *     DOCX_RATIO_MAX (`document_zip_ratio`);
 *  5. the declarations are then PROVEN: every entry's data is inflated here
 *     (fflate, streaming, 16 KiB input steps, so one step yields ≤ ~16 MiB)
 *     and counted; an entry that inflates past its declared size is stopped
 *     at that point and refused `document_malformed`, as is one that ends
 *     short, an unknown method or an encrypted entry. So the library that reads the archive afterwards
 *     (mammoth, through JSZip) inflates at most what was counted here.
 *
 * Pure (no I/O); runs inside the runner next to the extractor.
 */
import { Inflate } from "fflate";
import { DOCX_ENTRIES_MAX, DOCX_EXPANDED_MAX_BYTES, DOCX_RATIO_MAX } from "../limits.ts";

export type ZipLimitCode =
  | "document_zip_too_many_entries"
  | "document_zip_too_large"
  | "document_zip_ratio"
  | "document_malformed";

export type ZipCheck =
  | { ok: true; entries: number; expanded: number; compressed: number }
  | { ok: false; code: ZipLimitCode };

export interface ZipLimits {
  /** @default DOCX_ENTRIES_MAX */
  entries: number;
  /** @default DOCX_EXPANDED_MAX_BYTES */
  expandedBytes: number;
  /** @default DOCX_RATIO_MAX */
  ratio: number;
}

const DEFAULTS: ZipLimits = {
  entries: DOCX_ENTRIES_MAX,
  expandedBytes: DOCX_EXPANDED_MAX_BYTES,
  ratio: DOCX_RATIO_MAX,
};

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const INFLATE_STEP = 16 * 1024;

interface Entry {
  method: number;
  flags: number;
  compressed: number;
  expanded: number;
  localOffset: number;
}

const bad = (code: ZipLimitCode): ZipCheck => ({ ok: false, code });

/** Checks `bytes` (a whole zip archive) against the DOCX bounds; see the file header. */
export function checkZipLimits(bytes: Uint8Array, limits: Partial<ZipLimits> = {}): ZipCheck {
  const lim = { ...DEFAULTS, ...limits };
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // 1. End of central directory: the last signature within the comment window.
  let eocd = -1;
  for (let i = bytes.length - 22; i >= 0 && i >= bytes.length - 22 - 0xffff; i--) {
    if (v.getUint32(i, true) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return bad("document_malformed");
  const total = v.getUint16(eocd + 10, true);
  const cdSize = v.getUint32(eocd + 12, true);
  const cdOffset = v.getUint32(eocd + 16, true);
  // 2. The count first: nothing is walked past the bound.
  if (total > lim.entries) return bad("document_zip_too_many_entries");
  if (cdOffset + cdSize > eocd) return bad("document_malformed");
  const entries: Entry[] = [];
  let p = cdOffset;
  let expanded = 0;
  let compressed = 0;
  while (p < cdOffset + cdSize) {
    if (entries.length >= lim.entries) return bad("document_zip_too_many_entries");
    if (p + 46 > eocd || v.getUint32(p, true) !== CEN_SIG) return bad("document_malformed");
    const e: Entry = {
      flags: v.getUint16(p + 8, true),
      method: v.getUint16(p + 10, true),
      compressed: v.getUint32(p + 20, true),
      expanded: v.getUint32(p + 24, true),
      localOffset: v.getUint32(p + 42, true),
    };
    const next = p + 46 + v.getUint16(p + 28, true) + v.getUint16(p + 30, true) +
      v.getUint16(p + 32, true);
    if (next > cdOffset + cdSize) return bad("document_malformed");
    entries.push(e);
    expanded += e.expanded;
    compressed += e.compressed;
    p = next;
  }
  if (entries.length !== total) return bad("document_malformed");
  // 3. and 4. on the declared sizes.
  if (expanded > lim.expandedBytes) return bad("document_zip_too_large");
  if (expanded > lim.ratio * Math.max(1, compressed)) return bad("document_zip_ratio");
  // 5. Prove the declarations by inflating and counting.
  let counted = 0;
  for (const e of entries) {
    if ((e.flags & 1) !== 0) return bad("document_malformed"); // encrypted entry
    const lo = e.localOffset;
    if (lo + 30 > cdOffset || v.getUint32(lo, true) !== LOC_SIG) return bad("document_malformed");
    const start = lo + 30 + v.getUint16(lo + 26, true) + v.getUint16(lo + 28, true);
    if (start + e.compressed > cdOffset) return bad("document_malformed");
    const data = bytes.subarray(start, start + e.compressed);
    let produced: number;
    if (e.method === 0) {
      produced = data.length;
      if (produced !== e.expanded) return bad("document_malformed");
    } else if (e.method === 8) {
      const r = inflateCounted(data, e.expanded);
      // An entry that lies about its size (more, or less) is refused outright.
      if (r === "overflow" || r === "error" || r !== e.expanded) return bad("document_malformed");
      produced = r;
    } else {
      return bad("document_malformed");
    }
    counted += produced;
  }
  return { ok: true, entries: entries.length, expanded: counted, compressed };
}

class Overflow extends Error {}

/** Inflates `data`, counting output; stops as soon as it passes `declared`. */
function inflateCounted(data: Uint8Array, declared: number): number | "overflow" | "error" {
  let out = 0;
  const inf = new Inflate((chunk) => {
    out += chunk.length;
    if (out > declared) throw new Overflow();
  });
  try {
    for (let i = 0; i < data.length; i += INFLATE_STEP) {
      const end = Math.min(data.length, i + INFLATE_STEP);
      inf.push(data.subarray(i, end), end === data.length);
    }
    if (data.length === 0) inf.push(new Uint8Array(0), true);
  } catch (err) {
    if (err instanceof Overflow) return "overflow";
    return "error";
  }
  return out;
}
