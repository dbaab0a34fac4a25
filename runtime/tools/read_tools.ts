/**
 * The four read tools behind one entry [TL-4, TL-5, PF-2]: what a read call
 * runs, wherever it runs — on the server's event loop (tool_exec.ts's
 * synchronous `executeReadTool`) or in a file-tool process (file_tool_process.ts).
 *
 * What this file enforces: the workspace root is opened descriptor-anchored
 * per call and closed after it; only file/stat, file/read_text, file/glob and
 * file/grep run (anything else is `tool_denied`); a result is one canonical
 * JSON text, capped by the spec's output bound (over ⇒ `search_limit`); every
 * failure is a fixed error code from the executor, never exception text.
 * It imports nothing that needs the event loop's state, so a thread can load it.
 */
import type { ErrorCode } from "../errors.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import type { ToolArgs } from "./policy.ts";
import { fileGlob } from "./file_glob.ts";
import { fileGrep } from "./file_grep.ts";
import { fileReadText, type ReadReceipt } from "./file_read_text.ts";
import { fileStat } from "./file_stat.ts";

export type ReadToolResult =
  | { ok: true; text: string; receipt?: ReadReceipt }
  | { ok: false; code: ErrorCode };

/** The read tools this entry runs. */
export const READ_TOOL_IDS: readonly string[] = Object.freeze([
  "file/stat",
  "file/read_text",
  "file/glob",
  "file/grep",
]);

/**
 * Not a model tool: an ACP runner's `fs/read_text_file` [LC-6] — the whole file through the
 * file/read_text reader (windows of ≤ 4 KiB) as plain text, with the first window's receipt.
 */
export const READ_WHOLE_TEXT = "file/read_text:whole";

/** The whole file `rel` of workspace `dir` through the [TL-4] reader; a file that changed between windows is `receipt_stale`. */
export function readWholeText(
  dir: string,
  rel: string,
): { ok: true; text: string; receipt: ReadReceipt } | { ok: false; code: ErrorCode } {
  const o = openWorkspaceRoot(dir);
  if (!o.ok) return o;
  try {
    let offset = 0;
    let text = "";
    let receipt: ReadReceipt | null = null;
    for (;;) {
      const r = fileReadText(o.root, { path: rel, offset });
      if (!r.ok) return r;
      receipt ??= r.receipt;
      // A file that changed between windows is not one file: refuse.
      if (r.receipt.content_digest !== receipt.content_digest) {
        return { ok: false, code: "receipt_stale" };
      }
      text += r.text;
      if (r.next_offset === null) break;
      offset = r.next_offset;
    }
    return { ok: true, text, receipt: receipt! };
  } finally {
    o.root.close();
  }
}

/** Runs read tool `toolId` with validated `args` in workspace `dir`, its text capped at `outputMax` bytes. */
export function runReadTool(
  toolId: string,
  dir: string,
  args: ToolArgs,
  outputMax: number,
): ReadToolResult {
  const r = toolId === READ_WHOLE_TEXT
    ? readWholeText(dir, args.path as string)
    : run(toolId, dir, args);
  if (r.ok && utf8Bytes(r.text) > outputMax) return { ok: false, code: "search_limit" };
  return r;
}

function run(toolId: string, dir: string, args: ToolArgs): ReadToolResult {
  if (!READ_TOOL_IDS.includes(toolId)) return { ok: false, code: "tool_denied" };
  const o = openWorkspaceRoot(dir);
  if (!o.ok) return o;
  try {
    switch (toolId) {
      case "file/stat": {
        const r = fileStat(o.root, { path: args.path as string });
        if (!r.ok) return r;
        return ok({ path: r.path, kind: r.kind, size: r.size });
      }
      case "file/read_text": {
        const r = fileReadText(o.root, {
          path: args.path as string,
          offset: args.offset as number | undefined,
        });
        if (!r.ok) return r;
        return {
          ...ok({
            path: r.path,
            text: r.text,
            next_offset: r.next_offset,
            truncated: r.receipt.truncated,
            content_digest: r.receipt.content_digest,
            range: r.receipt.range,
          }),
          receipt: r.receipt,
        };
      }
      case "file/glob": {
        const r = fileGlob(o.root, { pattern: args.pattern as string });
        if (!r.ok) return r;
        return ok({ files: r.files, truncated: r.truncated, refused: r.refused });
      }
      case "file/grep": {
        const r = fileGrep(o.root, {
          pattern: args.pattern as string,
          path: args.path as string | undefined,
          regex: args.regex as boolean | undefined,
        });
        if (!r.ok) return r;
        return ok({
          matches: r.matches,
          files_searched: r.files_searched,
          truncated: r.truncated,
          refused: r.refused,
        });
      }
      default:
        return { ok: false, code: "tool_denied" };
    }
  } finally {
    o.root.close();
  }
}

function ok(value: unknown): { ok: true; text: string } {
  return { ok: true, text: canonicalJson(value) };
}
