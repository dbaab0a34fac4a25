/**
 * The subagent coordinator [LC-2]: the one owner of active delegations. A
 * parent Run's approved `agent/delegate` call becomes a child Run of another
 * Agent, started through the SAME Run service (`submit`: admission, fence,
 * context, policy, journaling, Worker sandbox all apply), in a new
 * Conversation of the delegate Agent titled by its parent.
 *
 * What this file enforces:
 * - refusals (bounds.ts) are decided before the approval is asked and again
 *   right before anything is created, synchronously with the slot's
 *   reservation, so two delegations cannot both take the last slot or the
 *   same idle delegate; a refused delegation creates nothing;
 * - the child sees only the message (a fresh Conversation, no history);
 * - the child's progress — its tool calls, approvals and terminal — is
 *   journaled on the PARENT Run as `subagent.status`, so the parent's
 *   timeline and chat show it and the operator can decide the child's
 *   approvals from the parent's Conversation;
 * - the child ends within the wall (SUBAGENT_WALL_MS): past it the child is
 *   cancelled and the parent gets `subagent_timeout`; the parent's cancel
 *   (or deadline, shutdown) cancels the child and waits for its terminal;
 * - the mailbox holds the parent→child message and the child→parent answer
 *   (≤ 8 KiB, cut on a code point), nothing else;
 * - a child Run cannot delegate (depth 1).
 */
import type { AgentService } from "../agents/service.ts";
import { escapeName } from "../display_name.ts";
import { AppError, type ErrorCode, isErrorCode } from "../errors.ts";
import type { LiveRecord } from "../events/live_hub.ts";
import { CONVERSATIONS_PER_AGENT_MAX, SUBAGENT_WALL_MS } from "../limits.ts";
import { errorName, type Logger } from "../log.ts";
import { canonicalJson, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import { clampDurationMs, type EventEnvelope } from "../protocol/events.ts";
import {
  deleteConversation,
  getConversation,
  insertConversation,
} from "../store/agent_state_store.ts";
import { delegationsOfRun, finishDelegation, insertDelegation } from "../store/delegation_store.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import type { ToolArgs } from "../tools/policy.ts";
import { JournalUnavailable, type RunRecorder } from "../runs/run_recorder.ts";
import type { ToolExecResult } from "../runs/tool_exec.ts";
import { boundAnswer, childConversationTitle, delegationRefusal } from "./bounds.ts";

/** What the coordinator may use of the Run service and the Agents. */
export interface SubagentDeps {
  agents: AgentService;
  stateDb(agentId: string): DatabaseSync;
  /** The Run service's own admission path (the child is an ordinary Run). */
  submit(agentId: string, conversationId: string, message: string): Promise<{ run_id: string }>;
  /** Cancels a Run (once); its terminal follows. */
  abort(runId: string): void;
  live(runId: string, agentId: string): LiveRecord | null;
  /** Whether the Agent has an active Run. */
  agentActive(agentId: string): boolean;
  log: Logger;
  now(): number;
  /** @default SUBAGENT_WALL_MS (tests shorten it through the test entry only) */
  wallMs?: number;
}

/** The delegation side of one Run, as its tool calls see it. */
export interface DelegatePort {
  /** The refusal this call would get now (nothing is created), or null. */
  check(args: ToolArgs): ErrorCode | null;
  /** The approval's text: target Agent and the message in full. */
  preview(args: ToolArgs): string;
  /** Runs an approved delegation to its end: the answer, or a fixed code. */
  run(
    args: ToolArgs,
    callId: string,
    signal: AbortSignal,
    recorder: RunRecorder,
  ): Promise<ToolExecResult>;
}

interface ParentRun {
  agentId: string;
  conversationId: string;
  runId: string;
}

interface Active {
  parent: ParentRun;
  targetAgentId: string;
  /** The child Run, once admitted. */
  childRunId: string | null;
}

type Outcome = "completed" | "failed" | "cancelled" | "timeout" | "parent_cancelled";

export class Subagents {
  /** Every delegation in flight, by the parent Run's id. */
  readonly #active = new Map<string, Active>();
  readonly #deps: SubagentDeps;
  readonly #wallMs: number;

  constructor(deps: SubagentDeps) {
    this.#deps = deps;
    this.#wallMs = deps.wallMs ?? SUBAGENT_WALL_MS;
  }

  /** Delegations in flight (≤ SUBAGENTS_ACTIVE_MAX). */
  get size(): number {
    return this.#active.size;
  }

  /** Whether `runId` is a child Run in flight. */
  isChild(runId: string): boolean {
    for (const a of this.#active.values()) if (a.childRunId === runId) return true;
    return false;
  }

  /** The delegation port of one Run. */
  forRun(parent: ParentRun): DelegatePort {
    return {
      check: (args) => this.#refusal(parent, args),
      // SECURITY: the message is the model's text: hidden characters (bidi, controls) are
      // shown escaped, line by line, so the operator approves what the delegate will read.
      preview: (args) =>
        `Delegate to Agent: ${this.#targetName(String(args.agent_id))} (${
          escapeName(String(args.agent_id))
        })\nMessage (${utf8Bytes(String(args.message))} bytes):\n${
          String(args.message).split("\n").map(escapeName).join("\n")
        }\n`,
      run: (args, callId, signal, recorder) => this.#run(parent, args, callId, signal, recorder),
    };
  }

  #targetName(id: string): string {
    try {
      return this.#deps.agents.get(id).name;
    } catch (err) {
      if (err instanceof AppError) return "(unknown Agent)";
      throw err;
    }
  }

  #targetState(id: string): "active" | "upgrading" | "absent" {
    try {
      const v = this.#deps.agents.get(id);
      return v.state === "active" ? "active" : v.state === "upgrading" ? "upgrading" : "absent";
    } catch (err) {
      // An id that is not an Agent (malformed, unknown, purged) is absent.
      if (err instanceof AppError) return "absent";
      throw err;
    }
  }

  #refusal(parent: ParentRun, args: ToolArgs): ErrorCode | null {
    const target = String(args.agent_id);
    const state = this.#targetState(target);
    return delegationRefusal({
      parentAgentId: parent.agentId,
      targetAgentId: target,
      messageBytes: utf8Bytes(String(args.message)),
      parentIsChild: this.isChild(parent.runId),
      parentDelegations: (this.#active.has(parent.runId) ? 1 : 0) +
        delegationsOfRun(this.#deps.stateDb(parent.agentId), parent.runId),
      targetState: state,
      targetBusy: state === "active" &&
        (this.#deps.agentActive(target) ||
          [...this.#active.values()].some((a) => a.targetAgentId === target)),
      activeDelegations: this.#active.size,
    });
  }

  async #run(
    parent: ParentRun,
    args: ToolArgs,
    callId: string,
    signal: AbortSignal,
    recorder: RunRecorder,
  ): Promise<ToolExecResult> {
    const d = this.#deps;
    if (signal.aborted) return { ok: false, code: "run_cancelled" };
    // Re-checked after the approval wait, and the slot reserved in the same synchronous step.
    const refusal = this.#refusal(parent, args);
    if (refusal !== null) return { ok: false, code: refusal };
    const target = String(args.agent_id);
    const message = String(args.message);
    const entry: Active = { parent, targetAgentId: target, childRunId: null };
    this.#active.set(parent.runId, entry);
    const t0 = d.now();
    const delegationId = crypto.randomUUID();
    let childConv: string | null = null;
    let childDb: DatabaseSync | null = null;
    try {
      const parentDb = d.stateDb(parent.agentId);
      const parentTitle = getConversation(parentDb, parent.conversationId)?.title ?? "";
      childDb = d.stateDb(target);
      childConv = crypto.randomUUID();
      const title = childConversationTitle(d.agents.get(parent.agentId).name, parentTitle);
      if (
        !insertConversation(
          childDb,
          { id: childConv, title, now: d.now() },
          CONVERSATIONS_PER_AGENT_MAX,
        )
      ) {
        childConv = null;
        return { ok: false, code: "conversation_limit" };
      }
      let runId: string;
      try {
        runId = (await d.submit(target, childConv, message)).run_id;
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        // Not admitted: the Conversation made for it goes again (nothing left behind).
        deleteConversation(childDb, childConv);
        childConv = null;
        return { ok: false, code: mapAdmission(err.code) };
      }
      entry.childRunId = runId;
      const at = d.now();
      insertDelegation(parentDb, {
        id: delegationId,
        parent_run_id: parent.runId,
        parent_conversation_id: parent.conversationId,
        call_id: callId,
        child_agent_id: target,
        child_conversation_id: childConv,
        child_run_id: runId,
        created_at: at,
      }, {
        direction: "parent_to_child",
        body: message,
        bytes: utf8Bytes(message),
        truncated: false,
        digest: domainDigest("agent-builder/delegation-message/v1", message),
      });
      const base = {
        call_id: callId,
        delegation_id: delegationId,
        agent_id: target,
        conversation_id: childConv,
        run_id: runId,
      };
      const status = new StatusWriter(recorder, d.log, () => d.now() - t0);
      status.write({
        ...base,
        agent_name: this.#targetName(target).slice(0, 256),
        state: "running",
        code: null,
      });
      const end = await this.#follow(target, runId, signal, t0, (e) => status.mirror(base, e));
      return this.#finish(parentDb, delegationId, base, end, status);
    } catch (err) {
      // Unexpected: the child never outlives its delegation.
      if (entry.childRunId) d.abort(entry.childRunId);
      d.log.error("subagent.failed", { kind: errorName(err) });
      throw err;
    } finally {
      this.#active.delete(parent.runId);
    }
  }

  /** Follows the child's events to its terminal, cancelling it on the wall or the parent's abort. */
  async #follow(
    agentId: string,
    runId: string,
    signal: AbortSignal,
    t0: number,
    onEvent: (e: EventEnvelope) => void,
  ): Promise<{ outcome: Outcome; answer: string; code: ErrorCode | null }> {
    const d = this.#deps;
    const rec = d.live(runId, agentId);
    if (!rec) {
      // Its record is gone (its Agent was deleted meanwhile): make sure it does not go on.
      d.abort(runId);
      return { outcome: "failed", answer: "", code: "run_not_found" };
    }
    const queue: EventEnvelope[] = [];
    let ended = false;
    let wake: (() => void) | null = null;
    const poke = () => {
      const w = wake;
      wake = null;
      w?.();
    };
    let why: "timeout" | "parent" | null = null;
    const stop = (reason: "timeout" | "parent") => {
      if (why !== null) return;
      why = reason;
      d.abort(runId);
      poke();
    };
    const unsubscribe = rec.subscribe(0, (item) => {
      if (item === null) ended = true;
      else if ("run_id" in item.event) queue.push(item.event);
      poke();
    });
    const timer = setTimeout(() => stop("timeout"), Math.max(0, this.#wallMs - (d.now() - t0)));
    const onAbort = () => stop("parent");
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    let answer = "";
    let terminal: EventEnvelope | null = null;
    try {
      while (terminal === null) {
        const e = queue.shift();
        if (e === undefined) {
          if (ended) break;
          await new Promise<void>((r) => (wake = r));
          continue;
        }
        const p = e.payload as Record<string, unknown>;
        if (e.kind === "assistant.block.completed") answer = String(p.text);
        if (e.kind === "run.completed" || e.kind === "run.failed" || e.kind === "run.cancelled") {
          terminal = e;
        } else onEvent(e);
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      unsubscribe();
    }
    if (why === "parent") return { outcome: "parent_cancelled", answer: "", code: "run_cancelled" };
    if (why === "timeout") return { outcome: "timeout", answer: "", code: "subagent_timeout" };
    const t = terminal as EventEnvelope | null;
    if (t?.kind === "run.completed") return { outcome: "completed", answer, code: null };
    if (t?.kind === "run.failed") {
      const code = (t.payload as Record<string, unknown>).code;
      return { outcome: "failed", answer: "", code: isErrorCode(code) ? code : "internal_error" };
    }
    return { outcome: "cancelled", answer: "", code: "subagent_cancelled" };
  }

  #finish(
    parentDb: DatabaseSync,
    delegationId: string,
    base: StatusBase,
    end: { outcome: Outcome; answer: string; code: ErrorCode | null },
    status: StatusWriter,
  ): ToolExecResult {
    const now = this.#deps.now();
    switch (end.outcome) {
      case "completed": {
        const a = boundAnswer(end.answer);
        finishDelegation(parentDb, delegationId, "completed", null, {
          direction: "child_to_parent",
          body: a.body,
          bytes: a.bytes,
          truncated: a.truncated,
          digest: domainDigest("agent-builder/delegation-answer/v1", a.body),
        }, now);
        status.write({
          ...base,
          state: "completed",
          answer: a.body,
          truncated: a.truncated,
          code: null,
        });
        return {
          ok: true,
          text: canonicalJson({
            agent_id: base.agent_id,
            conversation_id: base.conversation_id,
            run_id: base.run_id,
            answer: a.body,
            answer_bytes: a.bytes,
            truncated: a.truncated,
          }),
        };
      }
      case "failed":
        finishDelegation(parentDb, delegationId, "failed", end.code, null, now);
        status.write({ ...base, state: "failed", code: end.code });
        return { ok: false, code: "subagent_failed" };
      case "timeout":
        finishDelegation(parentDb, delegationId, "timeout", "subagent_timeout", null, now);
        status.write({ ...base, state: "timeout", code: "subagent_timeout" });
        return { ok: false, code: "subagent_timeout" };
      case "parent_cancelled":
        finishDelegation(parentDb, delegationId, "cancelled", "run_cancelled", null, now);
        status.write({ ...base, state: "cancelled", code: "run_cancelled" });
        return { ok: false, code: "run_cancelled" };
      case "cancelled":
        finishDelegation(parentDb, delegationId, "cancelled", "subagent_cancelled", null, now);
        status.write({ ...base, state: "cancelled", code: "subagent_cancelled" });
        return { ok: false, code: "subagent_cancelled" };
      default: {
        const never: never = end.outcome;
        throw new Error(`unhandled outcome ${never}`);
      }
    }
  }
}

/** An admission refusal of the child as the parent's tool result names it. */
function mapAdmission(code: ErrorCode): ErrorCode {
  // The delegate became busy or fenced between the check and its admission.
  if (code === "conversation_busy" || code === "agent_busy") return "subagent_busy";
  return code;
}

interface StatusBase {
  call_id: string;
  delegation_id: string;
  agent_id: string;
  conversation_id: string;
  run_id: string;
}

/** Journals `subagent.status` on the parent Run; stops (logged) once its journal is full. */
class StatusWriter {
  #on = true;
  constructor(
    private readonly recorder: RunRecorder,
    private readonly log: Logger,
    private readonly elapsed: () => number,
  ) {}

  write(p: Record<string, unknown>): void {
    if (!this.#on) return;
    try {
      this.recorder.durable("subagent.status", {
        ...p,
        elapsed_ms: clampDurationMs(this.elapsed()),
      } as never);
    } catch (err) {
      // The parent's own journal bound or fault: its Run fails on its next write; the
      // delegation itself still ends and answers.
      if (
        !(err instanceof JournalUnavailable) &&
        !(err instanceof AppError && err.code === "run_event_limit")
      ) throw err;
      this.#on = false;
      this.log.warn("subagent.status_dropped", { kind: errorName(err) });
    }
  }

  /** The child events the parent shows: its tool calls and approvals. */
  mirror(base: StatusBase, e: EventEnvelope): void {
    const p = e.payload as Record<string, unknown>;
    switch (e.kind) {
      case "tool.call.requested":
        this.write({ ...base, state: "tool", tool_id: p.tool_id, code: null });
        break;
      case "permission.requested":
        this.write({
          ...base,
          state: "awaiting_approval",
          tool_id: p.tool_id,
          permission_id: p.permission_id,
          preview: p.preview,
          code: null,
        });
        break;
      case "permission.decided":
        this.write({
          ...base,
          state: "approval_decided",
          permission_id: p.permission_id,
          decision: p.decision,
          code: null,
        });
        break;
    }
  }
}
