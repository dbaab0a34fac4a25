/**
 * Visible escaping of names the operator or the model reads as names [OP-1]:
 * workspace paths in file/glob and file/grep results, and titles the server
 * hands out. A name may carry characters that do not show as themselves —
 * terminal controls (ESC), line breaks, bidi overrides that reorder what
 * follows (U+202E turns `exe.txt` into `txt.exe` on screen), zero-width
 * characters — and so spoof the text around it. Each such character is
 * replaced by `\u{HEX}` (upper-case hex, no padding); every other character,
 * the backslash included, stays as it is. Pure, total, no allocation for a
 * clean name.
 *
 * Escaped: C0 controls U+0000–U+001F, DEL U+007F, C1 controls U+0080–U+009F,
 * the bidi formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
 * U+2066–U+2069), the line/paragraph separators U+2028/U+2029, the invisible
 * U+200B, U+2060–U+2064, U+FEFF and U+FFF9–U+FFFB, and lone surrogates.
 * ZWJ/ZWNJ (U+200C/U+200D) stay: scripts and emoji sequences need them.
 */

/** True for a code point that {@link escapeName} replaces. */
export function isHiddenCodePoint(c: number): boolean {
  return c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c === 0x061c || c === 0x200b ||
    c === 0x200e || c === 0x200f || (c >= 0x202a && c <= 0x202e) ||
    c === 0x2028 || c === 0x2029 || (c >= 0x2060 && c <= 0x2064) ||
    (c >= 0x2066 && c <= 0x2069) || c === 0xfeff || (c >= 0xfff9 && c <= 0xfffb) ||
    (c >= 0xd800 && c <= 0xdfff);
}

/**
 * The name with every hidden character made visible as `\u{HEX}`.
 *
 * @example
 * escapeName("a\u001b[31mb") // "a\\u{1B}[31mb"
 * escapeName("invoice\u202Etxt.exe") // "invoice\\u{202E}txt.exe"
 */
export function escapeName(name: string): string {
  let out: string | null = null;
  let from = 0;
  let i = 0;
  // Iterating by code point keeps a surrogate pair whole and sees a lone surrogate alone.
  for (const ch of name) {
    const c = ch.codePointAt(0)!;
    if (isHiddenCodePoint(c)) {
      out = (out ?? "") + name.slice(from, i) + `\\u{${c.toString(16).toUpperCase()}}`;
      from = i + ch.length;
    }
    i += ch.length;
  }
  return out === null ? name : out + name.slice(from);
}
