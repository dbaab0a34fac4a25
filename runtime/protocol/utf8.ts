/**
 * UTF-8 byte counting, the one owner of it. Pure and free of Node built-ins,
 * so the UI bundle may import it (digest.ts, which hashes with node:crypto,
 * re-exports it for the server's modules).
 */
const enc = new TextEncoder();

/** UTF-8 byte length of a string. */
export function utf8Bytes(s: string): number {
  return enc.encode(s).byteLength;
}
