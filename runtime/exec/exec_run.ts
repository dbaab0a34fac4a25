/**
 * `exec/run` [TL-7, EX-1]: the two profiles, each executed by a fresh runner
 * (runner.ts) with its own private scratch and tmp, created here and removed
 * at every outcome.
 *
 *   await runBoundedBash({ command, runKey, signal })
 *   await runRuntimeCompile({ workspaceDir, path, runKey, signal })
 *
 * What this file enforces:
 *  - bounded-bash: the parser (bounded_bash.ts) decides before anything runs;
 *    the builtin runs as its coreutils program in the runner; wall
 *    RUNNER_WALL_MS; stdout+stderr ≤ RUNNER_OUTPUT_MAX_BYTES (head kept,
 *    cut marked);
 *  - runtime-compile: the workspace is never shown to the runner. The file
 *    and the targets of its relative import specifiers (found by a textual
 *    scan, followed transitively, ≤ COMPILE_FILES_MAX files) are read here
 *    with the [TL-4] descriptor-anchored checks and copied into the private
 *    scratch, which the runner mounts read-only; the bundled TypeScript
 *    compiler checks them there (compile_check.ts). Diagnostics ≤
 *    COMPILE_DIAGNOSTICS_MAX_BYTES.
 */
import { withPrivateDirs } from "./private_dirs.ts";
import { AppError } from "../errors.ts";
import {
  COMPILE_FILE_MAX_BYTES,
  COMPILE_FILES_MAX,
  RUNNER_OUTPUT_MAX_BYTES,
  RUNNER_WALL_MS,
} from "../limits.ts";
import { parseBoundedBash } from "./bounded_bash.ts";
import { acquireCommandSlot, executeInRunner, handOverToSandbox, runCommand } from "./runner.ts";
import { COMPILE_EXTENSIONS, moduleCandidates } from "./compile_check.ts";
import { openDirChain, withWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { captureFile } from "../../linuxfs/file_capture.ts";
import { closeFd } from "../../sandbox/libc.ts";
import type { CommandOutcome } from "./runner_types.ts";

/** Files a runtime-compile reads are at most this large each. */

export interface ExecRunResult {
  profile: "bounded-bash" | "runtime-compile";
  outcome: CommandOutcome;
  exit_code: number | null;
  duration_ms: number;
  /** bounded-bash: stdout then stderr; runtime-compile: the diagnostics. */
  output: string;
  truncated: boolean;
}

function cut(text: string, max: number): { text: string; truncated: boolean } {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return { text, truncated: false };
  const head = new TextDecoder().decode(bytes.subarray(0, max - 64)).replace(/\uFFFD$/, "");
  return { text: `${head}\n[… ${bytes.length - (max - 64)} bytes omitted …]\n`, truncated: true };
}

/** exec/run bounded-bash. */
export async function runBoundedBash(
  o: { command: string; runKey: string; signal?: AbortSignal },
): Promise<ExecRunResult> {
  const { argv } = parseBoundedBash(o.command);
  return await withPrivateDirs("ab-exec-run-", async (scratch, tmp) => {
    const r = await runCommand({
      argv,
      cwd: "",
      scratchDir: scratch,
      tmpDir: tmp,
      timeoutS: RUNNER_WALL_MS / 1000,
      runKey: o.runKey,
      signal: o.signal,
    });
    const out = cut(r.stdout.text + r.stderr.text, RUNNER_OUTPUT_MAX_BYTES);
    return {
      profile: "bounded-bash",
      outcome: r.outcome,
      exit_code: r.exit_code,
      duration_ms: r.duration_ms,
      output: out.text,
      truncated: out.truncated || r.stdout.truncated || r.stderr.truncated,
    };
  });
}

const IMPORT_RE =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\bexport\s*\*\s*from\s*|\brequire\s*\(\s*)["']([^"'\n]{1,1024})["']/g;

/** Relative specifiers in `text` (a textual scan: extra hits only cost a read). */
export function relativeSpecifiers(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(IMPORT_RE)) {
    if (m[1].startsWith("./") || m[1].startsWith("../")) out.add(m[1]);
  }
  return [...out];
}

/** Normalises `rel` (workspace-relative); null when it leaves the workspace. */
function normalise(rel: string): string | null {
  const parts: string[] = [];
  for (const p of rel.split("/")) {
    if (p === "" || p === ".") continue;
    if (p === "..") {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(p);
  }
  return parts.length === 0 || parts.length > 32 ? null : parts.join("/");
}

/** exec/run runtime-compile. */
export async function runRuntimeCompile(
  o: { workspaceDir: string; path: string; runKey: string; signal?: AbortSignal },
): Promise<ExecRunResult> {
  const root = normalise(o.path);
  if (root === null || o.path.startsWith("/") || o.path.includes("\0")) {
    throw new AppError("path_invalid");
  }
  if (!COMPILE_EXTENSIONS.some((e) => root.endsWith(e))) {
    throw new AppError("compile_unsupported_file");
  }
  // Read the file and its relative imports through the workspace's fd anchor.
  const files = new Map<string, Uint8Array>();
  const deadline = performance.now() + RUNNER_WALL_MS;
  const read = (rel: string): Uint8Array | null => {
    const parts = rel.split("/");
    const r = withWorkspaceRoot(o.workspaceDir, (ws) => {
      const dir = openDirChain(ws, parts.slice(0, -1));
      if (!dir.ok) return null;
      try {
        const c = captureFile(ws, dir.fd, parts[parts.length - 1], {
          maxBytes: COMPILE_FILE_MAX_BYTES,
          deadline,
        });
        return c.ok ? c.bytes : null;
      } finally {
        closeFd(dir.fd);
      }
    });
    return r instanceof Uint8Array ? r : null;
  };
  const first = read(root);
  if (first === null) throw new AppError("path_not_found");
  files.set(root, first);
  const queue = [root];
  while (queue.length > 0) {
    const rel = queue.shift()!;
    const dir = rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "";
    const text = new TextDecoder().decode(files.get(rel)!);
    for (const spec of relativeSpecifiers(text)) {
      const target = normalise(`${dir}/${spec}`);
      if (target === null) continue; // outside the workspace: never followed
      for (const c of moduleCandidates(target)) {
        if (files.has(c)) break;
        const bytes = read(c);
        if (bytes === null) continue;
        if (files.size >= COMPILE_FILES_MAX) throw new AppError("compile_too_many_files");
        files.set(c, bytes);
        queue.push(c);
        break;
      }
    }
  }
  const release = await acquireCommandSlot(o.runKey, undefined, o.signal);
  try {
    return await withPrivateDirs("ab-exec-run-", async (scratch, tmp) => {
      for (const [rel, bytes] of files) {
        const full = `${scratch}/${rel}`;
        await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
        await Deno.writeFile(full, bytes, { mode: 0o644, createNew: true });
      }
      handOverToSandbox(scratch);
      handOverToSandbox(tmp);
      const r = await executeInRunner({
        job: { kind: "compile", path: root, timeout_ms: RUNNER_WALL_MS },
        scratchDir: scratch,
        tmpDir: tmp,
        backstopMs: RUNNER_WALL_MS,
        signal: o.signal,
      });
      const c = r.done?.compile;
      if (c !== undefined && c.code !== "ok") throw new AppError(c.code);
      const outcome: CommandOutcome = !r.released || r.done === null || c === undefined
        ? (o.signal?.aborted ? "cancelled" : r.done === null ? "timeout" : "outcome_unknown")
        : "exited";
      return {
        profile: "runtime-compile",
        outcome,
        exit_code: r.done?.exit_code ?? null,
        duration_ms: r.done?.duration_ms ?? 0,
        output: c?.diagnostics ?? "",
        truncated: (c?.diagnostics ?? "").includes(" more diagnostics\n"),
      };
    });
  } finally {
    release();
  }
}
