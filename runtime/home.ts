/**
 * The home directory layout [PK-4]. Everything the product writes lives under
 * one home; this module names those paths and creates the private skeleton.
 * All creation goes through path_safety so every component is checked.
 */
import { assertValidId, checkManagedPath, ensurePrivateDir } from "./path_safety.ts";

export interface HomeLayout {
  /** Absolute, symlink-resolved home directory. */
  root: string;
  registryDb: string;
  agentsDataRel: string;
  secretsRel: string;
  controlPlaneRel: string;
  recoveryRel: string;
  backupsRel: string;
}

/** Resolves `dir` (created if missing) and returns the layout below it. */
export function resolveHome(dir: string): HomeLayout {
  try {
    Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
  const root = Deno.realPathSync(dir);
  return {
    root,
    registryDb: `${root}/data/agent-registry.sqlite`,
    agentsDataRel: "data/agents",
    secretsRel: ".runtime/secrets",
    controlPlaneRel: ".runtime/control-plane",
    recoveryRel: ".runtime/recovery",
    backupsRel: "backups",
  };
}

/** Creates the private skeleton (0700 dirs), checking each component. */
export function ensureHomeSkeleton(home: HomeLayout): void {
  checkManagedPath(home.root, "", "dir");
  for (
    const rel of [
      "data",
      home.agentsDataRel,
      home.secretsRel,
      home.controlPlaneRel,
      ".runtime/agents",
      home.recoveryRel,
    ]
  ) {
    ensurePrivateDir(home.root, rel);
  }
}

export function agentDataRel(agentId: string): string {
  return `data/agents/${assertValidId(agentId)}`;
}

export function agentRuntimeRel(agentId: string): string {
  return `.runtime/agents/${assertValidId(agentId)}`;
}

export function runRootRel(agentId: string, runId: string): string {
  return `${agentRuntimeRel(agentId)}/runs/${assertValidId(runId)}`;
}

export function taskRootRel(agentId: string, taskId: string): string {
  return `${agentRuntimeRel(agentId)}/tasks/${assertValidId(taskId)}`;
}
