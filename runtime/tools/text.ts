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

/** Decodes `bytes` as workspace text or returns the fixed refusal code. */
export function decodeText(
  bytes: Uint8Array,
): { ok: true; text: string } | { ok: false; code: ErrorCode } {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) {
      return { ok: false, code: "file_binary" };
    }
    if (b === 0x7f) return { ok: false, code: "file_binary" };
  }
  let text: string;
  try {
    text = strict.decode(bytes);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return { ok: false, code: "file_invalid_utf8" };
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80 && c <= 0x9f) return { ok: false, code: "file_binary" };
  }
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
