/**
 * `session/update` → canonical events [LC-6, EV-1]: the one place that turns
 * what an ACP runner reports into the Run's journal, so the chat and the
 * timeline render an external Turn like a native one.
 *
 * The mapping (docs/acp.md):
 * - the runner's answer is cut into segments at its tool calls; each segment
 *   is one logical "model call" (`model.request.started` … `.finished`, content
 *   free: the runner's model is its own) holding one answer block:
 *   `agent_message_chunk` → `assistant.block.delta` (live), the block
 *   completed at the segment's end; the last block is the Turn's answer;
 * - `agent_thought_chunk` → `assistant.reasoning.delta` (live) and one
 *   `assistant.reasoning.completed` per segment (≤ 32 KiB, `truncated`);
 * - `tool_call` → `tool.call.requested` with tool id `acp/<kind>` and
 *   `{title, kind, locations}`; its `tool_call_update` with a final status →
 *   `tool.call.completed` (`failed` ⇒ `runner_tool_failed`); one tool call is
 *   open at a time (the journal's rule): a new one, text, or the end closes
 *   the open one with the status it reached;
 * - `plan` → a tool call `acp/plan` whose arguments are the entries, opened
 *   and completed at once (deferred while another tool call is open);
 * - everything else (modes, commands, usage …) is counted, not journaled.
 *
 * What this file enforces: every payload fits its schema (text cut on a code
 * point at the schema's bound; an answer block past 16 KiB ends `max_output`);
 * at most CALL_ID_MAX tool calls and USAGE_ROWS_PER_RUN_MAX segments are
 * journaled (more ⇒ `runner_flood`); the Run's live cap ends live deltas
 * silently, never the Run.
 */
import { AppError } from "../errors.ts";
import { CALL_ID_MAX, USAGE_ROWS_PER_RUN_MAX } from "../limits.ts";
import {
  answerDigest,
  argsDigest,
  canonicalJson,
  domainDigest,
  utf8Bytes,
} from "../protocol/digest.ts";
import { clampDurationMs } from "../protocol/events.ts";
import { JournalUnavailable, type RunRecorder, type Terminal } from "../runs/run_recorder.ts";
import { AcpFault } from "./jsonrpc.ts";
import * as z from "zod";

const ANSWER_MAX_BYTES = 16384;
const REASONING_MAX_BYTES = 32768;
const TITLE_MAX_BYTES = 1024;
const TOOL_KINDS = [
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other",
] as const;

// Peer-defined shapes: validated, unknown members dropped, unknown variants tolerated.
const Text = z.object({ type: z.literal("text"), text: z.string() });
const Block = z.object({ type: z.string() }).passthrough();
const Location = z.object({ path: z.string(), line: z.number().int().nullable().optional() });
const Status = z.enum(["pending", "in_progress", "completed", "failed"]);
const ToolFields = {
  toolCallId: z.string().min(1).max(256),
  title: z.string().nullable().optional(),
  kind: z.string().nullable().optional(),
  status: Status.nullable().optional(),
  content: z.array(z.unknown()).nullable().optional(),
  locations: z.array(Location).nullable().optional(),
  rawInput: z.unknown().optional(),
};
export const ToolCallUpdateSchema = z.object(ToolFields);
export type ToolCallUpdate = z.infer<typeof ToolCallUpdateSchema>;
const Update = z.discriminatedUnion("sessionUpdate", [
  z.object({ sessionUpdate: z.literal("agent_message_chunk"), content: Block }),
  z.object({ sessionUpdate: z.literal("agent_thought_chunk"), content: Block }),
  z.object({ sessionUpdate: z.literal("user_message_chunk"), content: Block }),
  z.object({ sessionUpdate: z.literal("tool_call"), ...ToolFields, title: z.string() }),
  z.object({ sessionUpdate: z.literal("tool_call_update"), ...ToolFields }),
  z.object({
    sessionUpdate: z.literal("plan"),
    entries: z.array(z.object({ content: z.string(), status: z.string() })).max(256),
  }),
]);
export const SessionNotificationSchema = z.object({
  sessionId: z.string().min(1).max(256),
  update: z.object({ sessionUpdate: z.string().min(1).max(64) }).passthrough(),
});

/** Cuts `s` to at most `max` UTF-8 bytes on a code point. */
export function cutUtf8(s: string, max: number): { text: string; cut: boolean } {
  if (utf8Bytes(s) <= max) return { text: s, cut: false };
  let out = "";
  let n = 0;
  for (const ch of s) {
    const b = utf8Bytes(ch);
    if (n + b > max) break;
    out += ch;
    n += b;
  }
  return { text: out, cut: true };
}

interface OpenTool {
  callId: string;
  acpId: string;
  toolId: string;
  status: z.infer<typeof Status>;
  title: string;
  content: string;
  /** The runner's raw input of the call, JSON, ≤ 2 KiB (shown on an approval card). */
  input: string;
  started: number;
}

export class AcpEventMap {
  #calls = 0;
  #callOpen = false;
  #callStarted = 0;
  #blockOpen = false;
  #blockText = "";
  #blockFull = false;
  #thought = "";
  #thoughtCut = false;
  #tools = 0;
  #tool: OpenTool | null = null;
  /** ACP tool call ids already closed (a late update is ignored). */
  readonly #closed = new Set<string>();
  #pendingPlan: string[] | null = null;
  /** Live deltas stop once the Run's live cap is reached; the Run goes on. */
  #live = true;

  constructor(
    private readonly recorder: RunRecorder,
    private readonly modelId: string,
    private readonly now: () => number,
  ) {}

  /** The open tool call, if any (an approval or a file access attaches to it). */
  get openTool(): { callId: string; acpId: string; toolId: string; input: string } | null {
    return this.#tool;
  }

  /** One validated `session/update`; throws AcpFault (`runner_flood`) past a bound. */
  apply(update: unknown): void {
    const u = Update.safeParse(update);
    if (!u.success) return; // a kind this client does not render: counted by the caller
    const d = u.data;
    switch (d.sessionUpdate) {
      case "agent_message_chunk": {
        const t = Text.safeParse(d.content);
        if (t.success && t.data.text !== "") this.#text(t.data.text);
        return;
      }
      case "agent_thought_chunk": {
        const t = Text.safeParse(d.content);
        if (t.success && t.data.text !== "") this.#thoughtChunk(t.data.text);
        return;
      }
      case "user_message_chunk":
        return;
      case "tool_call":
        this.toolCall(d);
        return;
      case "tool_call_update":
        this.#toolUpdate(d);
        return;
      case "plan":
        this.#plan(d.entries.map((e) => `[${e.status}] ${e.content}`));
        return;
    }
  }

  #ensureCall(): void {
    if (this.#callOpen) return;
    if (this.#tool) this.#closeTool();
    if (this.#calls >= USAGE_ROWS_PER_RUN_MAX) {
      throw new AcpFault("runner_flood", "segments");
    }
    this.#calls++;
    this.#callOpen = true;
    this.#callStarted = this.now();
    this.recorder.durable("model.request.started", {
      call: this.#calls,
      model_id: this.modelId,
      phase: "tools",
      recovery: 0,
      token_estimate: 0,
      request_bytes: 0,
      digest: domainDigest("agent-builder/acp-segment/v1", `${this.#calls}`),
      collapsed_bundles: 0,
    });
  }

  #text(text: string): void {
    this.#ensureCall();
    if (!this.#blockOpen) {
      this.recorder.durable("assistant.block.started", { block: this.#calls }, undefined, {
        defer: true,
      });
      this.#blockOpen = true;
    }
    if (this.#blockFull) return;
    const room = ANSWER_MAX_BYTES - utf8Bytes(this.#blockText);
    const c = cutUtf8(text, room);
    this.#blockText += c.text;
    if (c.cut) this.#blockFull = true;
    if (c.text !== "") {
      this.#ephemeral("assistant.block.delta", this.#calls, c.text);
    }
  }

  #thoughtChunk(text: string): void {
    this.#ensureCall();
    if (!this.#thoughtCut) {
      const c = cutUtf8(text, REASONING_MAX_BYTES - utf8Bytes(this.#thought));
      this.#thought += c.text;
      if (c.cut) this.#thoughtCut = true;
    }
    this.#ephemeral("assistant.reasoning.delta", this.#calls, cutUtf8(text, 32768).text);
  }

  #ephemeral(
    kind: "assistant.block.delta" | "assistant.reasoning.delta",
    n: number,
    text: string,
  ): void {
    if (!this.#live) return;
    try {
      if (kind === "assistant.block.delta") this.recorder.ephemeral(kind, { block: n, text });
      else this.recorder.ephemeral(kind, { call: n, text });
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== "run_event_limit") throw err;
      this.#live = false;
    }
  }

  /** The open call's `model.response.finished` (a runner reports no usage: zeros, incomplete). */
  #finishCall(outcome: "completed" | "max_output" | "failed"): void {
    this.#callOpen = false;
    this.recorder.durable("model.response.finished", {
      call: this.#calls,
      outcome,
      error_code: null,
      input_tokens: 0,
      output_tokens: 0,
      usage_complete: false,
      elapsed_ms: clampDurationMs(this.now() - this.#callStarted),
      attempts: 0,
    });
  }

  /** Closes the open segment's call (its block stays open when `keepBlock`). */
  #endCall(keepBlock: boolean): void {
    if (!this.#callOpen) return;
    this.#finishCall(this.#blockFull ? "max_output" : "completed");
    if (this.#thought !== "") {
      this.recorder.durable("assistant.reasoning.completed", {
        call: this.#calls,
        text: this.#thought,
        bytes: utf8Bytes(this.#thought),
        truncated: this.#thoughtCut,
      });
    }
    this.#thought = "";
    this.#thoughtCut = false;
    if (this.#blockOpen && !keepBlock) {
      this.recorder.durable("assistant.block.completed", {
        block: this.#calls,
        text: this.#blockText,
        bytes: utf8Bytes(this.#blockText),
        digest: answerDigest(this.#blockText),
        reason: this.#blockFull ? "max_output" : "stop",
      });
      this.#blockOpen = false;
      this.#blockText = "";
      this.#blockFull = false;
    }
  }

  /** Opens a tool call for an ACP tool call (closing the open segment and tool first). */
  toolCall(d: ToolCallUpdate & { title?: string | null }): void {
    if (this.#tool?.acpId === d.toolCallId) return this.#toolUpdate(d);
    if (this.#closed.has(d.toolCallId)) return;
    this.#endCall(false);
    if (this.#tool) this.#closeTool();
    if (this.#tools >= CALL_ID_MAX) throw new AcpFault("runner_flood", "tool calls");
    this.#tools++;
    const kind = (TOOL_KINDS as readonly string[]).includes(d.kind ?? "") ? d.kind! : "other";
    const title = cutUtf8(d.title ?? "", TITLE_MAX_BYTES).text;
    const args: Record<string, string | string[]> = { title, kind };
    const paths = (d.locations ?? []).slice(0, 16).map((l) => cutUtf8(l.path, 1024).text);
    if (paths.length > 0) args.locations = paths;
    this.#open(`acp/${kind}`, d.toolCallId, title, args);
    if (d.rawInput !== undefined) {
      this.#tool!.input = cutUtf8(JSON.stringify(d.rawInput) ?? "", 2048).text;
    }
    this.#toolUpdate(d);
  }

  #open(toolId: string, acpId: string, title: string, args: Record<string, string | string[]>) {
    const callId = `call-${this.#tools}`;
    this.recorder.durable("tool.call.requested", {
      call_id: callId,
      tool_id: toolId,
      args,
      args_digest: argsDigest(args),
    });
    this.#tool = {
      callId,
      acpId,
      toolId,
      status: "pending",
      title,
      content: "",
      input: "",
      started: this.now(),
    };
  }

  #toolUpdate(d: ToolCallUpdate): void {
    const t = this.#tool;
    if (!t || t.acpId !== d.toolCallId) {
      // An update of a call never announced opens it (if it says what it is).
      if (!this.#closed.has(d.toolCallId) && d.title) this.toolCall({ ...d, title: d.title });
      return;
    }
    if (d.title) t.title = cutUtf8(d.title, TITLE_MAX_BYTES).text;
    if (d.content) t.content = cutUtf8(contentText(d.content), 4096).text;
    if (d.status) t.status = d.status;
    if (t.status === "completed" || t.status === "failed") this.#closeTool();
  }

  #closeTool(): void {
    const t = this.#tool;
    if (!t) return;
    this.#tool = null;
    this.#closed.add(t.acpId);
    const failed = t.status !== "completed";
    const result = canonicalJson({ status: t.status, title: t.title, content: t.content });
    this.recorder.durable("tool.call.completed", {
      call_id: t.callId,
      tool_id: t.toolId,
      outcome: failed ? "error" : "ok",
      code: failed ? "runner_tool_failed" : null,
      result,
      result_bytes: utf8Bytes(result),
      result_digest: domainDigest("agent-builder/tool-result/v1", result),
      projection: failed ? "error" : "inline",
      elapsed_ms: clampDurationMs(this.now() - t.started),
    });
    if (this.#pendingPlan) {
      const p = this.#pendingPlan;
      this.#pendingPlan = null;
      this.#plan(p);
    }
  }

  #plan(entries: string[]): void {
    if (this.#tool) {
      this.#pendingPlan = entries;
      return;
    }
    this.#endCall(false);
    if (this.#tools >= CALL_ID_MAX) throw new AcpFault("runner_flood", "tool calls");
    this.#tools++;
    const shown = entries.slice(0, 64).map((e) => cutUtf8(e, 1024).text);
    this.#open("acp/plan", `plan-${this.#tools}`, "plan", { entries: shown });
    this.#tool!.status = "completed";
    this.#tool!.content = cutUtf8(shown.join("\n"), 4096).text;
    this.#closeTool();
  }

  /**
   * A tool call of the product itself inside the Turn (a file access with no runner tool
   * call open): opened here, closed by `closeOwn`.
   */
  openOwn(toolId: string, args: Record<string, string | string[]>): string {
    this.#endCall(false);
    if (this.#tool) this.#closeTool();
    if (this.#tools >= CALL_ID_MAX) throw new AcpFault("runner_flood", "tool calls");
    this.#tools++;
    this.#open(toolId, `own-${this.#tools}`, toolId, args);
    return this.#tool!.callId;
  }

  closeOwn(callId: string, ok: boolean, content: string): void {
    const t = this.#tool;
    if (!t || t.callId !== callId) return;
    t.status = ok ? "completed" : "failed";
    t.content = cutUtf8(content, 4096).text;
    this.#closeTool();
  }

  /** The completed terminal: closes what is open; the last block is the answer. */
  completed(reason: "stop" | "max_output"): Terminal {
    if (this.#tool) this.#closeTool();
    if (this.#pendingPlan) {
      const p = this.#pendingPlan;
      this.#pendingPlan = null;
      this.#plan(p);
    }
    if (!this.#callOpen && !this.#blockOpen) {
      // The answer needs a segment of its own (the Turn ended on a tool call, or said nothing).
      this.#ensureCall();
    }
    this.#endCall(true);
    const full = this.#blockFull;
    return {
      state: "completed",
      answer: {
        block: this.#calls,
        text: this.#blockText,
        reason: full || reason === "max_output" ? "max_output" : "stop",
      },
      modelCalls: this.#calls,
      toolCalls: this.#tools,
      blockOpen: this.#blockOpen,
    };
  }

  /** Before a failed or cancelled terminal: close the open pairs (partial text stays visible). */
  closeForFailure(): void {
    try {
      if (this.#tool) this.#closeTool();
      if (this.#callOpen) this.#finishCall("failed");
    } catch (err) {
      // A closed or full journal: the terminal says what happened.
      if (!(err instanceof AppError) && !(err instanceof JournalUnavailable)) throw err;
    }
  }
}

/** The text parts of ACP tool-call content (diffs as their path; terminals omitted). */
function contentText(content: unknown[]): string {
  const out: string[] = [];
  for (const c of content.slice(0, 64)) {
    const o = c as Record<string, unknown>;
    if (o?.type === "content") {
      const t = Text.safeParse(o.content);
      if (t.success) out.push(t.data.text);
    } else if (o?.type === "diff" && typeof o.path === "string") {
      out.push(`diff: ${o.path}`);
    }
  }
  return out.join("\n");
}
