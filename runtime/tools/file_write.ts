/**
 * `file/write` planning [TL-6]: create a new file or replace an existing,
 * previously read one with full content. Produces the approvable MutationPlan
 * and the ≤ 4 KiB preview of the exact diff; commitMutation() does the I/O.
 *
 * Enforces: content ≤ 8 KiB of workspace text; an existing target needs a
 * matching read receipt (mutation_target.ts); a missing target becomes a
 * create bound to the parent directory identity; the diff is bounded by its inputs
 * (≤ 1 MiB old text, ≤ 8 KiB new content) and only its ≤ 4 KiB preview
 * and digest travel with the approval.
 */
import type { WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { WRITE_CONTENT_MAX_BYTES } from "../limits.ts";
import type { PrepareContext, PrepareResult } from "./file_edit.ts";
import { lineDiff, newContentDigest, sealPlan } from "./mutation_plan.ts";
import { locateTarget, type TargetOptions } from "./mutation_target.ts";
import { decodeText } from "./text.ts";

export interface FileWriteArgs {
  path: string;
  content: string;
}

export function prepareWrite(
  root: WorkspaceRoot,
  args: FileWriteArgs,
  ctx: PrepareContext,
  opts: TargetOptions = {},
): PrepareResult {
  if (typeof args.content !== "string") return { ok: false, code: "tool_invalid_arguments" };
  if (!args.content.isWellFormed()) return { ok: false, code: "file_invalid_utf8" };
  const bytes = new TextEncoder().encode(args.content);
  if (bytes.length > WRITE_CONTENT_MAX_BYTES) return { ok: false, code: "content_too_large" };
  const valid = decodeText(bytes);
  if (!valid.ok) return valid;
  const target = locateTarget(root, args.path, ctx.receipt, opts);
  if (!target.ok) return target;
  const before = target.existing?.text ?? null;
  const diff = lineDiff(target.path, before, args.content);
  return sealPlan({
    version: 1,
    tool: "file/write",
    kind: target.existing === null ? "create" : "replace",
    path: target.path,
    parent: target.parent,
    target: target.existing?.identity ?? null,
    old_digest: target.existing?.digest ?? null,
    content: args.content,
    old_text: null,
    new_text: null,
    new_digest: newContentDigest(args.content),
    binding: ctx.binding,
  }, diff);
}
