/**
 * Restoring one path of a rewind [TL-11] through the [TL-6] commit machinery.
 *
 * What this file enforces, per path, under the parent directory's exclusive
 * flock (the same per-target serialisation as file/edit, file/write and
 * exec/apply) and inside the rewind's deadline:
 * - the path is canonical and outside the reserved temp namespace; the
 *   directories are opened with the [TL-4] checks (no link followed); a
 *   parent that is gone is re-created (0755) only to restore a file into it;
 * - what is there now must be exactly what the last mutation left (inode AND
 *   content digest; or absent when it deleted the file) — else
 *   `workspace_changed` and nothing is touched;
 * - restored bytes go to a same-directory 0600 temp in the reserved
 *   `.agent-builder-write-*` namespace, are fsynced, and appear atomically:
 *   renameat2(EXCHANGE) over the current file with the swapped-out object
 *   verified (else swapped back), or renameat2(NOREPLACE) where the file is
 *   absent; a file the Turns created is renamed to a reserved temp, verified,
 *   then unlinked; the directory is fsynced.
 * The mode of a replaced file is kept (`& 0o755`, owner rw always).
 */
import { captureFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  fsyncFd,
  lstatIn,
  openDirChain,
  renameIn,
  unlinkIn,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { closeFd, ENOENT, RENAME_EXCHANGE, RENAME_NOREPLACE } from "../../sandbox/libc.ts";
import { EXEC_APPLY_FILE_MAX_BYTES } from "../limits.ts";
import { openOrMakeParents } from "../exec/apply.ts";
import { lockDir, randomTempName, writeTemp } from "../tools/mutation_commit.ts";
import { canonicalPath, isReservedName } from "../tools/path.ts";
import { contentDigest } from "../tools/text.ts";
import { type CurrentState, isAsLeft, type PathPlan } from "./rewind_plan.ts";

const changed: Fail = { ok: false, code: "workspace_changed" };

/** What is at `path` now (for the plan); never follows a link. */
export function currentState(ws: WorkspaceRoot, path: string, deadline: number): CurrentState {
  const p = canonicalPath(path);
  if (!p.ok) return { kind: "other" };
  const parent = openDirChain(ws, p.components.slice(0, -1));
  if (!parent.ok) return parent.code === "path_not_found" ? { kind: "absent" } : { kind: "other" };
  try {
    return stateIn(ws, parent.fd, p.components[p.components.length - 1], deadline);
  } finally {
    closeFd(parent.fd);
  }
}

function stateIn(ws: WorkspaceRoot, dirfd: number, name: string, deadline: number): CurrentState {
  const st = lstatIn(dirfd, name);
  if (!st.ok) return st.errno === ENOENT ? { kind: "absent" } : { kind: "other" };
  const cap = captureFile(ws, dirfd, name, { maxBytes: EXEC_APPLY_FILE_MAX_BYTES, deadline });
  if (!cap.ok) return { kind: "other" };
  return {
    kind: "file",
    dev: cap.identity.dev,
    ino: cap.identity.ino,
    digest: contentDigest(cap.bytes),
  };
}

/**
 * Restores one planned path: `bytes` for a `restore`, nothing for a `delete`.
 * Ok only when the path now holds what it held before the undone Turns.
 */
export function restorePath(
  ws: WorkspaceRoot,
  plan: PathPlan,
  bytes: Uint8Array | null,
  deadline: number,
): { ok: true } | Fail {
  const now = () => performance.now();
  const p = canonicalPath(plan.path);
  if (!p.ok) return p;
  const leaf = p.components[p.components.length - 1];
  if (isReservedName(leaf)) return { ok: false, code: "path_invalid" };
  if (plan.action === "restore" && bytes === null) return { ok: false, code: "file_changed" };
  const dirs = p.components.slice(0, -1);
  const parent = plan.action === "restore" ? openOrMakeParents(ws, dirs) : openDirChain(ws, dirs);
  if (!parent.ok) {
    // A created file whose directory is gone too is already reverted.
    if (parent.code === "path_not_found" && plan.expect === null) return { ok: true };
    return parent.code === "path_not_found" ? changed : parent;
  }
  const dirfd = parent.fd;
  try {
    if (!lockDir(dirfd, deadline, now)) return { ok: false, code: "file_timeout" };
    const cur = stateIn(ws, dirfd, leaf, deadline);
    if (!isAsLeft(plan.expect, cur)) return changed;
    if (plan.action === "delete") {
      if (cur.kind === "absent") return { ok: true };
      return deleteVerified(ws, dirfd, leaf, plan, deadline);
    }
    const st = lstatIn(dirfd, leaf);
    const mode = st.ok ? (st.st.mode & 0o755) | 0o600 : 0o600;
    const tmp = writeTemp(dirfd, bytes!, mode);
    if (tmp === null) return { ok: false, code: "storage_full" };
    if (cur.kind === "absent") {
      const r = renameIn(dirfd, tmp, leaf, RENAME_NOREPLACE);
      if (r !== 0) {
        unlinkIn(dirfd, tmp);
        return changed;
      }
    } else {
      if (renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE) !== 0) {
        unlinkIn(dirfd, tmp);
        return changed;
      }
      // The temp name now holds what was at the target: it must be what the plan saw.
      if (!isAsLeft(plan.expect, stateIn(ws, dirfd, tmp, deadline))) {
        if (renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE) === 0) unlinkIn(dirfd, tmp);
        return changed;
      }
      unlinkIn(dirfd, tmp);
    }
    if (!fsyncFd(dirfd)) return { ok: false, code: "storage_full" };
    return { ok: true };
  } finally {
    closeFd(dirfd); // also releases the flock
  }
}

function deleteVerified(
  ws: WorkspaceRoot,
  dirfd: number,
  leaf: string,
  plan: PathPlan,
  deadline: number,
): { ok: true } | Fail {
  const tmp = randomTempName();
  if (renameIn(dirfd, leaf, tmp, RENAME_NOREPLACE) !== 0) return changed;
  const moved = stateIn(ws, dirfd, tmp, deadline);
  if (!isAsLeft(plan.expect, moved) || plan.expect === null) {
    // Someone swapped the file between the check and the rename: put theirs back.
    renameIn(dirfd, tmp, leaf, RENAME_NOREPLACE);
    return changed;
  }
  if (unlinkIn(dirfd, tmp) !== 0 || !fsyncFd(dirfd)) return { ok: false, code: "storage_full" };
  return { ok: true };
}
