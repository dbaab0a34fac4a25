/** The definition decodeText (runtime/tools/text.ts) must agree with, for property tests. */

/** Control bytes first, then strict UTF-8, then C1 controls: `text:<text>` or the refusal code. */
export function referenceDecode(bytes: Uint8Array): string {
  for (const b of bytes) {
    if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) return "file_binary";
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return "file_invalid_utf8";
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80 && c <= 0x9f) return "file_binary";
  }
  return `text:${text}`;
}
