/**
 * HarnessKernel [SB-5, SB-8]: the agent loop that runs inside the confined
 * Worker. plan reference → model → tools → model → … → terminal, over an IPC
 * port.
 *
 * What this file enforces, from the TurnRuntimeSnapshot it receives first:
 * - at most `model_calls_max` model calls and `tool_calls_max` tool calls
 *   (≤ 32 and ≤ 24, or an Agent's lower bounds);
 * - every response's tool calls are judged whole by `turn_rules.ts` (≤ 4,
 *   within the budget, in order, known tools, no call more than 3 times) and
 *   then asked for one by one, in order; a refused response ends the Turn
 *   with `model_tool_loop` and nothing of it is asked for;
 * - once the tool budget is spent, and on the last permitted model call, the
 *   provider ToolSet narrows to empty and the call asks for the Control
 *   Plane's fixed finalization marker;
 * - the Run deadline, measured from the snapshot's arrival;
 * - a model error is reported with the Broker's own code, never replaced.
 * The kernel is pure logic over `KernelPort`: it has no fds, paths, sockets or
 * prompts, and the Control Plane re-checks every rule on its side.
 */
import type { ErrorCode } from "../errors.ts";
import type {
  ControlToWorker,
  TurnFinish,
  TurnRuntimeSnapshot,
  WorkerToControl,
} from "../protocol/worker_frames.ts";
import { callKey, isNarrowed, judgeToolCalls, narrowedToolset } from "./turn_rules.ts";

/** The Worker's view of its IPC channel. */
export interface KernelPort {
  send(frame: WorkerToControl): Promise<void>;
  /** The next validated frame, or null at end of input. Rejects on a protocol error. */
  receive(): Promise<ControlToWorker | null>;
}

export interface KernelOptions {
  /** Monotonic clock in ms. @default performance.now */
  now?: () => number;
  /** Timer hooks (tests may shorten waits). @default globalThis.setTimeout/clearTimeout */
  setTimer?: (fn: () => void, ms: number) => number;
  clearTimer?: (id: number) => void;
}

/** The result of one kernel run: what it reported, or `eof` when the channel closed first. */
export type KernelResult = { kind: "finished"; outcome: TurnFinish } | { kind: "eof" };

class Stop {
  constructor(readonly outcome: TurnFinish | null) {}
}

const fail = (code: ErrorCode) => new Stop({ kind: "failed", code });

/** Runs one Turn to its terminal frame. Never throws for protocol problems. */
export async function runHarnessKernel(
  port: KernelPort,
  opts: KernelOptions = {},
): Promise<KernelResult> {
  const now = opts.now ?? (() => performance.now());
  const setTimer = opts.setTimer ?? ((fn, ms) => setTimeout(fn, ms) as unknown as number);
  const clearTimer = opts.clearTimer ?? ((id) => clearTimeout(id));

  let first: ControlToWorker | null;
  try {
    first = await port.receive();
  } catch {
    return finish(port, { kind: "failed", code: "worker_protocol_error" });
  }
  if (first === null) return { kind: "eof" };
  if (first.type !== "turn.start") {
    return finish(port, { kind: "failed", code: "worker_protocol_error" });
  }
  const snap = first.snapshot;
  const deadline = now() + snap.deadline_ms;

  /** Waits for the next frame, honouring cancel, EOF and the Run deadline. */
  const next = async (): Promise<ControlToWorker> => {
    const left = deadline - now();
    if (left <= 0) throw fail("model_turn_deadline");
    let timer: number | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimer(() => reject(fail("model_turn_deadline")), left);
    });
    let frame: ControlToWorker | null;
    try {
      frame = await Promise.race([port.receive(), timeout]);
    } catch (err) {
      if (err instanceof Stop) throw err;
      throw fail("worker_protocol_error");
    } finally {
      if (timer !== undefined) clearTimer(timer);
    }
    if (frame === null) throw new Stop(null);
    if (frame.type === "cancel") throw new Stop({ kind: "cancelled" });
    return frame;
  };

  try {
    return await finish(port, await loop(port, snap, next));
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    return err.outcome === null ? { kind: "eof" } : await finish(port, err.outcome);
  }
}

async function loop(
  port: KernelPort,
  snap: TurnRuntimeSnapshot,
  next: () => Promise<ControlToWorker>,
): Promise<TurnFinish> {
  let requestId = 0;
  /** Keys (tool + argument digest) and call ids of the executed calls, in order. */
  const keys: string[] = [];
  const resultIds: string[] = [];
  for (let iteration = 1; iteration <= snap.model_calls_max; iteration++) {
    const narrowed = isNarrowed(snap, keys.length, iteration);
    const modelRequest = ++requestId;
    await port.send({
      v: 2,
      type: "model.call",
      request_id: modelRequest,
      iteration,
      plan: snap.plan,
      toolset: narrowed ? narrowedToolset(snap.toolset) : snap.toolset,
      tool_results: [...resultIds],
      finalize: narrowed,
    });
    const reply = await next();
    if (
      reply.type !== "model.result" || reply.request_id !== modelRequest ||
      reply.iteration !== iteration
    ) throw fail("worker_protocol_error");
    const outcome = reply.outcome;
    // The Broker's code is final: the Worker never substitutes its own.
    if (outcome.kind === "error") return { kind: "failed", code: outcome.code };
    if (outcome.kind === "answer") {
      return {
        kind: "completed",
        reason: outcome.reason,
        answer_digest: outcome.answer_digest,
        model_calls: iteration,
        tool_calls: keys.length,
      };
    }
    // All or nothing: one refused call and none of the response runs.
    if (judgeToolCalls(snap, keys, outcome.calls, iteration) !== "ok") {
      return { kind: "failed", code: "model_tool_loop" };
    }
    for (const call of outcome.calls) {
      keys.push(callKey(call));
      const toolRequest = ++requestId;
      await port.send({
        v: 2,
        type: "tool.call",
        request_id: toolRequest,
        iteration,
        call_id: call.call_id,
        tool_id: call.tool_id,
      });
      const result = await next();
      if (
        result.type !== "tool.result" || result.request_id !== toolRequest ||
        result.call_id !== call.call_id
      ) throw fail("worker_protocol_error");
      // A tool error is a result the model sees; it does not end the Turn.
      resultIds.push(call.call_id);
    }
  }
  return { kind: "failed", code: "model_tool_loop" };
}

async function finish(port: KernelPort, outcome: TurnFinish): Promise<KernelResult> {
  await port.send({ v: 2, type: "turn.finish", outcome });
  return { kind: "finished", outcome };
}
