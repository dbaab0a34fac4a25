/**
 * The rewind plan [TL-11], pure: from the checkpoints of the Turns being
 * undone (in commit order) and what is on disk now, which files revert and
 * which are refused.
 *
 * Per path, the EARLIEST checkpoint says what to restore (its `before`: kept
 * bytes, or "did not exist" ⇒ delete) and the LATEST says what the last
 * mutation left (content digest and inode, or "deleted"). A path is:
 * - `expired` / `too_large` when the earliest `before` is not kept (dropped by
 *   the per-Agent bound, or over the per-file bound) — never guessed;
 * - `changed_since` when the file on disk is not what the last mutation left
 *   (another content, another inode, a file where it deleted one, or gone);
 * - `revert` otherwise.
 */
import type { CheckpointRow, CheckpointState } from "../store/checkpoint_store.ts";

/** What the workspace holds at a path now. */
export type CurrentState =
  | { kind: "absent" }
  | { kind: "file"; dev: string; ino: string; digest: string }
  /** Not a regular file, unreadable, or over the read bound: never matches. */
  | { kind: "other" };

export type RewindStatus = "revert" | "changed_since" | "expired" | "too_large";

export interface PathPlan {
  path: string;
  action: "restore" | "delete";
  status: RewindStatus;
  /** The checkpoint whose kept bytes are restored (the earliest one of the path). */
  first_seq: number;
  first_state: CheckpointState;
  /** What the last mutation left (null: it deleted the file). */
  expect: { digest: string; dev: string; ino: string } | null;
}

/** Earliest and latest checkpoint per path, sorted by path. */
export function historiesOf(
  rows: readonly CheckpointRow[],
): { path: string; first: CheckpointRow; last: CheckpointRow }[] {
  const byPath = new Map<string, { path: string; first: CheckpointRow; last: CheckpointRow }>();
  for (const r of rows) {
    const h = byPath.get(r.path);
    if (h === undefined) byPath.set(r.path, { path: r.path, first: r, last: r });
    else if (r.seq < h.first.seq) h.first = r;
    else if (r.seq > h.last.seq) h.last = r;
  }
  return [...byPath.values()].sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

/** Whether `current` is exactly what the last mutation left. */
export function isAsLeft(expect: PathPlan["expect"], current: CurrentState): boolean {
  if (expect === null) return current.kind === "absent";
  return current.kind === "file" && current.dev === expect.dev && current.ino === expect.ino &&
    current.digest === expect.digest;
}

/** The plan of one path, given what is on disk. */
export function planPath(
  h: { path: string; first: CheckpointRow; last: CheckpointRow },
  current: CurrentState,
): PathPlan {
  const expect = h.last.after_digest === null
    ? null
    : { digest: h.last.after_digest, dev: h.last.after_dev ?? "", ino: h.last.after_ino ?? "" };
  const s = h.first.before_state;
  const status: RewindStatus = s === "expired" || s === "too_large"
    ? s
    : isAsLeft(expect, current)
    ? "revert"
    : "changed_since";
  return {
    path: h.path,
    action: s === "absent" ? "delete" : "restore",
    status,
    first_seq: h.first.seq,
    first_state: s,
    expect,
  };
}
