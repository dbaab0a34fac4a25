/**
 * The canonical event state machine [EV-1]: which kind may follow which.
 * Used when appending (a bug in the Run engine must not write an invalid
 * journal) and when replaying (a tampered journal must not validate).
 *
 * What this file enforces: `run.started` first and once; one terminal
 * (`run.completed|failed|cancelled`) and nothing after it; exactly one
 * `model.request.started`/`model.response.finished` pair per logical call,
 * numbered 1, 2, 3 …; transport attempts only inside an open call, paired
 * and numbered 1, 2 …; assistant blocks opened inside their call and closed
 * once; tool calls `call-1`, `call-2` … paired and never overlapping a model
 * call; a terminal may leave pairs open only for `run_interrupted` and
 * `journal_unavailable`, the codes written when the process could not close them.
 */
import type { EventKind } from "../protocol/events.ts";

export interface MachineState {
  started: boolean;
  terminal: boolean;
  calls: number;
  openCall: number | null;
  attempts: number;
  openAttempt: number | null;
  openBlock: number | null;
  tools: number;
  openTool: string | null;
  /** The latest call whose reasoning was committed (0: none) [MB-12]. */
  reasoned: number;
}

export function initialState(): MachineState {
  return {
    started: false,
    terminal: false,
    calls: 0,
    openCall: null,
    attempts: 0,
    openAttempt: null,
    openBlock: null,
    tools: 0,
    openTool: null,
    reasoned: 0,
  };
}

export type Step = { ok: true; state: MachineState } | { ok: false; reason: string };

const bad = (reason: string): Step => ({ ok: false, reason });

/** Applies one event; pure (returns a new state). */
export function step(s: MachineState, kind: EventKind, payload: Record<string, unknown>): Step {
  if (s.terminal) return bad("event after terminal");
  if (!s.started && kind !== "run.started") return bad("first event must be run.started");
  const n = { ...s };
  switch (kind) {
    case "run.started":
      if (s.started) return bad("second run.started");
      n.started = true;
      return { ok: true, state: n };
    case "model.request.started":
      if (s.openCall !== null || s.openTool !== null) return bad("overlapping call");
      if (payload.call !== s.calls + 1) return bad("call out of order");
      n.calls = s.calls + 1;
      n.openCall = n.calls;
      n.attempts = 0;
      return { ok: true, state: n };
    case "model.transport.attempt.started":
      if (s.openCall === null || payload.call !== s.openCall) return bad("attempt outside call");
      if (s.openAttempt !== null || payload.attempt !== s.attempts + 1) {
        return bad("attempt out of order");
      }
      n.attempts = s.attempts + 1;
      n.openAttempt = n.attempts;
      return { ok: true, state: n };
    case "model.transport.attempt.finished":
      if (s.openAttempt === null || payload.attempt !== s.openAttempt) {
        return bad("unpaired attempt");
      }
      if (payload.call !== s.openCall) return bad("attempt outside call");
      n.openAttempt = null;
      return { ok: true, state: n };
    case "model.response.finished":
      if (s.openCall === null || payload.call !== s.openCall) return bad("unpaired response");
      if (s.openAttempt !== null) return bad("attempt still open");
      n.openCall = null;
      return { ok: true, state: n };
    case "assistant.block.started":
      // A block belongs to the latest call; it may open after that call's
      // response closed (an answer with no streamed delta).
      if (s.openBlock !== null || s.calls === 0 || payload.block !== s.calls) {
        return bad("block outside call");
      }
      n.openBlock = payload.block as number;
      return { ok: true, state: n };
    case "assistant.block.delta":
      if (s.openBlock === null || payload.block !== s.openBlock) return bad("delta outside block");
      return { ok: true, state: n };
    case "assistant.block.completed":
      if (s.openBlock === null || payload.block !== s.openBlock) return bad("unpaired block");
      n.openBlock = null;
      return { ok: true, state: n };
    case "assistant.reasoning.delta":
      // Live reasoning belongs to the open call [MB-12].
      if (s.openCall === null || payload.call !== s.openCall) return bad("reasoning outside call");
      return { ok: true, state: n };
    case "assistant.reasoning.completed":
      // Committed once per call, after its response closed, before the next call or tool.
      if (s.openCall !== null || s.calls === 0 || payload.call !== s.calls) {
        return bad("reasoning outside call");
      }
      if (s.reasoned >= s.calls) return bad("reasoning committed twice");
      n.reasoned = s.calls;
      return { ok: true, state: n };
    case "tool.call.requested":
      if (s.openCall !== null || s.openTool !== null || s.openBlock !== null) {
        return bad("tool call overlaps");
      }
      if (payload.call_id !== `call-${s.tools + 1}`) return bad("tool call out of order");
      n.tools = s.tools + 1;
      n.openTool = payload.call_id as string;
      return { ok: true, state: n };
    case "tool.call.completed":
      if (s.openTool === null || payload.call_id !== s.openTool) return bad("unpaired tool call");
      n.openTool = null;
      return { ok: true, state: n };
    case "tool.output.delta":
      // Live output belongs to the open tool call that runs the command [EX-4].
      if (s.openTool === null || payload.call_id !== s.openTool) return bad("output outside tool");
      return { ok: true, state: n };
    case "permission.requested":
    case "permission.decided":
    // [LC-2] A delegation's status belongs to the open agent/delegate call.
    case "subagent.status":
      // An approval belongs to the open tool call it gates.
      if (s.openTool === null || payload.call_id !== s.openTool) {
        return bad("approval outside tool");
      }
      return { ok: true, state: n };
    case "permission.denied":
      if (s.openCall !== null) return bad("permission inside call");
      return { ok: true, state: n };
    case "run.completed":
    case "run.cancelled":
    case "run.failed": {
      // A cancelled or failed Run may leave its partial block open: partial
      // output is never completed (and never committed) [CV-6].
      const open = s.openCall !== null || s.openAttempt !== null || s.openTool !== null ||
        (kind === "run.completed" && s.openBlock !== null);
      const forced = kind === "run.failed" &&
        (payload.code === "run_interrupted" || payload.code === "journal_unavailable");
      if (open && !forced) return bad("terminal with open pairs");
      n.terminal = true;
      return { ok: true, state: n };
    }
  }
}
