/**
 * `file/edit` planning [TL-6]: replace one exact fragment of an existing,
 * previously read file. Produces the approvable MutationPlan (bound digests)
 * and the ≤ 4 KiB preview of the exact diff; nothing touches the disk until
 * commitMutation() runs after approval.
 *
 * Enforces: old/new fragments ≤ 4 KiB each, old text non-empty and matching
 * exactly once (overlapping occurrences count), a matching read receipt, the
 * result still workspace text within the 1 MiB read cap.
 */
import type { Fail, WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { EDIT_FRAGMENT_MAX_BYTES, READ_FILE_MAX_BYTES } from "../limits.ts";
import type { ReadReceipt } from "./file_read_text.ts";
import {
  lineDiff,
  type MutationBinding,
  newContentDigest,
  type PreparedMutation,
  sealPlan,
} from "./mutation_plan.ts";
import { locateTarget, type TargetOptions } from "./mutation_target.ts";
import { decodeText } from "./text.ts";
import { utf8Bytes } from "../protocol/digest.ts";

export interface FileEditArgs {
  path: string;
  old_text: string;
  new_text: string;
}

export interface PrepareContext {
  /** The file/read_text receipt recorded for this path in the current Run, if any. */
  receipt: ReadReceipt | null;
  binding: MutationBinding;
}

export type PrepareResult = PreparedMutation | Fail;

/** Counts occurrences of `needle` in `hay`, overlapping ones included, stopping at 2. */
function countUpToTwo(hay: string, needle: string): number {
  const first = hay.indexOf(needle);
  if (first < 0) return 0;
  return hay.indexOf(needle, first + 1) < 0 ? 1 : 2;
}

/** Pure: applies the exact-once replacement. */
export function applyEdit(
  text: string,
  oldText: string,
  newText: string,
): { ok: true; text: string } | Fail {
  if (oldText.length === 0) return { ok: false, code: "tool_invalid_arguments" };
  const n = countUpToTwo(text, oldText);
  if (n === 0) return { ok: false, code: "edit_no_match" };
  if (n > 1) return { ok: false, code: "edit_ambiguous" };
  const at = text.indexOf(oldText);
  return { ok: true, text: text.slice(0, at) + newText + text.slice(at + oldText.length) };
}

export function prepareEdit(
  root: WorkspaceRoot,
  args: FileEditArgs,
  ctx: PrepareContext,
  opts: TargetOptions = {},
): PrepareResult {
  if (typeof args.old_text !== "string" || typeof args.new_text !== "string") {
    return { ok: false, code: "tool_invalid_arguments" };
  }
  if (
    utf8Bytes(args.old_text) > EDIT_FRAGMENT_MAX_BYTES ||
    utf8Bytes(args.new_text) > EDIT_FRAGMENT_MAX_BYTES
  ) return { ok: false, code: "content_too_large" };
  if (!args.new_text.isWellFormed() || !args.old_text.isWellFormed()) {
    return { ok: false, code: "file_invalid_utf8" };
  }
  const target = locateTarget(root, args.path, ctx.receipt, opts);
  if (!target.ok) return target;
  // Edit never creates: a missing file has no old text to match.
  if (target.existing === null) return { ok: false, code: "path_not_found" };
  const applied = applyEdit(target.existing.text, args.old_text, args.new_text);
  if (!applied.ok) return applied;
  const bytes = new TextEncoder().encode(applied.text);
  if (bytes.length > READ_FILE_MAX_BYTES) return { ok: false, code: "content_too_large" };
  const valid = decodeText(bytes);
  if (!valid.ok) return valid;
  const diff = lineDiff(target.path, target.existing.text, applied.text);
  return sealPlan({
    version: 1,
    tool: "file/edit",
    kind: "replace",
    path: target.path,
    parent: target.parent,
    target: target.existing.identity,
    old_digest: target.existing.digest,
    content: null,
    old_text: args.old_text,
    new_text: args.new_text,
    new_digest: newContentDigest(applied.text),
    binding: ctx.binding,
  }, diff);
}
