/**
 * One Turn of an Agent bound to an external ACP runner [LC-6]: the runner
 * process (reused per Conversation), a fresh `session/new` per Turn (cwd = the
 * Agent's workspace, the scoped MCP gateway with this Run's token), one
 * `session/prompt`, and everything the runner asks of the product meanwhile.
 *
 * What this file enforces:
 * - the runner's requests and updates are applied one at a time, in arrival
 *   order (an approval waits with the journal untouched by later updates);
 *   updates are counted as they arrive: past ACP_UPDATES_PER_RUN_MAX the Turn
 *   ends `runner_flood`;
 * - `session/request_permission` becomes the product's approval card: a
 *   pending `permissions` row and `permission.requested` (≤
 *   PERMISSIONS_PENDING_MAX per Agent), decided by the operator; the Run's
 *   cancel or deadline answers it with a reject (never an allow);
 * - `fs/read_text_file` / `fs/write_text_file`: an absolute path inside the
 *   Agent's workspace only (else `runner_path_refused`), then the [TL-4]
 *   reader (descriptor-anchored, text rules, 1 MiB) and the [TL-6] writer
 *   (this Run's read receipt, exact diff preview, approval unless the Agent's
 *   policy allows `file/write`, generation re-check at commit); a tool the
 *   policy denies is refused; terminals are not offered;
 * - every access writes one audit-lite row (method, resource, decision, code);
 * - cancel sends `session/cancel`, waits at most CANCEL_GRACE_MS for the
 *   prompt's answer, then the process is reaped; a crash, a protocol error, a
 *   flood or a silent runner ends the Turn with its fixed code and the process
 *   is reaped; only a cleanly completed Turn returns its process to the pool.
 */
import * as z from "zod";
import { escapeName } from "../display_name.ts";
import { AppError, type ErrorCode } from "../errors.ts";
import type { HistoryBundle } from "../context/plan.ts";
import {
  ACP_HISTORY_MAX_BYTES,
  ACP_UPDATES_PER_RUN_MAX,
  CANCEL_GRACE_MS,
  CHECKPOINT_AGENT_MAX_BYTES,
  PERMISSIONS_PENDING_MAX,
} from "../limits.ts";
import type { Logger } from "../log.ts";
import { errorName } from "../log.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { JournalUnavailable, type RunRecorder, type Terminal } from "../runs/run_recorder.ts";
import type { AbortReason } from "../runs/run_terminal.ts";
import { commitApproved, prepareMutation } from "../runs/tool_exec.ts";
import type { ApprovalContext } from "../runs/turn_context.ts";
import type { DatabaseSync } from "../store/sqlite.ts";
import { countPendingPermissions, insertPermission } from "../store/run_store.ts";
import { recordCheckpoints } from "../store/checkpoint_store.ts";
import { insertRunnerAccess, type RunnerDecision } from "../store/runner_access_store.ts";
import type { ReadReceipt } from "../tools/file_read_text.ts";
import { fileToolPool } from "../tools/file_tool_pool.ts";
import { READ_WHOLE_TEXT, readWholeText } from "../tools/read_tools.ts";
import { previewOf } from "../tools/mutation_plan.ts";
import { canonicalPath } from "../tools/path.ts";
import { callFacts, type EffectiveToolSet } from "../tools/policy.ts";
import { domainDigest as hexDigest } from "../tools/text.ts";
import {
  AcpEventMap,
  cutUtf8,
  SessionNotificationSchema,
  ToolCallUpdateSchema,
} from "./event_map.ts";
import { AcpFault, RPC, RpcError } from "./jsonrpc.ts";
import type { RunnerPool } from "./pool.ts";
import { RunnerProcess, type TurnPort } from "./process.ts";
import type { RunnerSpec } from "./runners.ts";
import type { ScopedGateway } from "./gateway.ts";

/** What every ACP Turn of a service shares. */
export interface AcpDeps {
  runners: ReadonlyMap<string, RunnerSpec>;
  pool: RunnerPool;
  gateway: ScopedGateway;
  log: Logger;
  now: () => number;
}

/** One admitted Run of a runner-bound Agent. */
export interface AcpTurnInput {
  runner: string;
  agentId: string;
  conversationId: string;
  runId: string;
  workspaceDir: string;
  message: string;
  history: readonly HistoryBundle[];
  recorder: RunRecorder;
  db: DatabaseSync;
  deadline: number;
  signal: AbortSignal;
  abortReason(): AbortReason | null;
  approvals: ApprovalContext;
  toolset: EffectiveToolSet;
}

const ReadParams = z.object({
  sessionId: z.string(),
  path: z.string().max(4096),
  line: z.number().int().min(1).nullable().optional(),
  limit: z.number().int().min(1).nullable().optional(),
});
const WriteParams = z.object({
  sessionId: z.string(),
  path: z.string().max(4096),
  content: z.string(),
});
const PermissionParams = z.object({
  sessionId: z.string(),
  toolCall: ToolCallUpdateSchema,
  options: z.array(z.object({
    optionId: z.string().min(1).max(256),
    name: z.string().max(256),
    kind: z.string().max(32),
  })).min(1).max(16),
});
const PromptResult = z.object({ stopReason: z.string().max(64) });

/** An absolute path inside `workspaceDir` → its canonical workspace-relative path, or null. */
export function workspaceRelative(workspaceDir: string, abs: string): string | null {
  if (!abs.startsWith(workspaceDir + "/")) return null;
  const c = canonicalPath(abs.slice(workspaceDir.length + 1));
  return c.ok ? c.path : null;
}

/** Earlier completed Turns of the Conversation, newest kept, as a prompt prefix. */
export function historyPrefix(history: readonly HistoryBundle[]): string {
  const parts: string[] = [];
  let bytes = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const h = history[i];
    const part = `User: ${h.user}\n\nAssistant: ${h.assistant}\n\n`;
    bytes += utf8Bytes(part);
    if (bytes > ACP_HISTORY_MAX_BYTES) break;
    parts.unshift(part);
  }
  if (parts.length === 0) return "";
  return "Earlier in this conversation (kept by Agent Builder):\n\n" + parts.join("") +
    "---\n\n";
}

export async function driveAcpTurn(deps: AcpDeps, x: AcpTurnInput): Promise<Terminal> {
  const spec = deps.runners.get(x.runner);
  if (!spec) return { state: "failed", code: "runner_unknown", stage: "worker" };
  const map = new AcpEventMap(x.recorder, `acp:${x.runner}`, deps.now);
  const key = `${x.agentId}/${x.conversationId}/${x.runner}`;
  let proc = deps.pool.take(key);
  let healthy = false;
  let token: string | null = null;
  const turn = new TurnState(deps, x, map);
  try {
    if (!proc) {
      proc = await RunnerProcess.start(spec, x.workspaceDir, deps.log, x.signal);
      deps.pool.use(proc);
    }
    if (x.signal.aborted) return turn.aborted();
    const mcpServers: unknown[] = [];
    if (proc.mcpHttp) {
      const g = await deps.gateway.issue({
        runId: x.runId,
        agentId: x.agentId,
        runner: x.runner,
        expiresAt: x.deadline,
        workspaceDir: x.workspaceDir,
        toolset: x.toolset,
        db: x.db,
        receipts: x.approvals.receipts,
        policy: x.approvals.policy,
      });
      token = g.token;
      mcpServers.push({
        type: "http",
        name: "agent-builder",
        url: g.url,
        headers: [{ name: "Authorization", value: `Bearer ${g.token}` }],
      });
    }
    const sessionId = await proc.newSession(x.workspaceDir, mcpServers, x.signal);
    turn.sessionId = sessionId;
    const p = proc;
    turn.kill = (f) => p.conn.close(f);
    proc.attach(turn);
    const text = historyPrefix(x.history) + x.message;
    const prompt = proc.conn.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    const ended = proc.conn.ended.then((f) => ({ kind: "fault" as const, fault: f }));
    const aborted = new Promise<{ kind: "abort" }>((res) => {
      if (x.signal.aborted) res({ kind: "abort" });
      x.signal.addEventListener("abort", () => res({ kind: "abort" }), { once: true });
    });
    const answered = prompt.then(
      (r) => ({ kind: "answer" as const, r }),
      (err) => ({ kind: "error" as const, err }),
    );
    const first = await Promise.race([answered, ended, aborted]);
    if (first.kind === "abort") {
      // [LC-6] cancel → session/cancel, a bounded wait for the prompt's answer, then the reap.
      proc.conn.notify("session/cancel", { sessionId });
      let t: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        answered,
        ended,
        new Promise((r) => (t = setTimeout(r, CANCEL_GRACE_MS))),
      ]);
      clearTimeout(t);
      await turn.idle();
      return turn.aborted();
    }
    // Apply whatever was queued before the answer, in order.
    await turn.idle();
    if (turn.failure) return turn.failed(turn.failure.code, turn.failure.stage);
    if (first.kind === "fault") return turn.failed(first.fault.code, "worker");
    if (first.kind === "error") {
      const e = first.err;
      if (e instanceof AcpFault) return turn.failed(e.code, "worker");
      if (e instanceof RpcError) return turn.failed("runner_error", "worker");
      throw e;
    }
    const r = PromptResult.safeParse(first.r);
    if (!r.success) return turn.failed("runner_protocol_error", "worker");
    const terminal = map.completed(r.data.stopReason === "max_tokens" ? "max_output" : "stop");
    healthy = true;
    return terminal;
  } catch (err) {
    if (x.signal.aborted) return turn.aborted();
    if (err instanceof AcpFault) return turn.failed(err.code, "worker");
    if (err instanceof RpcError) return turn.failed("runner_error", "worker");
    if (err instanceof JournalUnavailable) return turn.failed("journal_unavailable", "journal");
    if (err instanceof AppError) return turn.failed(err.code, "worker");
    deps.log.error("acp.turn_failed", { kind: errorName(err) });
    return turn.failed("internal_error", "worker");
  } finally {
    turn.closed = true;
    if (token) deps.gateway.revoke(token);
    if (proc) await deps.pool.release(key, proc, healthy && proc.alive);
  }
}

/** The Turn as its runner sees it: the TurnPort, one queue, the failure it ended with. */
class TurnState implements TurnPort {
  sessionId = "";
  closed = false;
  failure: { code: ErrorCode; stage: "worker" | "journal" } | null = null;
  /** Ends the runner's connection (set once the process is known). */
  kill: (f: AcpFault) => void = () => undefined;
  #queue: Promise<void> = Promise.resolve();
  #updates = 0;

  constructor(
    private readonly deps: AcpDeps,
    private readonly x: AcpTurnInput,
    private readonly map: AcpEventMap,
  ) {}

  /** Resolves once everything queued so far was applied. */
  idle(): Promise<void> {
    return this.#queue;
  }

  aborted(): Terminal {
    this.map.closeForFailure();
    const r = this.x.abortReason() ?? "user";
    return r === "deadline"
      ? { state: "failed", code: "model_turn_deadline", stage: "model" }
      : { state: "cancelled", reason: r };
  }

  failed(code: ErrorCode, stage: "worker" | "journal"): Terminal {
    if (this.x.signal.aborted && this.x.abortReason() !== null) return this.aborted();
    this.map.closeForFailure();
    return { state: "failed", code, stage };
  }

  #fail(err: unknown): never {
    const f = err instanceof AcpFault
      ? { code: err.code, stage: "worker" as const }
      : err instanceof JournalUnavailable
      ? { code: "journal_unavailable" as const, stage: "journal" as const }
      : err instanceof AppError
      ? {
        code: err.code,
        stage: err.code === "run_event_limit" ? "journal" as const : "worker" as const,
      }
      : null;
    if (!f) {
      this.deps.log.error("acp.apply_failed", { kind: errorName(err) });
    }
    this.failure ??= f ?? { code: "internal_error", stage: "worker" };
    const fault = new AcpFault(this.failure.code, "turn failed");
    this.kill(fault);
    throw fault;
  }

  #enqueue<T>(task: () => Promise<T> | T): Promise<T> {
    const run = this.#queue.then(async () => {
      if (this.closed || this.failure) throw new AcpFault("runner_protocol_error", "turn over");
      try {
        return await task();
      } catch (err) {
        if (err instanceof RpcError) throw err;
        this.#fail(err);
      }
    });
    this.#queue = run.then(() => undefined, () => undefined);
    return run;
  }

  notification(method: string, params: unknown): void {
    if (method !== "session/update") return;
    // Counted on arrival: the queue never holds more than the bound.
    if (++this.#updates > ACP_UPDATES_PER_RUN_MAX) {
      this.failure ??= { code: "runner_flood", stage: "worker" };
      throw new AcpFault("runner_flood", "updates");
    }
    const n = SessionNotificationSchema.safeParse(params);
    if (!n.success) throw new AcpFault("runner_protocol_error", "session/update params");
    if (n.data.sessionId !== this.sessionId) return;
    void this.#enqueue(() => this.map.apply(n.data.update)).catch(() => undefined);
  }

  request(method: string, params: unknown): Promise<unknown> {
    switch (method) {
      case "session/request_permission":
        return this.#enqueue(() => this.#permission(params));
      case "fs/read_text_file":
        return this.#enqueue(() => this.#read(params));
      case "fs/write_text_file":
        return this.#enqueue(() => this.#write(params));
      default:
        // Terminals and anything else are not offered [LC-6].
        this.#audit(method, "", "refused", "tool_denied", null);
        return Promise.reject(new RpcError(RPC.methodNotFound, "Method not found"));
    }
  }

  #audit(
    method: string,
    resource: string,
    decision: RunnerDecision,
    code: string | null,
    callId: string | null,
  ): void {
    insertRunnerAccess(this.x.db, {
      runId: this.x.runId,
      runner: this.x.runner,
      callId,
      method,
      resource,
      decision,
      code,
      now: this.deps.now(),
    });
  }

  #refuse(method: string, resource: string, code: ErrorCode, callId: string | null): never {
    this.#audit(method, resource, "refused", code, callId);
    throw new RpcError(RPC.refused, code);
  }

  #session(id: string): void {
    if (id !== this.sessionId) throw new RpcError(RPC.invalidParams, "unknown session");
  }

  /**
   * The Agent's decision for this access as its policy is now [TL-9] (path-scoped rules
   * included); null ⇒ denied (the tool is not in the Run's toolset, or a rule denies the path).
   */
  #decisionOf(toolId: string, rel: string): "allow" | "ask" | null {
    const tool = this.x.toolset.tools.find((t) => t.spec.id === toolId);
    if (!tool) return null;
    const policy = this.x.approvals.policy;
    if (!policy) return tool.decision;
    const d = policy(callFacts(tool.spec, { path: rel })).decision;
    return d === "deny" ? null : d;
  }

  /** The operator decides; cancel, deadline and shutdown answer "aborted". */
  async #ask(callId: string, toolId: string, preview: string, planDigest: string) {
    const { db, recorder, approvals: a } = this.x;
    if (countPendingPermissions(db) >= PERMISSIONS_PENDING_MAX) return "deny" as const;
    const permissionId = crypto.randomUUID();
    recorder.durable("permission.requested", {
      permission_id: permissionId,
      call_id: callId,
      tool_id: toolId,
      preview,
      plan_digest: planDigest,
    }, () =>
      insertPermission(db, {
        id: permissionId,
        runId: this.x.runId,
        callId,
        toolId,
        preview,
        now: this.deps.now(),
      }));
    const d = await a.approvals.wait(a.agentId, permissionId, this.x.signal);
    recorder.durable("permission.decided", {
      permission_id: permissionId,
      call_id: callId,
      decision: d === "aborted" ? "expired" : d,
    });
    return d;
  }

  async #permission(params: unknown): Promise<unknown> {
    const method = "session/request_permission";
    const p = PermissionParams.safeParse(params);
    if (!p.success) throw new RpcError(RPC.invalidParams, "Invalid params");
    this.#session(p.data.sessionId);
    const tc = p.data.toolCall;
    const title = cutUtf8(tc.title ?? "permission", 1024).text;
    if (this.map.openTool?.acpId !== tc.toolCallId) this.map.toolCall({ ...tc, title });
    const open = this.map.openTool ?? null;
    const callId = open?.callId ?? this.map.openOwn("acp/other", { title, kind: "other" });
    const toolId = open?.toolId ?? "acp/other";
    const opts = p.data.options;
    const pick = (kinds: string[]) =>
      kinds.map((k) => opts.find((o) => o.kind === k)).find((o) => o !== undefined);
    const reject = pick(["reject_once", "reject_always"]);
    const allow = pick(["allow_once", "allow_always"]);
    const rejected = reject
      ? { outcome: { outcome: "selected", optionId: reject.optionId } }
      : { outcome: { outcome: "cancelled" } };
    const input = tc.rawInput !== undefined
      ? cutUtf8(JSON.stringify(tc.rawInput) ?? "", 2048).text
      : open?.input ?? "";
    const shown = [
      `Runner: ${this.x.runner} (operator-owned execution, not sandboxed by Agent Builder)`,
      `Tool: ${title}`,
      `Kind: ${tc.kind ?? "other"}`,
      ...(tc.locations ?? []).slice(0, 8).map((l) => `Location: ${l.path}`),
      `Options: ${opts.map((o) => `${o.name} (${o.kind})`).join(", ")}`,
      ...(input ? [`Input: ${input}`] : []),
    ].map(escapeName).join("\n") + "\n";
    const preview = previewOf(shown);
    const digest = hexDigest(
      "agent-builder/acp-permission/v1",
      canonicalJson([this.x.runId, callId, tc.toolCallId, shown]),
    );
    const d = await this.#ask(callId, toolId, preview, digest);
    const decision: RunnerDecision = d === "approve" && allow
      ? "approved"
      : d === "aborted"
      ? "expired"
      : "denied";
    this.#audit(method, title, decision, decision === "approved" ? null : "tool_denied", callId);
    if (decision === "approved") {
      return { outcome: { outcome: "selected", optionId: allow!.optionId } };
    }
    return rejected;
  }

  /** The whole file through the [TL-4] reader (windows of ≤ 4 KiB), with its receipt. */
  #readAll(rel: string): { ok: true; text: string; receipt: ReadReceipt } | {
    ok: false;
    code: ErrorCode;
  } {
    return readWholeText(this.x.workspaceDir, rel);
  }

  /** The same read in a file-tool process [PF-2]: the loop only awaits the answer. */
  async #readAllOffLoop(rel: string): Promise<
    { ok: true; text: string; receipt: ReadReceipt } | { ok: false; code: ErrorCode }
  > {
    const r = await fileToolPool.run(
      READ_WHOLE_TEXT,
      this.x.workspaceDir,
      { path: rel },
      Number.MAX_SAFE_INTEGER,
    );
    if (r.ok && !r.receipt) return { ok: false, code: "file_tool_failed" };
    return r as { ok: true; text: string; receipt: ReadReceipt } | { ok: false; code: ErrorCode };
  }

  async #read(params: unknown): Promise<unknown> {
    const method = "fs/read_text_file";
    const p = ReadParams.safeParse(params);
    if (!p.success) throw new RpcError(RPC.invalidParams, "Invalid params");
    this.#session(p.data.sessionId);
    const rel = workspaceRelative(this.x.workspaceDir, p.data.path);
    const callIdNow = this.map.openTool?.callId ?? null;
    if (rel === null) this.#refuse(method, p.data.path, "runner_path_refused", callIdNow);
    if (this.#decisionOf("file/read_text", rel) !== "allow") {
      this.#refuse(method, rel, "tool_denied", callIdNow);
    }
    const own = this.map.openTool ? null : this.map.openOwn("file/read_text", { path: rel });
    const r = await this.#readAllOffLoop(rel);
    if (!r.ok) {
      if (own) this.map.closeOwn(own, false, canonicalJson({ error: r.code }));
      this.#refuse(method, rel, r.code, own ?? callIdNow);
    }
    this.x.approvals.receipts.set(r.receipt.path, r.receipt);
    let text = r.text;
    if (p.data.line != null || p.data.limit != null) {
      const start = (p.data.line ?? 1) - 1;
      const lines = text.split("\n");
      text = lines.slice(start, p.data.limit != null ? start + p.data.limit : undefined).join("\n");
    }
    if (own) {
      this.map.closeOwn(
        own,
        true,
        canonicalJson({
          path: rel,
          bytes: utf8Bytes(r.text),
          content_digest: r.receipt.content_digest,
        }),
      );
    }
    this.#audit(method, rel, "allowed", null, own ?? callIdNow);
    return { content: text };
  }

  async #write(params: unknown): Promise<unknown> {
    const method = "fs/write_text_file";
    const p = WriteParams.safeParse(params);
    if (!p.success) throw new RpcError(RPC.invalidParams, "Invalid params");
    this.#session(p.data.sessionId);
    const rel = workspaceRelative(this.x.workspaceDir, p.data.path);
    const callIdNow = this.map.openTool?.callId ?? null;
    if (rel === null) this.#refuse(method, p.data.path, "runner_path_refused", callIdNow);
    const decision = this.#decisionOf("file/write", rel);
    if (decision === null) this.#refuse(method, rel, "tool_denied", callIdNow);
    const own = this.map.openTool
      ? null
      : this.map.openOwn("file/write", { path: rel, bytes: String(utf8Bytes(p.data.content)) });
    const callId = own ?? callIdNow!;
    const end = (ok: boolean, body: unknown) =>
      own && this.map.closeOwn(own, ok, canonicalJson(body));
    const a = this.x.approvals;
    const binding = {
      agent_id: a.agentId,
      generation: a.generation,
      run_id: this.x.runId,
      call_id: callId,
    };
    const args = { path: rel, content: p.data.content };
    const prep = prepareMutation(
      "file/write",
      this.x.workspaceDir,
      args,
      a.receipts.get(rel) ?? null,
      binding,
    );
    if (!prep.ok) {
      end(false, { error: prep.code });
      this.#refuse(method, rel, prep.code, callId);
    }
    let approved: RunnerDecision = "allowed";
    if (decision === "ask") {
      const d = await this.#ask(callId, "file/write", prep.preview, prep.plan.plan_digest);
      if (d !== "approve") {
        end(false, { error: "tool_denied" });
        this.#audit(method, rel, d === "aborted" ? "expired" : "denied", "tool_denied", callId);
        throw new RpcError(RPC.refused, "tool_denied");
      }
      approved = "approved";
    }
    if (!a.generationCurrent()) {
      end(false, { error: "approval_stale" });
      this.#refuse(method, rel, "approval_stale", callId);
    }
    // [TL-11] what the write replaced, kept like any Turn's file/write for a rewind.
    const c = commitApproved(
      this.x.workspaceDir,
      prep.plan,
      binding,
      (cp) =>
        recordCheckpoints(this.x.db, {
          runId: this.x.runId,
          callId,
          toolId: "file/write",
          entries: [cp],
          maxBytes: a.checkpointMaxBytes ?? CHECKPOINT_AGENT_MAX_BYTES,
          now: Date.now(),
        }),
    );
    if (!c.ok) {
      end(false, { error: c.code });
      this.#refuse(method, rel, c.code, callId);
    }
    // The runner wrote this content itself: a fresh receipt lets it write the file again.
    const again = this.#readAll(rel);
    if (again.ok) a.receipts.set(again.receipt.path, again.receipt);
    end(true, JSON.parse(c.text));
    this.#audit(method, rel, approved, null, callId);
    return {};
  }
}
