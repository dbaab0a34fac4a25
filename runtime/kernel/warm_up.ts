/**
 * Worker warm-up [PF-1]: one synthetic Turn — a tool call, its result, an
 * answer — through the real kernel, the real frame schemas and the real line
 * encoding, on an in-memory port, before the Worker reads its first frame.
 * V8 compiles functions when they first run and zod builds its object
 * parsers on first use, so without this the first real frame paid for that
 * inside the Run. A pooled Worker does it while it waits for a Run.
 *
 * What this file enforces: nothing leaves the process (no I/O, no port) and
 * nothing is kept: the synthetic Turn uses fixed placeholder ids and digests
 * that name nothing. It reports whether the Turn completed, so a test notices
 * when the frames evolve and the warm-up stops exercising the real path.
 */
import { encodeFrame } from "../protocol/ipc.ts";
import {
  type ControlToWorker,
  parseControlFrame,
  parseWorkerFrame,
  type WorkerToControl,
} from "../protocol/worker_frames.ts";
import { RUN_DEADLINE_MS, WORKER_MODEL_CALLS_MAX, WORKER_TOOL_CALLS_MAX } from "../limits.ts";
import { runHarnessKernel } from "./harness_kernel.ts";

const digest = (c: string) => `sha256:${c.repeat(64)}`;
const dec = new TextDecoder();

/** Crosses the line encoding both ways and the strict schema of the direction. */
function wire<T>(
  frame: object,
  parse: (v: unknown) => { ok: true; frame: T } | { ok: false },
): T | null {
  const line = encodeFrame(frame);
  const r = parse(JSON.parse(dec.decode(line.subarray(0, line.length - 1))));
  return r.ok ? r.frame : null;
}

/** Runs the synthetic Turn; true when it completed through every step. */
export async function warmUpKernel(): Promise<boolean> {
  const snapshot = {
    run_id: "00000000-0000-4000-8000-00000000a001",
    model_id: "warm-up",
    plan: { id: "00000000-0000-4000-8000-00000000a002", digest: digest("a") },
    toolset: {
      id: "00000000-0000-4000-8000-00000000a003",
      digest: digest("b"),
      tool_ids: ["file/read_text"],
    },
    model_calls_max: WORKER_MODEL_CALLS_MAX,
    tool_calls_max: WORKER_TOOL_CALLS_MAX,
    deadline_ms: RUN_DEADLINE_MS,
  };
  const inbox: (ControlToWorker | null)[] = [];
  const push = (f: object) => inbox.push(wire(f, parseControlFrame));
  push({ v: 2, type: "turn.start", snapshot });
  let broken = false;
  const result = await runHarnessKernel({
    send(raw) {
      const f: WorkerToControl | null = wire(raw, parseWorkerFrame);
      if (f === null) broken = true;
      else if (f.type === "model.call") {
        push({
          v: 2,
          type: "model.result",
          request_id: f.request_id,
          iteration: f.iteration,
          outcome: f.iteration === 1
            ? {
              kind: "tool_calls",
              calls: [{ call_id: "call-1", tool_id: "file/read_text", args_digest: digest("c") }],
            }
            : { kind: "answer", reason: "stop", answer_digest: digest("d") },
        });
      } else if (f.type === "tool.call") {
        push({
          v: 2,
          type: "tool.result",
          request_id: f.request_id,
          call_id: f.call_id,
          outcome: { kind: "ok", result_digest: digest("e") },
        });
      }
      return Promise.resolve();
    },
    receive: () => Promise.resolve(inbox.shift() ?? null),
  });
  return !broken && result.kind === "finished" && result.outcome.kind === "completed";
}
