/**
 * Startup sweep of the reserved write-temp namespace in every Agent workspace
 * [TL-6]. Runs once, before requests are served, through the bounded cleanup
 * of runtime/tools/stale_temps.ts (≤ 16 temps per workspace, anomalies left
 * in place). A workspace that cannot be swept is logged with its fixed code
 * and left untouched: its file tools still refuse unsafe objects one by one,
 * and the reserved names can never be a model target.
 */
import { agentDataRel } from "../home.ts";
import type { Logger } from "../log.ts";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { cleanStaleWriteTemps } from "../tools/stale_temps.ts";

export interface SweepSummary {
  workspaces: number;
  removed: number;
  /** Workspaces whose sweep refused (anomaly, unsafe root) — logged, never forced. */
  refused: number;
}

/** The workspace directory of an Agent below the home root. */
export function workspaceDirOf(homeRoot: string, agentId: string): string {
  return `${homeRoot}/${agentDataRel(agentId)}/workspace`;
}

/** Sweeps each workspace of `agentIds`; a missing workspace is skipped. */
export function sweepStaleWriteTemps(
  homeRoot: string,
  agentIds: readonly string[],
  log: Logger,
): SweepSummary {
  const s: SweepSummary = { workspaces: 0, removed: 0, refused: 0 };
  for (const id of agentIds) {
    const o = openWorkspaceRoot(workspaceDirOf(homeRoot, id));
    if (!o.ok) {
      if (o.code === "path_not_found") continue;
      s.refused++;
      log.warn("workspace.temp_sweep_refused", { agent_id: id, code: o.code });
      continue;
    }
    try {
      s.workspaces++;
      const r = cleanStaleWriteTemps(o.root);
      if (!r.ok) {
        s.refused++;
        log.warn("workspace.temp_sweep_refused", { agent_id: id, code: r.code });
        continue;
      }
      s.removed += r.removed;
      if (r.removed > 0 || r.remaining > 0) {
        log.info("workspace.temp_sweep", {
          agent_id: id,
          removed: r.removed,
          remaining: r.remaining,
        });
      }
    } finally {
      o.root.close();
    }
  }
  return s;
}
