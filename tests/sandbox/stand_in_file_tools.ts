/**
 * A stand-in file-tool process for tests/sandbox/file_tool_pool_test.ts: it speaks the real
 * protocol and answers jobs with the real process's `answerJob` (the real tools), with test-only
 * behaviours chosen by the job: `args.gate` (a FIFO's path) blocks this process until the test's
 * event loop opens the FIFO for writing; tool "test/crash" exits at once; tool "test/garbage"
 * answers something that is not the protocol; tool "test/flood" writes an answer line over
 * FILE_TOOL_ANSWER_MAX_BYTES.
 */
import { answerJob, type FileToolJob, readLines } from "../../runtime/tools/file_tool_process.ts";
import { FILE_TOOL_ANSWER_MAX_BYTES } from "../../runtime/limits.ts";

const enc = new TextEncoder();
function write(bytes: Uint8Array) {
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}
const line = (v: unknown) => write(enc.encode(JSON.stringify(v) + "\n"));

line({ ready: true });
for await (const text of readLines(Deno.stdin.readable, 1 << 20)) {
  const job = JSON.parse(text!) as FileToolJob;
  if (job.tool === "test/crash") Deno.exit(70);
  if (job.tool === "test/garbage") {
    line({ id: job.id, result: { ok: "yes", text: 1 } });
    continue;
  }
  if (job.tool === "test/flood") {
    write(new Uint8Array(FILE_TOOL_ANSWER_MAX_BYTES + 1).fill(0x61));
    continue;
  }
  const { gate, ...args } = job.args as Record<string, unknown>;
  if (typeof gate === "string") Deno.openSync(gate, { read: true }).close();
  line(answerJob({ ...job, args: args as FileToolJob["args"] }));
}
