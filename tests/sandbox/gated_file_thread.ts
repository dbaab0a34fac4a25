/**
 * A stand-in file-tool thread for tests/sandbox/file_threads_test.ts: it answers jobs with the
 * real thread's `answerJob` (the real tools on this thread), with three test-only behaviours
 * chosen by the job: `args.gate` (a SharedArrayBuffer) blocks this thread until the test's event
 * loop stores 1 in it; tool "test/crash" throws uncaught on this thread; tool "test/garbage"
 * answers something that is not the protocol.
 */
import { answerJob, type FileThreadJob } from "../../runtime/tools/file_thread.ts";

self.onmessage = (e: MessageEvent<FileThreadJob>) => {
  const job = e.data;
  if (job.tool === "test/crash") {
    setTimeout(() => {
      throw new Error("file thread crashed");
    }, 0);
    return;
  }
  if (job.tool === "test/garbage") {
    self.postMessage({ id: job.id, result: { ok: "yes", text: 1 } });
    return;
  }
  const { gate, ...args } = job.args as Record<string, unknown>;
  if (gate instanceof SharedArrayBuffer) Atomics.wait(new Int32Array(gate), 0, 0);
  self.postMessage(answerJob({ ...job, args: args as FileThreadJob["args"] }));
};
self.postMessage({ ready: true });
