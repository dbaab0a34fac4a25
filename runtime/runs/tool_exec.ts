/**
 * Dispatch of validated tool calls to the workspace executors in the Control
 * Plane [TL-4, TL-5, TL-6, TL-8]: the Worker only names the call id; the
 * arguments the model chose were validated against the ToolSpec and stay here.
 *
 * What this file enforces: `executeReadTool` runs only the four read tools;
 * mutations are split into `prepareMutation` (plan + exact diff preview, no
 * write) and `commitApproved` (the commit of an approved, binding-checked
 * plan) — the approval between them is tool_call.ts's duty; `exec/run` has no
 * dispatch here at all. The read tools themselves are runtime/tools/read_tools.ts
 * (root opened descriptor-anchored per call, one canonical JSON text capped by
 * the spec's output bound); the server's callers run them in a file-tool process
 * (`executeReadToolOffLoop`, [PF-2]). Every failure is a fixed error code from
 * the executor, never exception text.
 */
import type { ErrorCode } from "../errors.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import type { ToolArgs } from "../tools/policy.ts";
import type { ReadReceipt } from "../tools/file_read_text.ts";
import { runReadTool } from "../tools/read_tools.ts";
import { type FileToolPool, fileToolPool } from "../tools/file_tool_pool.ts";
import { prepareEdit, type PrepareResult } from "../tools/file_edit.ts";
import { prepareWrite } from "../tools/file_write.ts";
import { commitMutation } from "../tools/mutation_commit.ts";
import type { MutationBinding, MutationPlan } from "../tools/mutation_plan.ts";
import { checkpointOf } from "../checkpoints/record.ts";
import type { CheckpointInput } from "../store/checkpoint_store.ts";

export type ToolExecResult =
  | { ok: true; text: string; receipt?: ReadReceipt }
  | { ok: false; code: ErrorCode };

/** The tools this executor dispatches, each with its executor identity (operation ledger). */
export const READ_TOOL_EXECUTORS: Readonly<Record<string, string>> = Object.freeze({
  "file/stat": "control-plane/file_stat/v1",
  "file/read_text": "control-plane/file_read_text/v1",
  "file/glob": "control-plane/file_glob/v1",
  "file/grep": "control-plane/file_grep/v1",
});

type Args = ToolArgs;

function ok(value: unknown): { ok: true; text: string } {
  return { ok: true, text: canonicalJson(value) };
}

/** Mutation tools: planned (with preview) before approval, committed after it [TL-6]. */
export const MUTATION_TOOL_EXECUTORS: Readonly<Record<string, string>> = Object.freeze({
  "file/edit": "control-plane/file_edit/v1",
  "file/write": "control-plane/file_write/v1",
});

/** Plans a file/edit or file/write: the exact diff preview the operator approves. */
export function prepareMutation(
  toolId: string,
  workspaceDir: string,
  args: Args,
  receipt: ReadReceipt | null,
  binding: MutationBinding,
): PrepareResult {
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    if (toolId === "file/edit") {
      return prepareEdit(o.root, {
        path: args.path as string,
        old_text: args.old_text as string,
        new_text: args.new_text as string,
      }, { receipt, binding });
    }
    if (toolId === "file/write") {
      return prepareWrite(o.root, { path: args.path as string, content: args.content as string }, {
        receipt,
        binding,
      });
    }
    return { ok: false, code: "tool_denied" };
  } finally {
    o.root.close();
  }
}

/**
 * Commits an approved plan; the binding of the dispatch must equal the plan's.
 * `checkpoint` receives what the commit replaced and left [TL-11].
 */
export function commitApproved(
  workspaceDir: string,
  plan: MutationPlan,
  binding: MutationBinding,
  checkpoint: (c: CheckpointInput) => void = () => {},
): ToolExecResult {
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    const r = commitMutation(o.root, plan, { binding });
    if (!r.ok) return r;
    checkpoint(
      checkpointOf(r.path, r.before, { digest: r.content_digest, identity: r.identity }),
    );
    return ok({
      path: r.path,
      outcome: r.outcome,
      bytes: r.bytes,
      content_digest: r.content_digest,
    });
  } finally {
    o.root.close();
  }
}

/**
 * Executes `spec` with validated `args` against the Agent's workspace directory, here on the
 * calling thread (tests, tools that already run off the loop).
 */
export function executeReadTool(spec: ToolSpec, workspaceDir: string, args: Args): ToolExecResult {
  if (!Object.hasOwn(READ_TOOL_EXECUTORS, spec.id)) return { ok: false, code: "tool_denied" };
  return runReadTool(spec.id, workspaceDir, args, spec.output_max_bytes);
}

/**
 * The same call in a file-tool process [PF-2]: the server's event loop only awaits the answer.
 * A process that dies during the call answers `file_tool_failed`.
 */
export function executeReadToolOffLoop(
  spec: ToolSpec,
  workspaceDir: string,
  args: Args,
  pool: FileToolPool = fileToolPool,
): Promise<ToolExecResult> {
  if (!Object.hasOwn(READ_TOOL_EXECUTORS, spec.id)) {
    return Promise.resolve({ ok: false, code: "tool_denied" });
  }
  return pool.run(spec.id, workspaceDir, args, spec.output_max_bytes);
}
