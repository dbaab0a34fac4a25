/**
 * Text rules shared by the file tools [TL-4] [CX-2]: what counts as text, and
 * the domain-separated content digests that receipts carry.
 *
 * Enforces: no NUL, no C0 control other than TAB/LF/CR, no DEL, no C1 control,
 * strict UTF-8 (no lossy decoding, no lone surrogates). Pure module.
 */
import { createHash } from "node:crypto";
import type { ErrorCode } from "../errors.ts";

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** Only ever given pure ASCII, where it and `strict` agree byte for byte. */
const ascii = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * C0 controls other than TAB/LF/CR, DEL, and the C1 controls. In a string
 * decoded from valid UTF-8, a code point below U+0080 is exactly one ASCII
 * byte, so this one scan finds what a byte-by-byte loop would.
 */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const NOT_TEXT = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]/;

/** Per byte: 1 = a control that is not text, 2 = not ASCII, 0 = ASCII text. */
const BYTE_CLASS = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) if (b !== 0x09 && b !== 0x0a && b !== 0x0d) BYTE_CLASS[b] = 1;
BYTE_CLASS[0x7f] = 1;
for (let b = 0x80; b < 0x100; b++) BYTE_CLASS[b] = 2;

/** Decodes `bytes` as workspace text or returns the fixed refusal code. */
export function decodeText(
  bytes: Uint8Array,
): { ok: true; text: string } | { ok: false; code: ErrorCode } {
  // One pass over the bytes: a control byte refuses the file (before any
  // UTF-8 question, as always); pure ASCII is valid UTF-8 with no C1.
  let seen = 0;
  let i = 0;
  if ((bytes.byteOffset & 3) === 0 && bytes.length >= 64) {
    // Four bytes at a time: a word of printable ASCII (0x20..0x7E) is class 0
    // throughout; any other word (a byte ≥ 0x80, < 0x20 — TAB/LF/CR too — or
    // 0x7F; the bit tests have no false negatives) goes through the table.
    const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length >>> 2);
    for (let k = 0; k < words.length; k++) {
      const w = words[k];
      const d = w ^ 0x7f7f7f7f;
      if (
        ((w | ((w - 0x20202020) & ~w) | ((d - 0x01010101) & ~d)) & 0x80808080) === 0
      ) continue;
      for (let j = k << 2, e = j + 4; j < e; j++) {
        const c = BYTE_CLASS[bytes[j]];
        if (c === 1) return { ok: false, code: "file_binary" };
        seen |= c;
      }
    }
    i = words.length << 2;
  }
  for (; i < bytes.length; i++) {
    const c = BYTE_CLASS[bytes[i]];
    if (c === 1) return { ok: false, code: "file_binary" };
    seen |= c;
  }
  if (seen === 0) return { ok: true, text: ascii.decode(bytes) };
  let text: string;
  try {
    text = strict.decode(bytes);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return { ok: false, code: "file_invalid_utf8" };
  }
  if (NOT_TEXT.test(text)) return { ok: false, code: "file_binary" };
  return { ok: true, text };
}

/** True when `offset` does not split a UTF-8 sequence of `bytes`. */
export function isUtf8Boundary(bytes: Uint8Array, offset: number): boolean {
  if (offset <= 0 || offset >= bytes.length) return offset === 0 || offset === bytes.length;
  return (bytes[offset] & 0xc0) !== 0x80;
}

/** Largest boundary ≤ `offset`. */
export function floorUtf8Boundary(bytes: Uint8Array, offset: number): number {
  let o = Math.min(offset, bytes.length);
  while (o > 0 && o < bytes.length && (bytes[o] & 0xc0) === 0x80) o--;
  return o;
}

/** Domain-separated SHA-256, hex: sha256(domain || 0x00 || data). */
export function domainDigest(domain: string, data: Uint8Array | string): string {
  const h = createHash("sha256");
  h.update(new TextEncoder().encode(domain));
  h.update(new Uint8Array([0]));
  h.update(typeof data === "string" ? new TextEncoder().encode(data) : data);
  return h.digest("hex");
}

/** Digest of a whole file's content as read receipts carry it. */
export function contentDigest(bytes: Uint8Array): string {
  return domainDigest("agent-builder/file-content/v1", bytes);
}
