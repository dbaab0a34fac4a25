/**
 * A file-tool thread [PF-2]: a Web Worker of the Control Plane that runs the
 * read tools (read_tools.ts) so a long grep or glob never holds the server's
 * event loop. The tools' code is the same code the loop would run; only the
 * thread differs. Descriptors are process-wide and Workers inherit the
 * process's permissions (--allow-ffi included), so the anchored, no-follow
 * opens and identity checks run unchanged; libc.ts's errno cell is per module
 * instance, i.e. per thread.
 *
 * Protocol: on load the thread posts `{ ready: true }`; each job
 * `{ id, tool, dir, args, output_max }` is answered by exactly one
 * `{ id, result }`. A tool that throws (a bug, never a refusal) answers
 * `tool_thread_failed` instead of exception text.
 */
import { type ReadToolResult, runReadTool } from "./read_tools.ts";
import type { ToolArgs } from "./policy.ts";

export interface FileThreadJob {
  id: number;
  tool: string;
  dir: string;
  args: ToolArgs;
  output_max: number;
}

/** Answers one job (also what a test's wrapper thread calls). */
export function answerJob(job: FileThreadJob): { id: number; result: ReadToolResult } {
  let result: ReadToolResult;
  try {
    result = runReadTool(job.tool, job.dir, job.args, job.output_max);
  } catch {
    result = { ok: false, code: "tool_thread_failed" };
  }
  return { id: job.id, result };
}

// Only as a thread's main module: imported by a wrapper, the wrapper owns the messages.
if (import.meta.main) {
  self.onmessage = (e: MessageEvent<FileThreadJob>) => {
    self.postMessage(answerJob(e.data));
  };
  self.postMessage({ ready: true });
}
