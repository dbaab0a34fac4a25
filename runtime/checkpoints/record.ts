/**
 * Turning a committed mutation into a checkpoint [TL-11]: what it replaced
 * (kept when ≤ CHECKPOINT_FILE_MAX_BYTES, else recorded as `too_large`; a
 * created file as `absent`, so a rewind deletes it) and what it left (content
 * digest and inode), so a rewind can tell a file that changed since.
 *
 * The callers (file/edit, file/write through tool_call.ts; exec/apply through
 * run_exec.ts) record right after the commit, in one transaction per tool
 * call; the per-Agent bound is applied in that transaction
 * (checkpoint_store.ts). A crash between the file commit and this write loses
 * the checkpoint, never a file: the path then no longer matches any recorded
 * "after" and a rewind refuses it as changed (fail closed).
 */
import type { FileIdentity } from "../../linuxfs/fs_anchor.ts";
import { CHECKPOINT_FILE_MAX_BYTES } from "../limits.ts";
import type { CheckpointBefore, CheckpointInput } from "../store/checkpoint_store.ts";

/** The checkpoint of replaced bytes (`null`: the path did not exist). */
export function beforeOf(bytes: Uint8Array | null): CheckpointBefore {
  if (bytes === null) return { state: "absent" };
  if (bytes.length > CHECKPOINT_FILE_MAX_BYTES) return { state: "too_large", size: bytes.length };
  // A copy: the caller's buffer may be a view into a larger one.
  return { state: "kept", bytes: bytes.slice() };
}

/** One checkpoint entry; `after` null when the mutation deleted the file. */
export function checkpointOf(
  path: string,
  before: Uint8Array | null,
  after: { digest: string; identity: FileIdentity } | null,
): CheckpointInput {
  return {
    path,
    before: beforeOf(before),
    after: after === null
      ? null
      : { digest: after.digest, dev: after.identity.dev, ino: after.identity.ino },
  };
}
