/**
 * The Worker body [SB-5]: what stage 2 of `sandbox/worker_entry.ts` runs once
 * the process is confined and attested. It adapts the attested IPC port to
 * the HarnessKernel and maps the kernel's result to the exit code.
 *
 * What this file enforces: every inbound frame passes the strict Model Broker
 * IPC v2 schema before the kernel sees it; the body holds nothing but the
 * port (no fds, paths, sockets, prompts); a read never waits past the Run
 * deadline plus a small grace, after which the kernel has already failed.
 */
// First: zod must be configured before any schema is built [PF-1].
import "../zod_jitless.ts";
import { RUN_DEADLINE_MS, WORKER_READ_GRACE_MS, WORKER_WARM_UP_TURNS } from "../limits.ts";
import { parseControlFrame } from "../protocol/worker_frames.ts";
import type { WorkerBody } from "../../sandbox/worker_entry.ts";
import { runHarnessKernel } from "./harness_kernel.ts";
import { warmUpKernel } from "./warm_up.ts";

/** Exit codes: 0 finished (any outcome was reported), 3 input ended before a terminal. */
export const harnessWorkerBody: WorkerBody = async (port) => {
  // Compiles the Turn's path before the first frame is read [PF-1]; nothing leaves the process.
  // It pays off only while the Worker waits (pooled): when the Run's first frame is already
  // waiting (the cold path), the Run would wait for it, so the Worker goes straight to work,
  // and a frame that arrives during the warm-up ends it at its next step.
  // One Turn leaves V8 interpreting what ran once; a few more let it compile the frame path.
  for (let i = 0; i < WORKER_WARM_UP_TURNS && !port.frameWaiting(); i++) {
    if (!await warmUpKernel(() => port.frameWaiting())) break;
  }
  const result = await runHarnessKernel({
    send: (frame) => port.send(frame),
    receive: () => port.receive(RUN_DEADLINE_MS + WORKER_READ_GRACE_MS, parseControlFrame),
  });
  return result.kind === "finished" ? 0 : 3;
};
