/**
 * Run tree watch [SB-6]: measures a Run root (entries, logical bytes,
 * allocated bytes) without following symlinks and with a bounded walk, and
 * decides whether it is over the RUN_TREE_* bounds. The supervisor calls it at
 * most once per RUN_TREE_CHECK_INTERVAL_MS and kills the Worker when over.
 *
 * What this file enforces: the walk stops as soon as the entry bound is
 * passed (so a directory bomb costs at most RUN_TREE_ENTRIES_MAX + 1 lstat
 * calls), depth is bounded, and an over-bound tree is reported as such.
 */
import {
  RUN_TREE_ALLOCATED_BYTES_MAX,
  RUN_TREE_DEPTH_MAX,
  RUN_TREE_ENTRIES_MAX,
  RUN_TREE_LOGICAL_BYTES_MAX,
} from "../limits.ts";

export interface RunTreeUsage {
  entries: number;
  logicalBytes: number;
  allocatedBytes: number;
  /** The walk stopped early because a bound was already passed. */
  truncated: boolean;
}

/** Walks `root` (not following symlinks) until done or the entry bound is passed. */
export async function measureRunTree(root: string): Promise<RunTreeUsage> {
  const u: RunTreeUsage = { entries: 0, logicalBytes: 0, allocatedBytes: 0, truncated: false };
  const stack: Array<{ dir: string; depth: number }> = [{ dir: root, depth: 0 }];
  while (stack.length > 0) {
    const { dir, depth } = stack.pop()!;
    for await (const e of Deno.readDir(dir)) {
      const path = `${dir}/${e.name}`;
      const st = await Deno.lstat(path);
      u.entries++;
      u.logicalBytes += st.isFile ? st.size : 0;
      u.allocatedBytes += (st.blocks ?? 0) * 512;
      if (runTreeOverLimit(u) || (st.isDirectory && depth + 1 > RUN_TREE_DEPTH_MAX)) {
        u.truncated = true;
        return u;
      }
      if (st.isDirectory) stack.push({ dir: path, depth: depth + 1 });
    }
  }
  return u;
}

/** True when any bound is passed (or the walk had to stop early). */
export function runTreeOverLimit(u: RunTreeUsage): boolean {
  return u.truncated || u.entries > RUN_TREE_ENTRIES_MAX ||
    u.logicalBytes > RUN_TREE_LOGICAL_BYTES_MAX || u.allocatedBytes > RUN_TREE_ALLOCATED_BYTES_MAX;
}
