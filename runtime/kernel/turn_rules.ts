/**
 * The rules of one Turn's tool budget [SB-5, SB-8], as pure functions over a
 * TurnRuntimeSnapshot. The HarnessKernel (in the Worker) and the turn driver
 * (in the Control Plane) both judge every model response with them, each on
 * its own state, so a compromised side cannot talk the other into a call.
 *
 * What this file enforces: a response's tool calls are accepted only ALL
 * together — at most `WORKER_CALLS_PER_RESPONSE_MAX` of them, not past the
 * snapshot's `tool_calls_max`, never once the ToolSet narrowed, call ids the
 * next consecutive ones, every tool in the pinned toolset, and no call
 * (same tool + argument digest) more than `WORKER_IDENTICAL_CALLS_MAX` times
 * in the Turn. Anything else is `model_tool_loop` with nothing executed.
 */
import { WORKER_CALLS_PER_RESPONSE_MAX, WORKER_IDENTICAL_CALLS_MAX } from "../limits.ts";
import type { ToolCallRef, ToolsetRef, TurnRuntimeSnapshot } from "../protocol/worker_frames.ts";

/** The provider ToolSet after the last permitted tool call: same id/digest, no tools. */
export function narrowedToolset(toolset: ToolsetRef): ToolsetRef {
  return { id: toolset.id, digest: toolset.digest, tool_ids: [] };
}

/**
 * Whether model call `iteration` is narrowed (no tools, the finalization
 * marker): the tool budget is spent, or it is the last model call permitted.
 */
export function isNarrowed(
  snap: TurnRuntimeSnapshot,
  executed: number,
  iteration: number,
): boolean {
  return executed >= snap.tool_calls_max || iteration >= snap.model_calls_max;
}

/** The identity of a call for the repetition rule: tool + argument digest. */
export function callKey(ref: Pick<ToolCallRef, "tool_id" | "args_digest">): string {
  return `${ref.tool_id}\u0000${ref.args_digest}`;
}

/**
 * Judges the tool calls of model call `iteration`'s response against the calls already executed in
 * this Turn (their keys, in order). "ok" means execute them all, in order.
 */
export function judgeToolCalls(
  snap: TurnRuntimeSnapshot,
  executedKeys: readonly string[],
  calls: readonly ToolCallRef[],
  iteration: number,
): "ok" | "model_tool_loop" {
  const done = executedKeys.length;
  if (isNarrowed(snap, done, iteration)) return "model_tool_loop";
  if (calls.length === 0 || calls.length > WORKER_CALLS_PER_RESPONSE_MAX) return "model_tool_loop";
  if (done + calls.length > snap.tool_calls_max) return "model_tool_loop";
  const counts = new Map<string, number>();
  for (const k of executedKeys) counts.set(k, (counts.get(k) ?? 0) + 1);
  for (const [i, c] of calls.entries()) {
    if (c.call_id !== `call-${done + 1 + i}`) return "model_tool_loop";
    if (!snap.toolset.tool_ids.includes(c.tool_id)) return "model_tool_loop";
    const k = callKey(c);
    const n = (counts.get(k) ?? 0) + 1;
    if (n > WORKER_IDENTICAL_CALLS_MAX) return "model_tool_loop";
    counts.set(k, n);
  }
  return "ok";
}
