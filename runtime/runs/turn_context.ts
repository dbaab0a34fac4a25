/**
 * What one Turn's Control Plane side works with: the Worker channel and the
 * TurnContext shared by the turn driver, the model call and the tool call.
 * Its own module so that those three point at it and never at each other.
 */
import type { DatabaseSync } from "node:sqlite";
import type { ContextPlan } from "../context/plan.ts";
import type { Logger } from "../log.ts";
import type { ModelBroker } from "../model/types.ts";
import type {
  ControlToWorker,
  TurnRuntimeSnapshot,
  WorkerToControl,
} from "../protocol/worker_frames.ts";
import type { ReadReceipt } from "../tools/file_read_text.ts";
import type { RunExec } from "../exec/run_exec.ts";
import type { RunTasks } from "../tasks/task_manager.ts";
import type { ErrorCode } from "../errors.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import type { Approvals } from "./approvals.ts";
import type { SkillPlan } from "../skills/service.ts";
import type { CallFacts, Decided } from "../tools/policy.ts";
import type { RunRecorder } from "./run_recorder.ts";
import type { DelegatePort } from "../subagents/coordinator.ts";

/** The extension (MCP) servers as a Run uses them [LC-5]. */
export interface McpPort {
  /** One tools/call of a tool the Agent's toolset offered; text-only canonical result. */
  call(
    toolId: string,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<{ ok: true; text: string } | { ok: false; code: ErrorCode }>;
  /** The operation-ledger executor identity (server and pinned address). */
  executorOf(toolId: string): string;
  /** The Agent's enabled extension tools. */
  specsFor(agentId: string): ToolSpec[];
}

/** Installed skills as a Run uses them [LC-3] (runtime/skills/service.ts). */
export interface SkillPort {
  /** The Agent's skills as tools (always `ask`). */
  specsFor(agentId: string): ToolSpec[];
  /** What the approval binds; null when the Run's tool is no longer the stored skill. */
  planCall(agentId: string, toolId: string, spec: ToolSpec): SkillPlan | null;
  /** Runs the approved skill in the runner; its canonical result or a fixed code. */
  call(
    agentId: string,
    plan: SkillPlan,
    args: Record<string, unknown>,
    runKey: string,
    signal?: AbortSignal,
  ): Promise<{ ok: true; text: string } | { ok: false; code: ErrorCode }>;
}

/** The Control Plane's view of a Worker's IPC channel. */
export interface WorkerChannel {
  send(frame: ControlToWorker): Promise<void>;
  /** The next validated frame; null at end of output; rejects on a protocol violation. */
  receive(timeoutMs: number): Promise<WorkerToControl | null>;
}

/** What an interactive Run needs to gate `ask` tools. */
export interface ApprovalContext {
  approvals: Approvals;
  agentId: string;
  generation: number;
  /** False once the Agent was fenced for upgrade/delete. */
  generationCurrent(): boolean;
  /** `file/read_text` receipts of THIS Run by path (what a mutation must prove) [TL-6]. */
  receipts: Map<string, ReadReceipt>;
  /** Kept checkpoint bytes per Agent [TL-11]. @default CHECKPOINT_AGENT_MAX_BYTES */
  checkpointMaxBytes?: number;
  /**
   * The decision of one call on the Agent's policy as it is now [TL-9]; absent ⇒ the
   * EffectiveToolSet's tool-level decision.
   */
  policy?: (facts: CallFacts) => Decided;
}

export interface TurnContext {
  snapshot: TurnRuntimeSnapshot;
  plan: ContextPlan;
  workspaceDir: string;
  broker: ModelBroker;
  recorder: RunRecorder;
  db: DatabaseSync;
  log: Logger;
  now: () => number;
  /** Absolute Run deadline (epoch ms). */
  deadline: number;
  /** Aborted on cancel, deadline or shutdown. */
  signal: AbortSignal;
  /** Why `signal` aborted, once it has. */
  abortReason(): "user" | "shutdown" | "deadline" | "agent_upgrade" | "agent_delete" | null;
  /**
   * Aborted once the Worker process has exited (crash, kill, a supervisor bound) [OP-5]:
   * an in-flight model call is cut at once. Absent ⇒ only `signal` cuts it.
   */
  workerGone?: AbortSignal;
  /** Usage-ledger calibration scope [CX-5]. */
  scope: string;
  /** Approvals of `ask` tools [TL-2]; absent ⇒ the Run is non-interactive. */
  approvals?: ApprovalContext;
  /** The Agent's reasoning setting [MB-12]. @default true */
  reasoning?: boolean;
  /** The Run's scratch copy and change sets [EX-2..5]; absent ⇒ no runner, exec tools denied. */
  exec?: RunExec;
  /** MCP servers [LC-5]; absent ⇒ every `mcp/…` call is denied. */
  mcp?: McpPort;
  /** Skills [LC-3]; absent ⇒ every `skill/…` call is denied. */
  skills?: SkillPort;
  /** The Agent's background Tasks [EX-6]; absent ⇒ refused (`tool_denied`). */
  tasks?: RunTasks;
  /** document/extract_text for this Run [LC-4]; absent ⇒ denied. */
  documents?: DocumentCaller;
  /** Delegation to another Agent [LC-2]; absent ⇒ `agent/delegate` is denied. */
  delegate?: DelegatePort;
  /** Called each time a model call returned (the Worker pool refills after the first) [PF-1]. */
  onModelCallEnded?: () => void;
}

/** One document/extract_text call of a Run (Agent, workspace and runner key bound) [LC-4]. */
export type DocumentCaller = (
  args: Record<string, string | number | boolean | string[]>,
  signal: AbortSignal,
) => Promise<{ ok: true; text: string } | { ok: false; code: ErrorCode }>;

export { answerDigest, argsDigest } from "../protocol/digest.ts";
