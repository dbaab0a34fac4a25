/**
 * document/extract_text on the server side [LC-4]: reads the workspace file,
 * hands it to a fresh runner and shapes the window the model sees.
 *
 *   const r = await extractText({ workspaceDir, args: { path, offset, limit }, runKey, signal });
 *   // { ok: true, text: '{"path":…,"text":…}' } | { ok: false, code }
 *
 * What this file enforces:
 *  - the path is canonical and names a supported format by its extension
 *    (`document_unsupported_format` before anything is read);
 *  - the file is read with the [TL-4] descriptor-anchored capture (no
 *    symlinks, owner and mode, one link, no holes, identity stable while
 *    read), ≤ DOCUMENT_MAX_BYTES (`document_too_large`);
 *  - the runner never sees the workspace: the bytes are copied into a private
 *    scratch as the only file there, which the runner mounts and rules
 *    read-only; no network (the runner's Landlock and seccomp), RLIMIT_DATA
 *    lowered to DOCUMENT_RLIMIT_DATA_BYTES before parsing, and a wall of
 *    DOCUMENT_EXTRACT_WALL_MS (`document_timeout`); a runner that dies
 *    without an answer (memory) is `document_resource_limit`;
 *  - an extraction takes a runner slot like a command (≤ 1 per Run, ≤ 2 in
 *    the server, `exec_busy` after the wait); a cancelled Run's extraction
 *    is `run_cancelled` (never started once the signal is aborted; stopped
 *    and its answer discarded when aborted while it ran);
 *  - the result `{path, format, pages, offset, chars, total_chars,
 *    next_offset, text}` fits one projection (TOOL_RESULT_PROJECTION_MAX_BYTES):
 *    when the window's text would not, fewer characters are returned and
 *    `next_offset` says where the next window starts.
 */
import { withPrivateDirs } from "../exec/private_dirs.ts";
import type { ErrorCode } from "../errors.ts";
import { AppError } from "../errors.ts";
import {
  DOCUMENT_EXTRACT_WALL_MS,
  DOCUMENT_MAX_BYTES,
  DOCUMENT_WINDOW_MAX_CHARS,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { canonicalPath } from "../tools/path.ts";
import type { ToolArgs } from "../tools/policy.ts";
import { openDirChain, withWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { captureFile } from "../../linuxfs/file_capture.ts";
import { closeFd } from "../../sandbox/libc.ts";
import { acquireCommandSlot, executeInRunner, handOverToSandbox } from "../exec/runner.ts";
import { type DocumentFormat, formatOfPath } from "./extract_core.ts";

export type ExtractResult = { ok: true; text: string } | { ok: false; code: ErrorCode };

export interface ExtractOptions {
  workspaceDir: string;
  /** Validated against the catalog spec: path, offset?, limit?. */
  args: ToolArgs;
  /** ≤ 1 runner per key (the Run). */
  runKey: string;
  signal?: AbortSignal;
  /** @default DOCUMENT_EXTRACT_WALL_MS */
  wallMs?: number;
}

const INPUT_NAME: Record<DocumentFormat, string> = {
  pdf: "input.pdf",
  docx: "input.docx",
  html: "input.html",
  markdown: "input.md",
  text: "input.txt",
};

function readDocument(workspaceDir: string, components: string[]): Uint8Array | ErrorCode {
  const r = withWorkspaceRoot(workspaceDir, (ws) => {
    const dir = openDirChain(ws, components.slice(0, -1));
    if (!dir.ok) return dir.code;
    try {
      const c = captureFile(ws, dir.fd, components[components.length - 1], {
        maxBytes: DOCUMENT_MAX_BYTES,
        deadline: performance.now() + DOCUMENT_EXTRACT_WALL_MS,
      });
      if (!c.ok) return c.code === "file_too_large" ? "document_too_large" : c.code;
      return c.bytes;
    } finally {
      closeFd(dir.fd);
    }
  });
  return r instanceof Uint8Array || typeof r === "string" ? r : r.code;
}

/** Runs document/extract_text; see the file header. */
export async function extractText(o: ExtractOptions): Promise<ExtractResult> {
  const p = canonicalPath(o.args.path);
  if (!p.ok) return { ok: false, code: p.code };
  const format = formatOfPath(p.path);
  if (format === null) return { ok: false, code: "document_unsupported_format" };
  const offset = typeof o.args.offset === "number" ? o.args.offset : 0;
  const limit = typeof o.args.limit === "number" ? o.args.limit : DOCUMENT_WINDOW_MAX_CHARS;
  const bytes = readDocument(o.workspaceDir, p.components);
  if (typeof bytes === "string") return { ok: false, code: bytes as ErrorCode };
  const wallMs = o.wallMs ?? DOCUMENT_EXTRACT_WALL_MS;
  let release: () => void;
  try {
    release = await acquireCommandSlot(o.runKey, undefined, o.signal);
  } catch (err) {
    if (err instanceof AppError) return { ok: false, code: err.code };
    throw err;
  }
  try {
    if (o.signal?.aborted) return { ok: false, code: "run_cancelled" };
    return await withPrivateDirs("ab-extract-", async (scratch, tmp) => {
      const name = INPUT_NAME[format];
      await Deno.writeFile(`${scratch}/${name}`, bytes, { mode: 0o444, createNew: true });
      handOverToSandbox(scratch);
      handOverToSandbox(tmp);
      const t0 = performance.now();
      const r = await executeInRunner({
        job: { kind: "extract", path: name, format, offset, limit, timeout_ms: wallMs },
        scratchDir: scratch,
        tmpDir: tmp,
        backstopMs: wallMs,
        signal: o.signal,
      });
      const x = r.done?.extract;
      // Cancelled while it ran: the runner was told to stop (and killed past the release
      // budget); a window it still managed to send is not used.
      if (o.signal?.aborted) return { ok: false, code: "run_cancelled" };
      if (x === undefined || !r.released) {
        // No answer: the wall timer (armed once the runner was verified) killed it, or it
        // died before (its memory limit).
        const ran = performance.now() - t0 - r.readyMs;
        return { ok: false, code: ran >= wallMs ? "document_timeout" : "document_resource_limit" };
      }
      if (x.code !== "ok") return { ok: false, code: x.code };
      return {
        ok: true,
        text: fitResult({
          path: p.path,
          format,
          pages: x.pages,
          offset,
          total_chars: x.total_chars,
          next_offset: x.next_offset,
          text: x.text,
        }),
      };
    });
  } catch (err) {
    // Cancelled while the runner was starting: a runner that then could not start or be
    // verified does not change what the caller asked for.
    if (err instanceof AppError) {
      return { ok: false, code: o.signal?.aborted ? "run_cancelled" : err.code };
    }
    throw err;
  } finally {
    release();
  }
}

interface Window {
  path: string;
  format: DocumentFormat;
  pages: number | null;
  offset: number;
  total_chars: number;
  next_offset: number | null;
  text: string;
}

/** The canonical result, its text shortened (by code points) until it fits one projection. */
export function fitResult(w: Window): string {
  const render = (text: string, chars: number, next: number | null) =>
    canonicalJson({ ...w, text, chars, next_offset: next });
  let cps = Array.from(w.text);
  let out = render(w.text, cps.length, w.next_offset);
  if (utf8Bytes(out) <= TOOL_RESULT_PROJECTION_MAX_BYTES) return out;
  // Halve the excess each step: a handful of renders, never one per character.
  let lo = 0;
  let hi = cps.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const t = cps.slice(0, mid).join("");
    if (utf8Bytes(render(t, mid, w.offset + mid)) <= TOOL_RESULT_PROJECTION_MAX_BYTES) lo = mid;
    else hi = mid - 1;
  }
  cps = cps.slice(0, lo);
  out = render(cps.join(""), lo, w.offset + lo);
  return out;
}
