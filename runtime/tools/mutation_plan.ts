/**
 * The approvable description of a file mutation [TL-6]: a small, persistable
 * plan bound to Agent generation, Run, call, path identity, old content
 * digest, new content digest and the exact diff digest. The approval shows
 * `preview` (≤ 4 KiB); commit (runtime/tools/mutation_commit.ts) refuses
 * unless every bound value still holds.
 *
 * Pure module: schema, canonical digest and the exact multi-hunk diff [TL-12].
 */
import { z } from "zod";
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import {
  APPROVAL_DIFF_EDIT_LENGTH_MAX,
  APPROVAL_FULL_DIFF_MAX_BYTES,
  DIFF_CONTEXT_LINES,
  EDIT_PREVIEW_MAX_BYTES,
} from "../limits.ts";
import { domainDigest, floorUtf8Boundary } from "./text.ts";
import { utf8Bytes } from "../protocol/digest.ts";

const Identity = z.object({
  dev: z.string().max(32),
  ino: z.string().max(32),
  size: z.number().int().min(0),
  mtime_ns: z.string().max(32),
  ctime_ns: z.string().max(32),
}).strict();

export const MutationBindingSchema = z.object({
  agent_id: z.string().min(1).max(64),
  generation: z.number().int().min(0),
  run_id: z.string().min(1).max(64),
  call_id: z.string().min(1).max(128),
}).strict();
export type MutationBinding = z.infer<typeof MutationBindingSchema>;

const Digest = z.string().regex(/^[0-9a-f]{64}$/);

export const MutationPlanSchema = z.object({
  version: z.literal(1),
  tool: z.enum(["file/edit", "file/write"]),
  kind: z.enum(["create", "replace"]),
  path: z.string().min(1).max(1024),
  parent: Identity,
  target: Identity.nullable(),
  old_digest: Digest.nullable(),
  /** file/write: the full new content; file/edit: null. */
  content: z.string().nullable(),
  /** file/edit: the exact-once fragment pair; file/write: null. */
  old_text: z.string().nullable(),
  new_text: z.string().nullable(),
  new_digest: Digest,
  diff_digest: Digest,
  binding: MutationBindingSchema,
  plan_digest: Digest,
}).strict();
export type MutationPlan = z.infer<typeof MutationPlanSchema>;

/** Digest over every plan field except plan_digest, in a fixed order. */
export function planDigest(p: Omit<MutationPlan, "plan_digest">): string {
  const canonical = JSON.stringify([
    p.version,
    p.tool,
    p.kind,
    p.path,
    p.parent,
    p.target,
    p.old_digest,
    p.content,
    p.old_text,
    p.new_text,
    p.new_digest,
    p.diff_digest,
    [p.binding.agent_id, p.binding.generation, p.binding.run_id, p.binding.call_id],
  ]);
  return domainDigest("agent-builder/mutation-plan/v1", canonical);
}

export function sameBinding(a: MutationBinding, b: MutationBinding): boolean {
  return a.agent_id === b.agent_id && a.generation === b.generation &&
    a.run_id === b.run_id && a.call_id === b.call_id;
}

export function diffDigest(diff: string): string {
  return domainDigest("agent-builder/mutation-diff/v1", diff);
}

export function newContentDigest(text: string): string {
  return domainDigest("agent-builder/file-content/v1", text);
}

/**
 * The exact unified diff of `before` → `after` [TL-12]: the `diff` library's
 * multi-hunk patch with DIFF_CONTEXT_LINES of context (`/dev/null` for a
 * create). When the edit distance exceeds APPROVAL_DIFF_EDIT_LENGTH_MAX the
 * library gives up and the exact single hunk (common head and tail elided, the
 * differing middle in full) is used instead. Deterministic: the commit
 * recomputes it and compares digests.
 */
export function lineDiff(path: string, before: string | null, after: string): string {
  const patch = createTwoFilesPatch(
    before === null ? "/dev/null" : `a/${path}`,
    `b/${path}`,
    before ?? "",
    after,
    undefined,
    undefined,
    {
      context: DIFF_CONTEXT_LINES,
      maxEditLength: APPROVAL_DIFF_EDIT_LENGTH_MAX,
      headerOptions: FILE_HEADERS_ONLY,
    },
  );
  return patch ?? singleHunkDiff(path, before, after);
}

/** One hunk: common leading and trailing lines elided, the differing middle in full. */
export function singleHunkDiff(path: string, before: string | null, after: string): string {
  const a = before === null ? [] : before.split("\n");
  const b = after.split("\n");
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (
    suf < a.length - pre && suf < b.length - pre &&
    a[a.length - 1 - suf] === b[b.length - 1 - suf]
  ) suf++;
  const removed = a.slice(pre, a.length - suf);
  const added = b.slice(pre, b.length - suf);
  const head = [
    `--- ${before === null ? "/dev/null" : `a/${path}`}`,
    `+++ b/${path}`,
    `@@ -${pre + 1},${removed.length} +${pre + 1},${added.length} @@`,
  ];
  return [...head, ...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`)].join("\n") +
    "\n";
}

/** The full diff kept one click away from the approval, or null past its bound [TL-12]. */
export function keptFullDiff(diff: string): string | null {
  return utf8Bytes(diff) <= APPROVAL_FULL_DIFF_MAX_BYTES ? diff : null;
}

/** A prepared mutation: the plan bound to its diff and sealed with its digest, plus the preview. */
export interface PreparedMutation {
  ok: true;
  plan: MutationPlan;
  preview: string;
  diff: string;
}

/** Completes a planned mutation (every field but the two digests) with its diff [TL-6]. */
export function sealPlan(
  fields: Omit<MutationPlan, "plan_digest" | "diff_digest">,
  diff: string,
): PreparedMutation {
  const rest = { ...fields, diff_digest: diffDigest(diff) };
  return {
    ok: true,
    plan: { ...rest, plan_digest: planDigest(rest) },
    preview: previewOf(diff),
    diff,
  };
}

/** Fixed marker appended when the diff exceeds the preview bound. */
export const PREVIEW_TRUNCATED_MARKER =
  "\n[preview truncated; the approval binds the full diff digest]\n";

/** The approval preview: the diff itself, or its UTF-8-safe prefix plus a fixed marker. */
export function previewOf(diff: string): string {
  const bytes = new TextEncoder().encode(diff);
  if (bytes.length <= EDIT_PREVIEW_MAX_BYTES) return diff;
  const room = EDIT_PREVIEW_MAX_BYTES - utf8Bytes(PREVIEW_TRUNCATED_MARKER);
  const cut = floorUtf8Boundary(bytes, room);
  return new TextDecoder().decode(bytes.subarray(0, cut)) + PREVIEW_TRUNCATED_MARKER;
}
