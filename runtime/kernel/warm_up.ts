/**
 * Worker warm-up [PF-1]: one synthetic Turn — a tool call, its result, an
 * answer — through the real kernel, the real frame schemas and the real line
 * encoding, on an in-memory port, before the Worker reads its first frame.
 * Inbound frames cross the real reader (`NdjsonReader`: line splitting,
 * UTF-8 and JSON decoding, the envelope schema, read timeouts) and outbound
 * ones the real writer (`NdjsonWriter`, a synchronous sink like the Worker's
 * stdout): the first real frame of a Run otherwise paid for compiling those.
 * V8 compiles functions when they first run and zod builds its object
 * parsers on first use, so without this the first real frame paid for that
 * inside the Run. A pooled Worker does it while it waits for a Run; a cold
 * Worker whose Run's first frame is already waiting skips it, and one whose
 * frame arrives meanwhile stops at the next step (worker_main.ts).
 *
 * What this file enforces: nothing leaves the process (no I/O, no port) and
 * nothing is kept: the synthetic Turn uses fixed placeholder ids and digests
 * that name nothing. It reports whether the Turn completed, so a test notices
 * when the frames evolve and the warm-up stops exercising the real path.
 */
import { encodeFrame, NdjsonReader, NdjsonWriter } from "../protocol/ipc.ts";
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

/**
 * Runs the synthetic Turn; true when it completed through every step. `stop`
 * is asked before each frame the kernel reads: once it answers true, the
 * synthetic input ends there (the kernel sees end of input) — a Worker stops
 * warming up when its Run's first frame arrives [PF-1].
 */
export async function warmUpKernel(stop: () => boolean = () => false): Promise<boolean> {
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
  // Inbound: the lines reach the kernel through the Worker's reader, as from stdin.
  let inbound!: ReadableStreamDefaultController<Uint8Array>;
  const reader = new NdjsonReader(new ReadableStream({ start: (c) => void (inbound = c) }));
  const push = (f: object) => inbound.enqueue(encodeFrame(f));
  // Outbound: the Worker's writer, into a synchronous sink that keeps nothing.
  const writer = new NdjsonWriter({ writeSync: (p) => p.length, close: () => {} });
  push({ v: 2, type: "turn.start", snapshot });
  let broken = false;
  const result = await runHarnessKernel({
    async send(raw) {
      await writer.send(raw);
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
    },
    // Ends the synthetic input once a real frame waits (the kernel sees end of input).
    receive: () =>
      stop()
        ? Promise.resolve(null)
        : reader.next<ControlToWorker>(RUN_DEADLINE_MS, parseControlFrame),
  });
  inbound.close();
  await writer.close();
  return !broken && result.kind === "finished" && result.outcome.kind === "completed" &&
    await reader.next(RUN_DEADLINE_MS) === null;
}
