/**
 * Canonical workspace-relative paths [TL-4]. A model-chosen path is accepted
 * only if it already IS canonical: `/`-separated components, no empty, `.` or
 * `..` component, no leading or trailing slash, no backslash, NUL or control
 * character, no invisible format character (bidi overrides, zero-width) or
 * line/paragraph separator — those would make the path an operator approves
 * read differently from the one written — ≤ 32 components and ≤ 1024 UTF-8
 * bytes, valid Unicode. Nothing is
 * normalised on the model's behalf (a path that would need normalising is
 * refused), so the string the operator approves is the string that is opened.
 *
 * This module is pure; the descriptor walk that gives the components meaning
 * lives in linuxfs/fs_anchor.ts.
 */
import { PATH_BYTES_MAX, PATH_COMPONENTS_MAX } from "../limits.ts";
import { utf8Bytes } from "../protocol/digest.ts";

/** The reserved temp namespace of file/write [TL-6]; never a model target. */
export const WRITE_TEMP_PREFIX = ".agent-builder-write-";

export type PathCheck =
  | { ok: true; path: string; components: string[] }
  | { ok: false; code: "path_invalid" | "path_too_long" };

/** Max bytes of a single component (Linux NAME_MAX). */
const NAME_MAX = 255;

/** True for C0 controls, DEL and C1 controls. */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || (c >= 0x80 && c <= 0x9f)) return true;
  }
  return false;
}

/** Format characters (Cf: bidi controls, zero-width) and line/paragraph separators. */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}]/u;

/** True when `s` contains a lone surrogate (not encodable as UTF-8). */
function hasLoneSurrogate(s: string): boolean {
  return !s.isWellFormed();
}

/**
 * Checks a workspace-relative path. `""` and `"."` are NOT accepted here; use
 * {@link canonicalDirPath} where the workspace root itself is meaningful.
 *
 * @example
 * canonicalPath("src/main.ts") // { ok: true, path: "src/main.ts", components: ["src", "main.ts"] }
 * canonicalPath("../etc/passwd") // { ok: false, code: "path_invalid" }
 */
export function canonicalPath(input: unknown): PathCheck {
  if (typeof input !== "string" || input.length === 0) return { ok: false, code: "path_invalid" };
  // Length is checked before anything that scales with the input.
  if (input.length > PATH_BYTES_MAX) return { ok: false, code: "path_too_long" };
  if (hasLoneSurrogate(input)) return { ok: false, code: "path_invalid" };
  const bytes = utf8Bytes(input);
  if (bytes > PATH_BYTES_MAX) return { ok: false, code: "path_too_long" };
  if (hasControl(input) || input.includes("\\") || INVISIBLE.test(input)) {
    return { ok: false, code: "path_invalid" };
  }
  if (input.startsWith("/") || input.endsWith("/")) return { ok: false, code: "path_invalid" };
  const components = input.split("/");
  if (components.length > PATH_COMPONENTS_MAX) return { ok: false, code: "path_too_long" };
  for (const c of components) {
    if (c === "" || c === "." || c === "..") return { ok: false, code: "path_invalid" };
    if (utf8Bytes(c) > NAME_MAX) return { ok: false, code: "path_too_long" };
  }
  return { ok: true, path: input, components };
}

/** Like {@link canonicalPath} but `"."` (or an empty/absent value) names the workspace root. */
export function canonicalDirPath(input: unknown): PathCheck {
  if (input === undefined || input === "" || input === ".") {
    return { ok: true, path: ".", components: [] };
  }
  return canonicalPath(input);
}

/** True when the leaf name lies in the reserved write-temp namespace. */
export function isReservedName(name: string): boolean {
  return name.startsWith(WRITE_TEMP_PREFIX);
}

/** Joins canonical components back into the canonical path ("." for the root). */
export function joinComponents(components: readonly string[]): string {
  return components.length === 0 ? "." : components.join("/");
}

/**
 * Byte-wise UTF-8 comparison (the stable sort order of [TL-5]). UTF-8 byte
 * order is code point order, so well-formed strings are compared by code
 * point without encoding them; a lone surrogate (which the encoder turns into
 * U+FFFD) takes the encoding path so the order stays exactly the byte order.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  if (!a.isWellFormed() || !b.isWellFormed()) return compareEncoded(a, b);
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) {
      // Equal prefixes: either both units start a code point here, or both
      // are the low halves of pairs with the same high half.
      return a.codePointAt(i)! < b.codePointAt(i)! ? -1 : 1;
    }
  }
  return a.length - b.length;
}

function compareEncoded(a: string, b: string): number {
  const ea = utf8Encoder.encode(a);
  const eb = utf8Encoder.encode(b);
  const n = Math.min(ea.length, eb.length);
  for (let i = 0; i < n; i++) if (ea[i] !== eb[i]) return ea[i] - eb[i];
  return ea.length - eb.length;
}
const utf8Encoder = new TextEncoder();
