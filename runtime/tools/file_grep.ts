/**
 * `file/grep` executor [TL-5]: bounded, index-free line search over the
 * descriptor walk (runtime/tools/walk.ts) with the stable capture primitive
 * (linuxfs/file_capture.ts) for every file read.
 *
 * Enforces: literal search by default, the regex subset only on request
 * (runtime/tools/regex_subset.ts, linear time); pattern ≤ 256 bytes; ≤ 2 MiB
 * read in total (a file that would cross it fails the search closed); lines
 * > 16 KiB refuse their file; ≤ 128 matches and ≤ 12 KiB of result (then the
 * result is truncated with a fixed reason); the walk's depth/entry/file caps
 * and the 1 s deadline. Binary or non-UTF-8 files are refused one by one.
 * Result paths have control and bidi characters escaped (runtime/display_name.ts).
 */
import { captureFile, checkRegularFile } from "../../linuxfs/file_capture.ts";
import { type Fail, lstatIn, openDirChain, type WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { closeFd, S_IFDIR, S_IFMT } from "../../sandbox/libc.ts";
import {
  GREP_LINE_MAX_BYTES,
  GREP_LINE_SHOWN_MAX_BYTES,
  GREP_MATCHES_MAX,
  GREP_PATTERN_MAX_BYTES,
  GREP_READ_MAX_BYTES,
  READ_FILE_MAX_BYTES,
  SEARCH_ENVELOPE_RESERVE_BYTES,
  SEARCH_RESULT_MAX_BYTES,
  SEARCH_TIMEOUT_MS,
} from "../limits.ts";
import type { SearchOptions, SearchTruncation } from "./file_glob.ts";
import { escapeName } from "../display_name.ts";
import { canonicalDirPath, compareUtf8 } from "./path.ts";
import { compileRegexSubset, regexTest, requiredLiterals } from "./regex_subset.ts";
import { decodeText, floorUtf8Boundary } from "./text.ts";
import { type VisitResult, type WalkFile, walkFiles } from "./walk.ts";
import { utf8Bytes } from "../protocol/digest.ts";

export interface FileGrepArgs {
  pattern: string;
  /** File or directory to search. @default "." */
  path?: string;
  /** Use the regex subset instead of a literal. @default false */
  regex?: boolean;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

export type FileGrepResult =
  | {
    ok: true;
    matches: GrepMatch[];
    files_searched: number;
    truncated: SearchTruncation;
    refused: number;
  }
  | Fail;

/** The reused read buffer of one search; larger files get their own. */
const GREP_READ_BUFFER_BYTES = 64 * 1024;

function shown(line: string): string {
  const b = new TextEncoder().encode(line);
  if (b.length <= GREP_LINE_SHOWN_MAX_BYTES) return line;
  return new TextDecoder().decode(b.subarray(0, floorUtf8Boundary(b, GREP_LINE_SHOWN_MAX_BYTES)));
}

export function fileGrep(
  root: WorkspaceRoot,
  args: FileGrepArgs,
  opts: SearchOptions = {},
): FileGrepResult {
  const now = opts.now ?? (() => performance.now());
  const deadline = now() + SEARCH_TIMEOUT_MS;
  if (typeof args.pattern !== "string" || args.pattern.length === 0) {
    return { ok: false, code: "pattern_invalid" };
  }
  if (!args.pattern.isWellFormed() || utf8Bytes(args.pattern) > GREP_PATTERN_MAX_BYTES) {
    return { ok: false, code: "pattern_invalid" };
  }
  let test: (line: string) => boolean;
  // Substrings every match contains: a text lacking one of them has no
  // matching line (lines are substrings of the text).
  let required: string[];
  if (args.regex === true) {
    const re = compileRegexSubset(args.pattern);
    if (re === null) return { ok: false, code: "pattern_invalid" };
    test = (line) => regexTest(re, line);
    required = requiredLiterals(re);
  } else {
    const lit = args.pattern;
    test = (line) => line.includes(lit);
    required = [lit];
  }
  const base = canonicalDirPath(args.path);
  if (!base.ok) return base;

  const matches: GrepMatch[] = [];
  let readBytes = 0;
  let resultBytes = SEARCH_ENVELOPE_RESERVE_BYTES;
  let searched = 0;
  let refused = 0;
  let truncated: SearchTruncation = "none";
  let lastRefusal: Fail["code"] = "file_changed";

  // One read buffer for the whole search: a file's bytes are decoded (copied
  // into a string) before the next file is read.
  const readBuffer = new Uint8Array(GREP_READ_BUFFER_BYTES);
  const visit = (f: WalkFile): VisitResult => {
    if (readBytes + Number(f.st.size) > GREP_READ_MAX_BYTES) {
      return { ok: false, code: "search_limit" };
    }
    const cap = captureFile(root, f.dirfd, f.name, {
      maxBytes: READ_FILE_MAX_BYTES,
      deadline,
      hooks: { now },
      // The walk (or the single-file branch below) lstat'ed this name in this
      // directory and passed it through checkRegularFile with the same bound.
      checked: f.st,
      buffer: readBuffer,
    });
    if (!cap.ok) {
      if (cap.code === "file_timeout") return cap;
      refused++;
      lastRefusal = cap.code;
      return "continue";
    }
    readBytes += cap.bytes.length;
    searched++;
    const t = decodeText(cap.bytes);
    if (!t.ok) {
      refused++;
      return "continue";
    }
    // No line of a file within the line bound can be over-long, so a required
    // substring the text lacks settles the file without splitting it.
    if (cap.bytes.length <= GREP_LINE_MAX_BYTES && required.some((r) => !t.text.includes(r))) {
      return "continue";
    }
    const lines = t.text.split("\n");
    const found: GrepMatch[] = [];
    // One match beyond what still fits is enough to report match_limit; the
    // rest of the file is only scanned for over-long lines.
    const room = GREP_MATCHES_MAX + 1 - matches.length;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
      if (line.length > GREP_LINE_MAX_BYTES / 3 && utf8Bytes(line) > GREP_LINE_MAX_BYTES) {
        refused++;
        return "continue"; // a file with an over-long line yields nothing
      }
      // Long lines cost the most under the regex subset; check the clock on each.
      if ((line.length > 256 || (i & 63) === 0) && now() > deadline) {
        return { ok: false, code: "file_timeout" };
      }
      if (found.length < room && test(line)) {
        // The path is a name the operator reads: escaped visibly [OP-1].
        found.push({ path: escapeName(f.path), line: i + 1, text: shown(line) });
      }
    }
    for (const m of found) {
      if (matches.length === GREP_MATCHES_MAX) {
        truncated = "match_limit";
        return "stop";
      }
      resultBytes += utf8Bytes(JSON.stringify(m)) + 1;
      if (resultBytes > SEARCH_RESULT_MAX_BYTES) {
        truncated = "result_limit";
        return "stop";
      }
      matches.push(m);
    }
    return "continue";
  };

  // A path naming a regular file searches just that file.
  if (base.components.length > 0) {
    const parent = openDirChain(root, base.components.slice(0, -1));
    if (!parent.ok) return parent;
    try {
      const leaf = base.components[base.components.length - 1];
      const st = lstatIn(parent.fd, leaf);
      if (!st.ok) return { ok: false, code: "path_not_found" };
      if ((st.st.mode & S_IFMT) !== S_IFDIR) {
        const bad = checkRegularFile(root, st.st, READ_FILE_MAX_BYTES);
        if (bad !== null) return { ok: false, code: bad };
        const r = visit({ path: base.path, dirfd: parent.fd, name: leaf, st: st.st });
        if (r !== "continue" && r !== "stop") return r;
        // The one named file could not be captured: say why, with its fixed code.
        if (searched === 0) return { ok: false, code: lastRefusal };
        return { ok: true, matches, files_searched: searched, truncated, refused };
      }
    } finally {
      closeFd(parent.fd);
    }
  }
  const w = walkFiles(root, base.components, { deadline, now }, visit);
  if (!w.ok) return w;
  if (truncated === "none" && w.depthLimited) truncated = "depth_limit";
  matches.sort((a, b) => compareUtf8(a.path, b.path) || a.line - b.line);
  return { ok: true, matches, files_searched: searched, truncated, refused: refused + w.refused };
}
