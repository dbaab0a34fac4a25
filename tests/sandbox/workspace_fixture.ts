/** Temp workspaces for the descriptor-anchored file tool tests (real directories, root-owned 0700). */
import { openWorkspaceRoot, type WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";

export interface TempWorkspace {
  dir: string;
  root: WorkspaceRoot;
  /** Writes a private (0600) file, creating parent dirs 0700. */
  file(rel: string, data: string | Uint8Array): string;
  mkdir(rel: string): string;
}

export function withWorkspace<T>(fn: (ws: TempWorkspace) => T): T {
  const dir = Deno.makeTempDirSync({ prefix: "ab-ws-" });
  Deno.chmodSync(dir, 0o700);
  const o = openWorkspaceRoot(dir);
  if (!o.ok) throw new Error(`workspace refused: ${o.code}`);
  const ws: TempWorkspace = {
    dir,
    root: o.root,
    mkdir(rel) {
      const p = `${dir}/${rel}`;
      Deno.mkdirSync(p, { recursive: true, mode: 0o700 });
      return p;
    },
    file(rel, data) {
      const slash = rel.lastIndexOf("/");
      if (slash > 0) ws.mkdir(rel.slice(0, slash));
      const p = `${dir}/${rel}`;
      if (typeof data === "string") Deno.writeTextFileSync(p, data, { mode: 0o600 });
      else Deno.writeFileSync(p, data, { mode: 0o600 });
      Deno.chmodSync(p, 0o600);
      return p;
    },
  };
  try {
    return fn(ws);
  } finally {
    o.root.close();
    Deno.removeSync(dir, { recursive: true });
  }
}

/** A clock that advances `stepMs` every time it is read. */
export function steppingClock(stepMs: number): () => number {
  let t = 0;
  return () => (t += stepMs);
}
