/**
 * The restricted grep regex subset [TL-5] and its linear-time matcher.
 *
 * Accepted: literals, `.`, classes `[...]`/`[^...]` with ranges, the escapes
 * `\d \D \w \W \s \S \t` and escaped metacharacters, `^` only first, `$`
 * only last, and `?` after an atom at most 8 times; ≤ 256 UTF-8 bytes.
 * Refused (pattern_invalid): groups, alternation, backreferences, braces,
 * `*`, `+`, lazy/possessive forms, any other escape, empty classes.
 *
 * Matching never backtracks: the pattern is a chain of atoms, each possibly
 * optional, simulated as a state set (Thompson NFA), so a line costs
 * O(line × atoms) whatever the input — no catastrophic backtracking exists.
 */
import { GREP_PATTERN_MAX_BYTES, GREP_PATTERN_QUESTION_MAX } from "../limits.ts";
import { utf8Bytes } from "../protocol/digest.ts";

type Range = readonly [number, number];
interface Atom {
  /** Code point ranges; `negate` inverts. `.` is an empty negated set. */
  ranges: Range[];
  negate: boolean;
  optional: boolean;
}

export interface CompiledRegex {
  atoms: Atom[];
  anchorStart: boolean;
  anchorEnd: boolean;
}

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [[0x30, 0x39], [0x41, 0x5a], [0x5f, 0x5f], [0x61, 0x7a]];
const SPACE: Range[] = [[0x09, 0x0d], [0x20, 0x20]];
const META = new Set([..."\\.[]()?*+{}|^$-/"]);

function complement(r: Range[]): Range[] {
  const out: Range[] = [];
  let lo = 0;
  for (const [a, b] of [...r].sort((x, y) => x[0] - y[0])) {
    if (a > lo) out.push([lo, a - 1]);
    lo = Math.max(lo, b + 1);
  }
  if (lo <= 0x10ffff) out.push([lo, 0x10ffff]);
  return out;
}

/** Parses `\x` at cps[i] (cps[i] === "\\"); returns ranges and the next index. */
function parseEscape(cps: string[], i: number): { ranges: Range[]; next: number } | null {
  const c = cps[i + 1];
  if (c === undefined) return null;
  const next = i + 2;
  switch (c) {
    case "d":
      return { ranges: DIGIT, next };
    case "D":
      return { ranges: complement(DIGIT), next };
    case "w":
      return { ranges: WORD, next };
    case "W":
      return { ranges: complement(WORD), next };
    case "s":
      return { ranges: SPACE, next };
    case "S":
      return { ranges: complement(SPACE), next };
    case "t":
      return { ranges: [[9, 9]], next };
  }
  if (META.has(c)) {
    const cp = c.codePointAt(0)!;
    return { ranges: [[cp, cp]], next };
  }
  return null; // backreferences, \b, \p{..}, \u.. and the rest are outside the subset
}

function parseClass(cps: string[], i: number): { atom: Atom; next: number } | null {
  let j = i + 1;
  let negate = false;
  if (cps[j] === "^") {
    negate = true;
    j++;
  }
  const ranges: Range[] = [];
  while (j < cps.length && cps[j] !== "]") {
    let lo: Range[];
    if (cps[j] === "\\") {
      const e = parseEscape(cps, j);
      if (e === null) return null;
      lo = e.ranges;
      j = e.next;
    } else {
      if (cps[j] === "[") return null;
      const cp = cps[j].codePointAt(0)!;
      lo = [[cp, cp]];
      j++;
    }
    if (cps[j] === "-" && cps[j + 1] !== undefined && cps[j + 1] !== "]") {
      if (lo.length !== 1 || lo[0][0] !== lo[0][1]) return null;
      let hi: number;
      if (cps[j + 1] === "\\") {
        const e = parseEscape(cps, j + 1);
        if (e === null || e.ranges.length !== 1 || e.ranges[0][0] !== e.ranges[0][1]) return null;
        hi = e.ranges[0][0];
        j = e.next;
      } else {
        hi = cps[j + 1].codePointAt(0)!;
        j += 2;
      }
      if (hi < lo[0][0]) return null;
      ranges.push([lo[0][0], hi]);
    } else {
      ranges.push(...lo);
    }
  }
  if (cps[j] !== "]" || ranges.length === 0) return null;
  return { atom: { ranges, negate, optional: false }, next: j + 1 };
}

/** Compiles a pattern of the subset, or null when it is outside it. */
export function compileRegexSubset(pattern: string): CompiledRegex | null {
  if (typeof pattern !== "string" || pattern.length === 0) return null;
  if (!pattern.isWellFormed() || utf8Bytes(pattern) > GREP_PATTERN_MAX_BYTES) return null;
  const cps = [...pattern];
  const atoms: Atom[] = [];
  let anchorStart = false;
  let anchorEnd = false;
  let questions = 0;
  let i = 0;
  if (cps[0] === "^") {
    anchorStart = true;
    i = 1;
  }
  while (i < cps.length) {
    const c = cps[i];
    if (c === "$" && i === cps.length - 1) {
      anchorEnd = true;
      i++;
      continue;
    }
    if (c === "?") {
      const prev = atoms[atoms.length - 1];
      // `?` needs an atom right before it, and never stacks (`??` is lazy).
      if (prev === undefined || prev.optional || cps[i - 1] === "^") return null;
      if (++questions > GREP_PATTERN_QUESTION_MAX) return null;
      prev.optional = true;
      i++;
      continue;
    }
    if ("()|{}*+^$]".includes(c)) return null;
    if (c === ".") {
      atoms.push({ ranges: [[0x0a, 0x0a]], negate: true, optional: false });
      i++;
    } else if (c === "[") {
      const cl = parseClass(cps, i);
      if (cl === null) return null;
      atoms.push(cl.atom);
      i = cl.next;
    } else if (c === "\\") {
      const e = parseEscape(cps, i);
      if (e === null) return null;
      atoms.push({ ranges: e.ranges, negate: false, optional: false });
      i = e.next;
    } else {
      const cp = c.codePointAt(0)!;
      atoms.push({ ranges: [[cp, cp]], negate: false, optional: false });
      i++;
    }
  }
  if (atoms.length === 0) return null;
  return { atoms, anchorStart, anchorEnd };
}

function atomMatches(a: Atom, cp: number): boolean {
  const r = a.ranges;
  for (let i = 0; i < r.length; i++) {
    if (cp >= r[i][0] && cp <= r[i][1]) return !a.negate;
  }
  return a.negate;
}

/**
 * Adds state `s` and everything reachable from it through optional atoms to
 * `list` (states already stamped with `gen` are skipped; their closure is in).
 */
function addState(
  re: CompiledRegex,
  list: Int32Array,
  n: number,
  stamp: Uint32Array,
  gen: number,
  s: number,
): number {
  const m = re.atoms.length;
  for (;;) {
    if (stamp[s] === gen) return n;
    stamp[s] = gen;
    list[n++] = s;
    if (s === m || !re.atoms[s].optional) return n;
    s++;
  }
}

/**
 * Linear-time search: does `line` contain a match? Only the live states are
 * visited per character (a sparse set), so a line costs O(line × live
 * states) ≤ O(line × atoms), usually about O(line).
 */
export function regexTest(re: CompiledRegex, line: string): boolean {
  const m = re.atoms.length;
  let cur = new Int32Array(m + 1);
  let nxt = new Int32Array(m + 1);
  const stamp = new Uint32Array(m + 1);
  let gen = 1;
  let nCur = addState(re, cur, 0, stamp, gen, 0);
  if (stamp[m] === gen && !re.anchorEnd) return true;
  for (let i = 0; i < line.length; i++) {
    let cp = line.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < line.length) {
      const lo = line.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        i++;
      }
    }
    gen++;
    let nNxt = 0;
    for (let k = 0; k < nCur; k++) {
      const s = cur[k];
      if (s < m && atomMatches(re.atoms[s], cp)) nNxt = addState(re, nxt, nNxt, stamp, gen, s + 1);
    }
    if (!re.anchorStart) nNxt = addState(re, nxt, nNxt, stamp, gen, 0);
    if (stamp[m] === gen && !re.anchorEnd) return true;
    [cur, nxt] = [nxt, cur];
    nCur = nNxt;
  }
  return stamp[m] === gen;
}

/**
 * The literals every match contains: each maximal run of consecutive
 * mandatory atoms that match exactly one code point. The atoms form a chain,
 * so a match spells each run contiguously; a text containing none of some run
 * has no match in any of its lines (a cheap per-file prefilter).
 */
export function requiredLiterals(re: CompiledRegex): string[] {
  const out: string[] = [];
  let run = "";
  for (const a of re.atoms) {
    const r = a.ranges;
    if (!a.optional && !a.negate && r.length === 1 && r[0][0] === r[0][1]) {
      run += String.fromCodePoint(r[0][0]);
      continue;
    }
    if (run !== "") out.push(run);
    run = "";
  }
  if (run !== "") out.push(run);
  return out;
}
