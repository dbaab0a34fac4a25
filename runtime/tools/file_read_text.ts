/**
 * `file/read_text` executor [TL-4]. Captures the whole file through the
 * descriptor walk (linuxfs/file_capture.ts), validates it as text, and returns
 * one window of ≤ 4096 bytes / ≤ 256 lines that starts and ends on a UTF-8
 * boundary and is small enough that the whole JSON result still fits one
 * 4096-byte projection [TL-3] (so the model sees it, not a receipt),
 * together with the receipt later mutations need: canonical path,
 * file identity, digest of the FULL content, byte range and truncation reason.
 *
 * Enforces: canonical path; the 0.5 s deadline across walk + read; the
 * 1 MiB file cap; text rules (runtime/tools/text.ts); a start offset that
 * lies on a UTF-8 boundary within the file.
 */
import { closeFd } from "../../sandbox/libc.ts";
import {
  type Fail,
  type FileIdentity,
  openDirChain,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { captureFile, type CaptureHooks } from "../../linuxfs/file_capture.ts";
import {
  READ_CHUNK_MAX_BYTES,
  READ_CHUNK_MAX_LINES,
  READ_FILE_MAX_BYTES,
  READ_RESULT_ENVELOPE_RESERVE_BYTES,
  READ_TIMEOUT_MS,
} from "../limits.ts";
import { canonicalPath } from "./path.ts";
import { contentDigest, decodeText, floorUtf8Boundary, isUtf8Boundary } from "./text.ts";
import { utf8Bytes } from "../protocol/digest.ts";

export interface FileReadTextArgs {
  path: string;
  /** Byte offset of the window; must be a UTF-8 boundary. @default 0 */
  offset?: number;
}

export type ReadTruncation = "none" | "byte_limit" | "line_limit";

/** What a read proves about a file; file/edit and file/write require one [TL-6]. */
export interface ReadReceipt {
  kind: "file/read_text";
  path: string;
  identity: FileIdentity;
  content_digest: string;
  range: { start: number; end: number };
  truncated: ReadTruncation;
}

export type FileReadTextResult =
  | { ok: true; path: string; text: string; next_offset: number | null; receipt: ReadReceipt }
  | Fail;

export interface ReadOptions {
  hooks?: CaptureHooks;
}

/** UTF-8 bytes of `s` once JSON-encoded (what the result carries). */
function jsonBytes(s: string): number {
  return utf8Bytes(JSON.stringify(s));
}

/**
 * The JSON-escaped bytes one window of `path` may take so that the whole
 * read result fits one 4096-byte projection. ≥ 1790 for any canonical path.
 */
export function readWindowBudget(path: string): number {
  return READ_CHUNK_MAX_BYTES - READ_RESULT_ENVELOPE_RESERVE_BYTES - jsonBytes(path);
}

/**
 * Cuts `bytes[start..]` on a UTF-8 boundary to ≤ 4096 bytes, ≤ 256 lines and
 * ≤ `budget` bytes once JSON-escaped (`"`, `\`, TAB, LF and CR take two;
 * other control bytes are never workspace text; UTF-8 stays unescaped).
 */
export function windowOf(
  bytes: Uint8Array,
  start: number,
  budget: number = READ_CHUNK_MAX_BYTES,
): { end: number; truncated: ReadTruncation } {
  const limit = Math.min(bytes.length, start + READ_CHUNK_MAX_BYTES);
  let cost = 0;
  let lines = 0;
  let i = start;
  for (; i < limit; i++) {
    const b = bytes[i];
    const c = b === 0x22 || b === 0x5c || b === 0x09 || b === 0x0a || b === 0x0d ? 2 : 1;
    if (cost + c > budget) break;
    cost += c;
    if (b === 0x0a && ++lines === READ_CHUNK_MAX_LINES) {
      i++;
      return { end: i, truncated: i < bytes.length ? "line_limit" : "none" };
    }
  }
  if (i >= bytes.length) return { end: bytes.length, truncated: "none" };
  return { end: floorUtf8Boundary(bytes, i), truncated: "byte_limit" };
}

export function fileReadText(
  root: WorkspaceRoot,
  args: FileReadTextArgs,
  opts: ReadOptions = {},
): FileReadTextResult {
  const now = opts.hooks?.now ?? (() => performance.now());
  const deadline = now() + READ_TIMEOUT_MS;
  const p = canonicalPath(args.path);
  if (!p.ok) return p;
  const offset = args.offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    return { ok: false, code: "tool_invalid_arguments" };
  }
  const parent = openDirChain(root, p.components.slice(0, -1));
  if (!parent.ok) return parent;
  let cap;
  try {
    cap = captureFile(root, parent.fd, p.components[p.components.length - 1], {
      maxBytes: READ_FILE_MAX_BYTES,
      deadline,
      hooks: opts.hooks,
    });
  } finally {
    closeFd(parent.fd);
  }
  if (!cap.ok) return cap;
  const t = decodeText(cap.bytes);
  if (!t.ok) return t;
  if (offset > cap.bytes.length || !isUtf8Boundary(cap.bytes, offset)) {
    return { ok: false, code: "tool_invalid_arguments" };
  }
  const w = windowOf(cap.bytes, offset, readWindowBudget(p.path));
  return {
    ok: true,
    path: p.path,
    text: new TextDecoder().decode(cap.bytes.subarray(offset, w.end)),
    next_offset: w.end < cap.bytes.length ? w.end : null,
    receipt: {
      kind: "file/read_text",
      path: p.path,
      identity: cap.identity,
      content_digest: contentDigest(cap.bytes),
      range: { start: offset, end: w.end },
      truncated: w.truncated,
    },
  };
}
