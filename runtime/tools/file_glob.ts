/**
 * `file/glob` executor [TL-5]: lists workspace files whose canonical path
 * matches a glob, through the bounded descriptor walk (runtime/tools/walk.ts).
 *
 * Glob syntax (anything else is pattern_invalid): `/`-separated components;
 * a component `**` matches zero or more directories; inside a component `*`
 * matches any run of characters and `?` one character; everything else is
 * literal. ≤ 256 UTF-8 bytes, ≤ 32 components, no `.`/`..`/empty component,
 * no `[ ] { } \`. Results are sorted by UTF-8 bytes and bounded to 12 KiB;
 * control and bidi characters in a result name are escaped visibly
 * (runtime/display_name.ts).
 */
import type { Fail, WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import {
  GREP_PATTERN_MAX_BYTES,
  PATH_COMPONENTS_MAX,
  SEARCH_ENVELOPE_RESERVE_BYTES,
  SEARCH_RESULT_MAX_BYTES,
  SEARCH_TIMEOUT_MS,
} from "../limits.ts";
import { escapeName } from "../display_name.ts";
import { canonicalDirPath, compareUtf8 } from "./path.ts";
import { walkFiles } from "./walk.ts";
import { utf8Bytes } from "../protocol/digest.ts";

export interface FileGlobArgs {
  pattern: string;
  /** Directory to search below. @default "." (the workspace) */
  path?: string;
}

export type SearchTruncation = "none" | "depth_limit" | "match_limit" | "result_limit";

export type FileGlobResult =
  | { ok: true; files: string[]; truncated: SearchTruncation; refused: number }
  | Fail;

export interface SearchOptions {
  now?: () => number;
}

/** A compiled glob: per component, `null` for `**` or the component's code points. */
export type CompiledGlob = (string[] | null)[];

export function compileGlob(pattern: unknown): CompiledGlob | null {
  if (typeof pattern !== "string" || pattern.length === 0 || !pattern.isWellFormed()) return null;
  if (utf8Bytes(pattern) > GREP_PATTERN_MAX_BYTES) return null;
  for (const ch of pattern) {
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || c === 0x7f || "[]{}\\".includes(ch)) return null;
  }
  const parts = pattern.split("/");
  if (parts.length > PATH_COMPONENTS_MAX) return null;
  const out: CompiledGlob = [];
  for (const p of parts) {
    if (p === "" || p === "." || p === "..") return null;
    if (p === "**") {
      if (out.length > 0 && out[out.length - 1] === null) continue; // `**/**` ≡ `**`
      out.push(null);
    } else if (p.includes("**")) {
      return null;
    } else out.push([...p]);
  }
  return out;
}

/** Wildcard match of one component (`*`, `?`), iterative with one backtrack point. */
function matchSegment(pat: string[], name: string[]): boolean {
  let p = 0, n = 0, star = -1, mark = 0;
  while (n < name.length) {
    if (p < pat.length && (pat[p] === "?" || pat[p] === name[n])) {
      p++;
      n++;
    } else if (p < pat.length && pat[p] === "*") {
      star = p++;
      mark = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else return false;
  }
  while (p < pat.length && pat[p] === "*") p++;
  return p === pat.length;
}

/** Matches a relative path's components against a compiled glob (memoised, ≤ 33×33). */
export function matchGlob(glob: CompiledGlob, components: readonly string[]): boolean {
  const memo = new Map<number, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = i * 64 + j;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let r: boolean;
    if (i === glob.length) r = j === components.length;
    else if (glob[i] === null) r = go(i + 1, j) || (j < components.length && go(i, j + 1));
    else {r = j < components.length && matchSegment(glob[i]!, [...components[j]]) &&
        go(i + 1, j + 1);}
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

export function fileGlob(
  root: WorkspaceRoot,
  args: FileGlobArgs,
  opts: SearchOptions = {},
): FileGlobResult {
  const now = opts.now ?? (() => performance.now());
  const deadline = now() + SEARCH_TIMEOUT_MS;
  const glob = compileGlob(args.pattern);
  if (glob === null) return { ok: false, code: "pattern_invalid" };
  const base = canonicalDirPath(args.path);
  if (!base.ok) return base;
  const found: string[] = [];
  const skip = base.components.length;
  const w = walkFiles(root, base.components, { deadline, now }, (f) => {
    if (matchGlob(glob, f.path.split("/").slice(skip))) found.push(f.path);
    return "continue";
  });
  if (!w.ok) return w;
  found.sort(compareUtf8);
  const files: string[] = [];
  let bytes = SEARCH_ENVELOPE_RESERVE_BYTES;
  let truncated: SearchTruncation = w.depthLimited ? "depth_limit" : "none";
  for (const raw of found) {
    // Names are shown escaped: a control or bidi character must not spoof what is read [OP-1].
    const f = escapeName(raw);
    bytes += utf8Bytes(JSON.stringify(f)) + 1;
    if (bytes > SEARCH_RESULT_MAX_BYTES) {
      truncated = "result_limit";
      break;
    }
    files.push(f);
  }
  return { ok: true, files, truncated, refused: w.refused };
}
