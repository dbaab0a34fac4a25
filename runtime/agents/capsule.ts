/**
 * The filesystem side of an Agent Capsule [PK-4, AG-1, AG-3, AG-4]:
 * `data/agents/<id>/` (manifest.json, workspace/, state.sqlite) and
 * `.runtime/agents/<id>/` (per-Run and per-Task roots).
 *
 * Every step is idempotent so restart recovery can simply repeat it. All
 * paths are checked component by component (path_safety) before use; a
 * symlink or foreign-owned component anywhere refuses the operation.
 */
import { agentDataRel, agentRuntimeRel } from "../home.ts";
import { checkManagedPath, ensurePrivateDir, writePrivateFileAtomic } from "../path_safety.ts";

/** [AG-4] provided by the workspace module: no-clobber creation of the instruction file. */
export type EnsureInstructionFile = (workspaceDir: string) => "created" | "exists";

export interface CapsuleFs {
  root: string;
  ensureInstructionFile?: EnsureInstructionFile;
}

/** Creates the Capsule directories (missing ones only) and the default instruction file. */
export function provisionCapsuleDirs(fs: CapsuleFs, agentId: string): void {
  const data = agentDataRel(agentId);
  ensurePrivateDir(fs.root, data);
  const workspace = ensurePrivateDir(fs.root, `${data}/workspace`);
  ensurePrivateDir(fs.root, agentRuntimeRel(agentId));
  // Startup and provisioning only add a missing file; an existing one is never overwritten.
  fs.ensureInstructionFile?.(workspace);
}

/** Records the generation the Capsule on disk was staged for. */
export function writeManifest(fs: CapsuleFs, agentId: string, generation: number): void {
  const body = JSON.stringify({ agent_id: agentId, generation, format: 1 }) + "\n";
  writePrivateFileAtomic(
    fs.root,
    `${agentDataRel(agentId)}/manifest.json`,
    new TextEncoder().encode(body),
  );
}

/** Reads the staged generation from manifest.json (null when absent or malformed). */
export function readManifestGeneration(fs: CapsuleFs, agentId: string): number | null {
  const rel = `${agentDataRel(agentId)}/manifest.json`;
  if (!checkManagedPath(fs.root, rel, "file", true)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Deno.readTextFileSync(`${fs.root}/${rel}`));
  } catch (err) {
    if (err instanceof SyntaxError) return null;
    throw err;
  }
  const gen = (parsed as { generation?: unknown } | null)?.generation;
  return typeof gen === "number" && Number.isSafeInteger(gen) ? gen : null;
}

/** Removes one managed directory tree (after checking it is ours and not a link). */
function removeTree(root: string, rel: string): void {
  if (!checkManagedPath(root, rel, "dir", true)) return;
  // Deno.remove(recursive) unlinks symlinks inside the tree rather than following them.
  Deno.removeSync(`${root}/${rel}`, { recursive: true });
}

/**
 * Stage for an upgrade: the runtime directory is rebuilt empty for the next
 * generation (no Run or Task root of the old generation survives).
 */
export function rebuildRuntimeDir(fs: CapsuleFs, agentId: string): void {
  removeTree(fs.root, agentRuntimeRel(agentId));
  ensurePrivateDir(fs.root, agentRuntimeRel(agentId));
}

export function removeDataDir(fs: CapsuleFs, agentId: string): void {
  removeTree(fs.root, agentDataRel(agentId));
}

export function removeRuntimeDir(fs: CapsuleFs, agentId: string): void {
  removeTree(fs.root, agentRuntimeRel(agentId));
}

/** Residual audit: how many of the Agent's managed trees still exist (0 = clean). */
export function countResidue(fs: CapsuleFs, agentId: string): number {
  return countResidueAt(fs, [agentDataRel(agentId), agentRuntimeRel(agentId)]);
}

/**
 * The two trees an Agent's name component would own. `component` must be a
 * valid id or a single safe component the caller has checked (availability.ts).
 */
function treesOf(component: string): string[] {
  if (!/^[0-9A-Za-z-]{36}$/.test(component)) throw new Error("unsafe agent component");
  return [`data/agents/${component}`, `.runtime/agents/${component}`];
}

/**
 * [AG-5] Deleting an unavailable Agent: removes its folder and runtime folder
 * whatever their mode or owner, but never through a link. The parents
 * (data/agents, .runtime/agents) must pass the path-safety check; a leaf that
 * is a symlink (or any non-directory) is unlinked itself, its target untouched;
 * a directory is removed with remove_dir_all, which opens each level with
 * O_NOFOLLOW and unlinks links inside rather than following them. A tree
 * that cannot be removed is left (the caller counts it as residue).
 */
export function removeAgentTreesForce(fs: CapsuleFs, component: string): void {
  for (const rel of treesOf(component)) {
    const parent = rel.slice(0, rel.lastIndexOf("/"));
    checkManagedPath(fs.root, parent, "dir");
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(`${fs.root}/${rel}`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    if (info.isDirectory) Deno.removeSync(`${fs.root}/${rel}`, { recursive: true });
    else Deno.removeSync(`${fs.root}/${rel}`);
  }
}

/** Residue of `removeAgentTreesForce` for the same component. */
export function countResidueOf(fs: CapsuleFs, component: string): number {
  return countResidueAt(fs, treesOf(component));
}

function countResidueAt(fs: CapsuleFs, rels: string[]): number {
  let n = 0;
  for (const rel of rels) {
    try {
      Deno.lstatSync(`${fs.root}/${rel}`);
      n++;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return n;
}

/** Capsule directory names present on disk (for the orphan audit at startup). */
export function listCapsuleIds(fs: CapsuleFs): Set<string> {
  const ids = new Set<string>();
  for (const rel of ["data/agents", ".runtime/agents"]) {
    if (!checkManagedPath(fs.root, rel, "dir", true)) continue;
    for (const e of Deno.readDirSync(`${fs.root}/${rel}`)) ids.add(e.name);
  }
  return ids;
}
