/**
 * The git status collector [CX-9]: `git status --porcelain=v2 --branch` of an
 * Agent's workspace, run in the runner sandbox (RUNNER_PATH `git`, ≤ 2 s,
 * output read up to 16 KiB, ≤ 64 paths listed — git_status.ts).
 *
 * What this file enforces: only when the workspace has a `.git` directory;
 * git never runs on the workspace itself: it runs in a per-Agent scratch copy
 * (runtime/exec/scratch.ts: descriptor-anchored, bounded, refreshed
 * incrementally, owned by the runner's uid) under the runner's confinement
 * (no network, Landlock, seccomp), with `--no-optional-locks` and fsmonitor
 * off; any failure — no repository, the copy refused, the runner busy or
 * unavailable, a timeout, a non-zero exit — means no section (null), never a
 * guess. At most one collection per Agent at a time; a result is reused for
 * GIT_STATUS_REUSE_MS so a meter refresh does not spawn a runner each time.
 */
import { GIT_STATUS_TIMEOUT_MS } from "../limits.ts";
import { agentDataRel, type HomeLayout } from "../home.ts";
import { scratchRootRel } from "../exec/scratch_root.ts";
import { ScratchCopy } from "../exec/scratch.ts";
import type { ScratchOwner } from "../exec/scratch_fs.ts";
import type { CommandResult, RunCommandOptions } from "../exec/runner_types.ts";
import { selfIsRoot } from "../../sandbox/attestation.ts";
import { resolveSandboxIdentity } from "../../sandbox/identity.ts";
import { gitStatusText, parseGitStatus } from "./git_status.ts";

/** A collected status is reused this long (the meter refreshes after every event). */
const GIT_STATUS_REUSE_MS = 2000;

export interface GitCollectorOptions {
  home: HomeLayout;
  runCommand(o: RunCommandOptions): Promise<CommandResult>;
  now?: () => number;
}

export type GitCollector = ReturnType<typeof createGitCollector>;

export function createGitCollector(opts: GitCollectorOptions) {
  const now = opts.now ?? Date.now;
  const copies = new Map<string, ScratchCopy>();
  const recent = new Map<string, { at: number; text: Promise<string | null> }>();

  function workspaceDir(agentId: string): string {
    return `${opts.home.root}/${agentDataRel(agentId)}/workspace`;
  }

  function isRepository(agentId: string): boolean {
    try {
      return Deno.lstatSync(`${workspaceDir(agentId)}/.git`).isDirectory;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return false;
      throw err;
    }
  }

  async function collect(agentId: string): Promise<string | null> {
    if (!isRepository(agentId)) return null;
    const root = `${opts.home.root}/${scratchRootRel(agentId)}/git-status`;
    let copy = copies.get(agentId);
    if (!copy) {
      Deno.mkdirSync(`${root}/tmp`, { recursive: true, mode: 0o700 });
      const owner: ScratchOwner | null = selfIsRoot() ? resolveSandboxIdentity() : null;
      copy = new ScratchCopy({
        workspaceDir: workspaceDir(agentId),
        scratchDir: `${root}/work`,
        owner,
      });
      copies.set(agentId, copy);
    }
    const sync = copy.sync();
    if (!sync.ok) return null;
    let r: CommandResult;
    try {
      r = await opts.runCommand({
        argv: [
          "git",
          "-c",
          "core.fsmonitor=false",
          "-c",
          "safe.directory=*",
          "--no-optional-locks",
          "status",
          "--porcelain=v2",
          "--branch",
        ],
        cwd: "",
        scratchDir: copy.dir,
        tmpDir: `${root}/tmp`,
        timeoutS: Math.ceil(GIT_STATUS_TIMEOUT_MS / 1000),
        runKey: `git-status/${agentId}`,
      });
    } catch {
      return null; // busy, unknown program or no sandbox: no section, never a guess
    }
    if (r.outcome !== "exited" || r.exit_code !== 0) return null;
    return gitStatusText(parseGitStatus(r.stdout.text, r.stdout.total_bytes));
  }

  return {
    /** The section text, or null (not a repository, or git status could not be taken). */
    status(agentId: string): Promise<string | null> {
      const hit = recent.get(agentId);
      if (hit && now() - hit.at < GIT_STATUS_REUSE_MS) return hit.text;
      const text = collect(agentId).catch(() => null);
      recent.set(agentId, { at: now(), text });
      // Only a status is reused: "no repository" or a failure is looked at again next time.
      text.then((t) => {
        if (t === null && recent.get(agentId)?.text === text) recent.delete(agentId);
      });
      return text;
    },
  };
}
