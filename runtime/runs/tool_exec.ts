/**
 * Dispatch of validated tool calls to the workspace executors in the Control
 * Plane [TL-4, TL-5, TL-6, TL-8]: the Worker only names the call id; the
 * arguments the model chose were validated against the ToolSpec and stay here.
 *
 * What this file enforces: `executeReadTool` runs only the four read tools;
 * mutations are split into `prepareMutation` (plan + exact diff preview, no
 * write) and `commitApproved` (the commit of an approved, binding-checked
 * plan) — the approval between them is tool_call.ts's duty; `exec/run` has no
 * dispatch here at all. The workspace root is opened descriptor-anchored per
 * call and closed after it; a result is one canonical JSON text, capped by the
 * spec's output bound (over ⇒ `search_limit`); every failure is a fixed error
 * code from the executor, never exception text.
 */
import type { ErrorCode } from "../errors.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import type { ToolArgs } from "../tools/policy.ts";
import { fileGlob } from "../tools/file_glob.ts";
import { fileGrep } from "../tools/file_grep.ts";
import { fileReadText, type ReadReceipt } from "../tools/file_read_text.ts";
import { prepareEdit, type PrepareResult } from "../tools/file_edit.ts";
import { prepareWrite } from "../tools/file_write.ts";
import { commitMutation } from "../tools/mutation_commit.ts";
import type { MutationBinding, MutationPlan } from "../tools/mutation_plan.ts";
import { checkpointOf } from "../checkpoints/record.ts";
import type { CheckpointInput } from "../store/checkpoint_store.ts";
import { fileStat } from "../tools/file_stat.ts";

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

function run(toolId: string, dir: string, args: Args): ToolExecResult {
  const o = openWorkspaceRoot(dir);
  if (!o.ok) return o;
  try {
    switch (toolId) {
      case "file/stat": {
        const r = fileStat(o.root, { path: args.path as string });
        if (!r.ok) return r;
        return ok({ path: r.path, kind: r.kind, size: r.size });
      }
      case "file/read_text": {
        const r = fileReadText(o.root, {
          path: args.path as string,
          offset: args.offset as number | undefined,
        });
        if (!r.ok) return r;
        return {
          ...ok({
            path: r.path,
            text: r.text,
            next_offset: r.next_offset,
            truncated: r.receipt.truncated,
            content_digest: r.receipt.content_digest,
            range: r.receipt.range,
          }),
          receipt: r.receipt,
        };
      }
      case "file/glob": {
        const r = fileGlob(o.root, { pattern: args.pattern as string });
        if (!r.ok) return r;
        return ok({ files: r.files, truncated: r.truncated, refused: r.refused });
      }
      case "file/grep": {
        const r = fileGrep(o.root, {
          pattern: args.pattern as string,
          path: args.path as string | undefined,
          regex: args.regex as boolean | undefined,
        });
        if (!r.ok) return r;
        return ok({
          matches: r.matches,
          files_searched: r.files_searched,
          truncated: r.truncated,
          refused: r.refused,
        });
      }
      default:
        return { ok: false, code: "tool_denied" };
    }
  } finally {
    o.root.close();
  }
}

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

/** Executes `spec` with validated `args` against the Agent's workspace directory. */
export function executeReadTool(spec: ToolSpec, workspaceDir: string, args: Args): ToolExecResult {
  if (!Object.hasOwn(READ_TOOL_EXECUTORS, spec.id)) return { ok: false, code: "tool_denied" };
  const r = run(spec.id, workspaceDir, args);
  if (r.ok && utf8Bytes(r.text) > spec.output_max_bytes) return { ok: false, code: "search_limit" };
  return r;
}
