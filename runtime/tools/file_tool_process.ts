/**
 * A file-tool process [PF-2]: `agent-builder file-tools` (internal), started
 * by the Control Plane's file-tool pool (file_tool_pool.ts) to run the read
 * tools (read_tools.ts) so a long grep or glob never holds the server's event
 * loop. The tools' code is the code the loop would run; only the process
 * differs. It is the server's own trusted code, run with the server's uid: the
 * descriptor-anchored, no-follow opens and identity checks are the boundary,
 * exactly as on the loop.
 *
 * Why a process and not a Web Worker thread: creating a thread blocks the
 * creating event loop while the thread's runtime is built (26–100 ms measured
 * on this 2-core host), and a thread kept alive costs the server ~19 MiB of
 * RSS; a child process is started without blocking the loop (fork/exec only)
 * and its memory is not the server's.
 *
 * Protocol (stdin/stdout, one JSON object per line): on start the process
 * writes `{"ready":true}`; each job `{id, tool, dir, args, output_max}` is
 * answered by exactly one `{id, result}`, in order. A tool that throws (a
 * bug, never a refusal) answers `file_tool_failed` instead of exception text.
 * The process ends when its stdin ends, and with its parent (PR_SET_PDEATHSIG).
 * It runs at nice SANDBOX_NICE_INCREMENT, below the server's loop, like the sandboxes.
 *
 * What this file enforces: a job line over FILE_TOOL_JOB_MAX_BYTES or one that
 * is not a job ends the process (exit 3; the pool fails that job and starts a
 * new process).
 */
import * as z from "zod";
import { type ReadToolResult, runReadTool } from "./read_tools.ts";
import type { ToolArgs } from "./policy.ts";
import { FILE_TOOL_JOB_MAX_BYTES, SANDBOX_NICE_INCREMENT } from "../limits.ts";
import { lowerEveryThreadBelowParent } from "../../sandbox/priority.ts";
import { syscall } from "../../sandbox/libc.ts";

export interface FileToolJob {
  id: number;
  tool: string;
  dir: string;
  args: ToolArgs;
  output_max: number;
}

const Job = z.object({
  id: z.number().int().positive(),
  tool: z.string().min(1),
  dir: z.string().startsWith("/"),
  args: z.record(z.string(), z.unknown()),
  output_max: z.number().int().positive(),
}).strict();

/** Answers one job (also what a test's stand-in process calls). */
export function answerJob(job: FileToolJob): { id: number; result: ReadToolResult } {
  let result: ReadToolResult;
  try {
    result = runReadTool(job.tool, job.dir, job.args, job.output_max);
  } catch {
    result = { ok: false, code: "file_tool_failed" };
  }
  return { id: job.id, result };
}

/**
 * Reads newline-ended lines from `input`, each at most `maxBytes` (without the newline).
 * Yields `null` once for a line over the bound, then stops.
 */
export async function* readLines(
  input: ReadableStream<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<string | null> {
  const dec = new TextDecoder();
  let parts: Uint8Array[] = [];
  let held = 0;
  for await (const chunk of input) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, nl < 0 ? chunk.length : nl);
      if (held + piece.length > maxBytes) {
        yield null;
        return;
      }
      if (nl < 0) {
        if (piece.length > 0) parts.push(piece.slice());
        held += piece.length;
        break;
      }
      let line: Uint8Array;
      if (parts.length === 0) line = piece;
      else {
        line = new Uint8Array(held + piece.length);
        let o = 0;
        for (const p of parts) {
          line.set(p, o);
          o += p.length;
        }
        line.set(piece, o);
      }
      yield dec.decode(line);
      parts = [];
      held = 0;
      start = nl + 1;
    }
  }
}

/** Writes one protocol line to stdout (synchronously: one job at a time). */
function writeLine(value: unknown): void {
  const bytes = new TextEncoder().encode(JSON.stringify(value) + "\n");
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

/** `agent-builder file-tools` (internal). Returns the exit code. */
export async function fileToolsCommand(_argv: string[]): Promise<number> {
  // Ends with the server, even in the middle of a long job.
  syscall("prctl", 1, /* PR_SET_PDEATHSIG */ 9, /* SIGKILL */ 0, 0, 0);
  // Agents' work yields the CPU to the Control Plane's event loop [PF-2].
  lowerEveryThreadBelowParent(SANDBOX_NICE_INCREMENT);
  writeLine({ ready: true });
  for await (const line of readLines(Deno.stdin.readable, FILE_TOOL_JOB_MAX_BYTES)) {
    if (line === null) return 3;
    let job: FileToolJob;
    try {
      const parsed = Job.safeParse(JSON.parse(line));
      if (!parsed.success) return 3;
      job = parsed.data as FileToolJob;
    } catch {
      return 3;
    }
    writeLine(answerJob(job));
  }
  return 0;
}
