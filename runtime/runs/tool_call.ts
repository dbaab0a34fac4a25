/**
 * One tool call of a Run, executed by the Control Plane [TL-1..4, TL-6, TL-8].
 *
 * What this file enforces:
 * - arguments are validated against the ToolSpec here (they never crossed
 *   the IPC); an invalid call is a tool error the model sees, never executed;
 * - the operation ledger records intent (with the `tool.call.requested`
 *   event) → dispatched (executor identity) → outcome (with
 *   `tool.call.completed`), each step in its own transaction, so a crash
 *   leaves a `dispatched` row that recovery turns into `outcome_unknown`;
 * - `allow` read tools run directly; `ask` mutation tools run only after an
 *   approval: the plan (exact diff preview, bound to Agent generation, Run,
 *   call id, path identity and digests) is persisted as a pending permission,
 *   the Run waits for the browser's decision (or its own cancel/deadline), and
 *   the commit re-checks the Agent generation; anything else is `tool_denied`;
 * - each call is decided on the Agent's policy as it is at that moment
 *   [TL-9]: a platform deny or an Agent deny refuses it (`tool_denied`), an
 *   Agent allow runs it without asking (same plan, binding and commit as an
 *   approved one), `ask` waits for the operator; a path that is not canonical
 *   is refused with the tool's own code before any decision; exec/apply is
 *   decided on its planned paths;
 * - an approval carries the narrowed "Always allow" rule and the full diff
 *   (≤ 256 KiB), fixed when it is asked [TL-10, TL-12];
 * - at most PERMISSIONS_PENDING_MAX approvals are pending per Agent;
 * - the model sees the [TL-3] projection of the canonical result.
 */
import { AppError, type ErrorCode } from "../errors.ts";
import {
  CHECKPOINT_AGENT_MAX_BYTES,
  OPERATION_LEDGER_ROWS_MAX,
  PERMISSIONS_PENDING_MAX,
} from "../limits.ts";
import { type CheckpointInput, recordCheckpoints } from "../store/checkpoint_store.ts";
import { canonicalJson, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import {
  countPendingPermissions,
  expirePermissions,
  insertPermission,
  operationDispatched,
  operationIntent,
  operationOutcome,
  operationRefused,
  trimOperations,
} from "../store/run_store.ts";
import { validateToolArgs } from "../tools/policy.ts";
import { type ProjectionBudget, projectToolResult } from "../tools/projection.ts";
import {
  commitApproved,
  executeReadToolOffLoop,
  MUTATION_TOOL_EXECUTORS,
  prepareMutation,
  READ_TOOL_EXECUTORS,
  type ToolExecResult,
} from "./tool_exec.ts";
import type { TurnContext } from "./turn_context.ts";
import { EXEC_TOOL_EXECUTORS, prepareExecTool } from "../exec/exec_tools.ts";
import { readTaskTool, TASK_TOOL_EXECUTORS } from "../tasks/task_tools.ts";
import type { ReadReceipt } from "../tools/file_read_text.ts";
import type { MutationBinding } from "../tools/mutation_plan.ts";
import type { ToolArgs } from "../tools/policy.ts";
import { escapeName } from "../display_name.ts";
import { parseMcpToolId } from "../extensions/tool_map.ts";
import { parseSkillToolId } from "../skills/manifest.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import { DOCUMENT_EXECUTOR, DOCUMENT_TOOL_ID } from "../documents/documents.ts";
import { keptFullDiff, previewOf } from "../tools/mutation_plan.ts";
import { alwaysAllowRule, callFacts, type Decided } from "../tools/policy.ts";
import { domainDigest as hexDigest } from "../tools/text.ts";

type Gated =
  | {
    ok: true;
    preview: string;
    planDigest: string;
    executor: string;
    commit(): Promise<ToolExecResult> | ToolExecResult;
    /** The whole diff kept one click away (≤ 256 KiB), null when none is kept [TL-12]. */
    fullDiff?: string | null;
    /** exec/apply: the planned paths the policy decides on [TL-9]. */
    paths?: string[];
  }
  | { ok: false; code: ErrorCode };

function gatedMutation(
  toolId: string,
  workspaceDir: string,
  args: ToolArgs,
  receipt: ReadReceipt | undefined,
  binding: MutationBinding,
  checkpoint: (c: CheckpointInput) => void,
): Gated {
  const prep = prepareMutation(toolId, workspaceDir, args, receipt ?? null, binding);
  if (!prep.ok) return prep;
  return {
    ok: true,
    preview: prep.preview,
    fullDiff: keptFullDiff(prep.diff),
    planDigest: prep.plan.plan_digest,
    executor: MUTATION_TOOL_EXECUTORS[toolId],
    commit: () => commitApproved(workspaceDir, prep.plan, binding, checkpoint),
  };
}

/** A read tool the policy says `ask` for [TL-9]: the call is shown, then run as usual. */
function gatedRead(ctx: TurnContext, spec: ToolSpec, args: ToolArgs, callId: string): Gated {
  const shown = JSON.stringify(args, null, 2).split("\n").map(escapeName).join("\n");
  return {
    ok: true,
    preview: previewOf(`${spec.id}\nArguments:\n${shown}\n`),
    planDigest: hexDigest("agent-builder/read-call/v1", canonicalJson([callId, spec.id, args])),
    executor: READ_TOOL_EXECUTORS[spec.id],
    commit: async () => {
      const r = await executeReadToolOffLoop(spec, ctx.workspaceDir, args);
      if (r.ok && r.receipt) ctx.approvals?.receipts.set(r.receipt.path, r.receipt);
      return r;
    },
  };
}

function gatedExec(ctx: TurnContext, toolId: string, args: ToolArgs, callId: string): Gated {
  let live = true;
  const r = prepareExecTool(ctx.exec!, toolId, args, {
    callId,
    signal: ctx.signal,
    tasks: ctx.tasks,
    // Live output is ephemeral [EX-4]; once the Run's live record is full it stops.
    emit: (d) => {
      if (!live) return;
      try {
        ctx.recorder.ephemeral("tool.output.delta", { call_id: callId, ...d });
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== "run_event_limit") throw err;
        live = false;
      }
    },
  });
  return r.ok ? { ok: true, ...r.gated } : r;
}
import type { Pending } from "./turn_state.ts";

/** An MCP call behind its approval [LC-5]: server, tool and the full arguments are shown. */
function gatedMcp(ctx: TurnContext, toolId: string, args: ToolArgs, callId: string): Gated {
  const id = parseMcpToolId(toolId);
  const mcp = ctx.mcp;
  if (!id || !mcp) return { ok: false, code: "tool_denied" };
  // JSON escapes controls inside strings; the escaping makes bidi/invisible ones visible too.
  // Line by line: the layout's own newlines stay newlines.
  const shown = JSON.stringify(args, null, 2).split("\n").map(escapeName).join("\n");
  return {
    ok: true,
    preview: previewOf(
      `MCP server: ${id.server}\nTool: ${id.tool}\nExecutor: ${mcp.executorOf(toolId)}\n` +
        `Arguments:\n${shown}\n`,
    ),
    planDigest: hexDigest(
      "agent-builder/mcp-call/v1",
      canonicalJson([callId, toolId, args]),
    ),
    executor: mcp.executorOf(toolId),
    commit: () => mcp.call(toolId, args, ctx.signal),
  };
}

/**
 * A skill call behind its approval [LC-3]: the skill, its script and archive
 * digest, where it runs, and the full arguments (its stdin). The plan binds
 * call id, tool id, the archive digest and the arguments; the commit runs only
 * the skill stored with that digest.
 */
function gatedSkill(ctx: TurnContext, spec: ToolSpec, args: ToolArgs, callId: string): Gated {
  const skills = ctx.skills;
  const agentId = ctx.approvals?.agentId;
  if (!skills || agentId === undefined) return { ok: false, code: "tool_denied" };
  const plan = skills.planCall(agentId, spec.id, spec);
  if (plan === null) return { ok: false, code: "skill_not_found" };
  const shown = JSON.stringify(args, null, 2).split("\n").map(escapeName).join("\n");
  const executor = `skill/${plan.name}@sha256:${plan.digest}`;
  return {
    ok: true,
    preview: previewOf(
      `Skill: ${plan.name}\nScript: ${plan.entry} (archive sha256 ${plan.digest})\n` +
        `Runs in the runner sandbox: its own files read-only, one output directory, ` +
        `no workspace, no network.\nArguments (its stdin):\n${shown}\n`,
    ),
    planDigest: hexDigest(
      "agent-builder/skill-call/v1",
      canonicalJson([callId, spec.id, plan.digest, args]),
    ),
    executor,
    commit: () => skills.call(agentId, plan, args, `${agentId}/${ctx.snapshot.run_id}`, ctx.signal),
  };
}

/** A delegation behind its approval [LC-2]: refused before asking when it cannot start. */
function gatedDelegate(ctx: TurnContext, args: ToolArgs, callId: string): Gated {
  const port = ctx.delegate!;
  const refusal = port.check(args);
  if (refusal !== null) return { ok: false, code: refusal };
  return {
    ok: true,
    preview: previewOf(port.preview(args)),
    planDigest: hexDigest("agent-builder/delegate-call/v1", canonicalJson([callId, args])),
    executor: "control-plane/agent_delegate/v1",
    commit: () => port.run(args, callId, ctx.signal, ctx.recorder),
  };
}

/** `digest`/`bytes` describe the canonical result (what a collapse receipt names). */
export type ToolRun =
  | { ok: true; digest: string; bytes: number; projection: string; fatal: ErrorCode | null }
  | {
    ok: false;
    code: ErrorCode;
    digest: string;
    bytes: number;
    projection: string;
    fatal: ErrorCode | null;
  };

export async function runToolCall(
  ctx: TurnContext,
  p: Pending,
  budget: ProjectionBudget,
): Promise<ToolRun> {
  const { db, recorder, now } = ctx;
  const runId = ctx.snapshot.run_id;
  const tool = ctx.plan.toolset.tools.find((t) => t.spec.id === p.ref.tool_id);
  const check = tool ? validateToolArgs(tool.spec, p.call.arguments) : { ok: false as const };
  const opId = crypto.randomUUID();
  recorder.durable("tool.call.requested", {
    call_id: p.ref.call_id,
    tool_id: p.ref.tool_id,
    args: check.ok ? check.args : {},
    args_digest: p.ref.args_digest,
  }, () => {
    trimOperations(db, OPERATION_LEDGER_ROWS_MAX);
    operationIntent(db, {
      id: opId,
      runId,
      callId: p.ref.call_id,
      toolId: p.ref.tool_id,
      argsDigest: p.ref.args_digest,
      now: now(),
    });
  });
  const t0 = performance.now();
  let result: ToolExecResult;
  let dispatched = false;
  let expireOnClose = false;
  const dispatch = (executor: string) => {
    operationDispatched(db, opId, executor, now());
    dispatched = true;
  };
  const isMcp = tool !== undefined && parseMcpToolId(tool.spec.id) !== null;
  const isSkill = tool !== undefined && parseSkillToolId(tool.spec.id) !== null;
  const a = ctx.approvals;
  // [TL-9] The decision of THIS call on the Agent's policy as it is now (platform deny, Agent
  // rule, default); without a policy port the EffectiveToolSet's tool-level decision.
  const decideNow = (planPaths?: string[]): Decided =>
    a?.policy && tool && check.ok
      ? a.policy(callFacts(tool.spec, check.args, planPaths))
      : { decision: tool!.decision, reason: "default", ruleIndex: null, platform: null };
  const isRead = tool !== undefined && Object.hasOwn(READ_TOOL_EXECUTORS, tool.spec.id);
  // exec/apply's paths are known only from its plan: it is decided after planning.
  const early = tool && check.ok && tool.spec.id !== "exec/apply" ? decideNow() : null;
  // A path that is not canonical is refused as the tool would refuse it, before any decision.
  const pathCode = tool && check.ok ? callFacts(tool.spec, check.args).pathCode : undefined;
  if (!tool || !check.ok) {
    result = { ok: false, code: "tool_invalid_arguments" };
  } else if (pathCode !== undefined) {
    result = { ok: false, code: pathCode };
  } else if (early?.decision === "deny") {
    result = { ok: false, code: "tool_denied" };
  } else if (early?.decision === "allow" && isRead) {
    dispatch(READ_TOOL_EXECUTORS[tool.spec.id]);
    result = await executeReadToolOffLoop(tool.spec, ctx.workspaceDir, check.args);
    if (result.ok && result.receipt) {
      ctx.approvals?.receipts.set(result.receipt.path, result.receipt);
    }
  } else if (early?.decision === "allow" && Object.hasOwn(TASK_TOOL_EXECUTORS, tool.spec.id)) {
    // [EX-6] task/status and task/output read the Agent's Task records (allow by default).
    dispatch(TASK_TOOL_EXECUTORS[tool.spec.id]);
    result = readTaskTool(ctx.tasks, tool.spec.id, check.args);
  } else if (
    early?.decision === "allow" && tool.spec.id === DOCUMENT_TOOL_ID &&
    ctx.documents !== undefined
  ) {
    // [LC-4] A read in the runner sandbox; the Agent's setting is checked again per call.
    dispatch(DOCUMENT_EXECUTOR);
    result = await ctx.documents(check.args, ctx.signal);
  } else if (
    a &&
    (isRead || Object.hasOwn(MUTATION_TOOL_EXECUTORS, tool.spec.id) ||
      (isMcp && ctx.mcp !== undefined) ||
      (isSkill && ctx.skills !== undefined) ||
      (tool.spec.id === "agent/delegate" && ctx.delegate !== undefined) ||
      (ctx.exec !== undefined && Object.hasOwn(EXEC_TOOL_EXECUTORS, tool.spec.id)))
  ) {
    const binding = {
      agent_id: a.agentId,
      generation: a.generation,
      run_id: runId,
      call_id: p.ref.call_id,
    };
    const path = typeof check.args.path === "string" ? check.args.path : "";
    // File mutations and the exec tools share one approval path: a preview, a bound
    // plan digest, and a commit that runs only after the decision [TL-2, TL-6, EX-5].
    const prep = isRead
      ? gatedRead(ctx, tool.spec, check.args, p.ref.call_id)
      : isMcp
      ? gatedMcp(ctx, tool.spec.id, check.args, p.ref.call_id)
      : isSkill
      ? gatedSkill(ctx, tool.spec, check.args, p.ref.call_id)
      : tool.spec.id === "agent/delegate"
      ? gatedDelegate(ctx, check.args, p.ref.call_id)
      : ctx.exec !== undefined && Object.hasOwn(EXEC_TOOL_EXECUTORS, tool.spec.id)
      ? gatedExec(ctx, tool.spec.id, check.args, p.ref.call_id)
      : gatedMutation(
        tool.spec.id,
        ctx.workspaceDir,
        check.args,
        a.receipts.get(path),
        binding,
        // [TL-11] what the commit replaced, recorded right after it.
        (c) =>
          recordCheckpoints(db, {
            runId,
            callId: p.ref.call_id,
            toolId: tool.spec.id,
            entries: [c],
            maxBytes: a.checkpointMaxBytes ?? CHECKPOINT_AGENT_MAX_BYTES,
            now: now(),
          }),
      );
    const decided = !prep.ok ? null : early ?? decideNow(prep.paths ?? []);
    if (!prep.ok) result = prep;
    else if (decided!.decision === "deny") {
      result = { ok: false, code: "tool_denied" };
    } else if (decided!.decision === "allow") {
      // [TL-9, TL-10] An Agent rule allows this call: no approval is asked.
      if (!a.generationCurrent()) result = { ok: false, code: "approval_stale" };
      else {
        dispatch(prep.executor);
        result = await prep.commit();
      }
    } else if (countPendingPermissions(db) >= PERMISSIONS_PENDING_MAX) {
      result = { ok: false, code: "tool_denied" };
    } else {
      const permissionId = crypto.randomUUID();
      // [TL-10] The narrowed rule "Always allow" would add, fixed now from the checked call.
      // When an Agent `ask` rule decided, an allow rule could never win over it (the strictest
      // matching rule decides): nothing is offered then.
      const always = decided!.reason === "Agent rule"
        ? null
        : alwaysAllowRule(callFacts(tool.spec, check.args, prep.paths));
      const fullDiff = prep.fullDiff ?? null;
      recorder.durable("permission.requested", {
        permission_id: permissionId,
        call_id: p.ref.call_id,
        tool_id: tool.spec.id,
        preview: prep.preview,
        plan_digest: prep.planDigest,
        always_allow: always === null ? null : { ...always, decision: "allow" as const },
        full_diff_bytes: fullDiff === null ? null : utf8Bytes(fullDiff),
      }, () =>
        insertPermission(db, {
          id: permissionId,
          runId,
          callId: p.ref.call_id,
          toolId: tool.spec.id,
          preview: prep.preview,
          fullDiff,
          alwaysRule: always === null ? null : JSON.stringify(always),
          now: now(),
        }));
      const d = await a.approvals.wait(a.agentId, permissionId, ctx.signal);
      recorder.durable("permission.decided", {
        permission_id: permissionId,
        call_id: p.ref.call_id,
        decision: d === "aborted" ? "expired" : d,
      });
      if (d === "aborted") {
        expireOnClose = true;
        result = { ok: false, code: "run_cancelled" };
      } else if (d === "deny") {
        result = { ok: false, code: "tool_denied" };
      } else if (!a.generationCurrent()) {
        result = { ok: false, code: "approval_stale" };
      } else {
        dispatch(prep.executor);
        result = await prep.commit();
      }
    }
  } else {
    result = { ok: false, code: "tool_denied" };
  }
  const canonical = result.ok ? result.text : canonicalJson({ error: result.code });
  const proj = projectToolResult(p.ref.call_id, canonical, budget);
  const digest = domainDigest("agent-builder/tool-result/v1", canonical);
  const fatal: ErrorCode | null = proj.ok ? null : proj.code;
  const projection = proj.ok ? proj.text : "";
  const failure: ErrorCode | null = result.ok ? null : result.code;
  recorder.durable("tool.call.completed", {
    call_id: p.ref.call_id,
    tool_id: p.ref.tool_id,
    outcome: failure === null ? "ok" : "error",
    code: failure,
    result: canonical,
    result_bytes: utf8Bytes(canonical),
    result_digest: digest,
    projection: failure !== null
      ? "error"
      : proj.ok && proj.kind === "receipt"
      ? "receipt"
      : "inline",
    elapsed_ms: Math.max(0, Math.round(performance.now() - t0)),
  }, () => {
    if (expireOnClose) expirePermissions(db, runId, now());
    if (dispatched) {
      operationOutcome(db, {
        id: opId,
        ok: failure === null,
        resultDigest: failure === null ? digest : null,
        code: failure,
        now: now(),
      });
    } else {
      operationRefused(db, opId, failure ?? "internal_error", now());
    }
  });
  const bytes = utf8Bytes(canonical);
  return failure === null
    ? { ok: true, digest, bytes, projection, fatal }
    : { ok: false, code: failure, digest, bytes, projection, fatal };
}
