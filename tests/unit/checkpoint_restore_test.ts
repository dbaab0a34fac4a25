/**
 * Restoring one rewind path [TL-11] against a real directory: the current
 * file must be exactly what the last mutation left — the same inode AND the
 * same content — or nothing is touched (`workspace_changed`); a restore puts
 * back the exact bytes with the file's mode and leaves no temp; a delete
 * refuses a hardlinked file; a reserved name is refused before any I/O.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { openWorkspaceRoot, type WorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { currentState, restorePath } from "../../runtime/checkpoints/restore.ts";
import type { PathPlan } from "../../runtime/checkpoints/rewind_plan.ts";

function withWorkspace(fn: (ws: string, root: WorkspaceRoot) => void) {
  const base = Deno.makeTempDirSync({ prefix: "ab-restore-" });
  Deno.chmodSync(base, 0o700);
  const ws = `${base}/ws`;
  Deno.mkdirSync(ws, { mode: 0o700 });
  const o = openWorkspaceRoot(ws);
  assert(o.ok);
  try {
    fn(ws, o.root);
  } finally {
    o.root.close();
    Deno.removeSync(base, { recursive: true });
  }
}

const deadline = () => performance.now() + 10_000;

/** The plan entry for `path` expecting exactly what is on disk now. */
function planFor(root: WorkspaceRoot, path: string, action: PathPlan["action"]): PathPlan {
  const cur = currentState(root, path, deadline());
  return {
    path,
    action,
    status: "revert",
    first_seq: 1,
    first_state: action === "delete" ? "absent" : "kept",
    expect: cur.kind === "file" ? { digest: cur.digest, dev: cur.dev, ino: cur.ino } : null,
  };
}

Deno.test("a restore puts back the exact bytes, keeps the mode and leaves no temp", () => {
  withWorkspace((ws, root) => {
    Deno.writeTextFileSync(`${ws}/f.sh`, "changed\n", { mode: 0o755 });
    Deno.chmodSync(`${ws}/f.sh`, 0o755);
    const old = new Uint8Array([0, 1, 2, 0xff, 10]);
    const r = restorePath(root, planFor(root, "f.sh", "restore"), old, deadline());
    assertEquals(r, { ok: true });
    assertEquals(Deno.readFileSync(`${ws}/f.sh`), old);
    assertEquals(Deno.statSync(`${ws}/f.sh`).mode! & 0o777, 0o755);
    assertEquals([...Deno.readDirSync(ws)].map((e) => e.name), ["f.sh"]);
  });
});

Deno.test("the same content under another inode is not what the mutation left: refused", () => {
  withWorkspace((ws, root) => {
    Deno.writeTextFileSync(`${ws}/a.txt`, "left by the turn\n");
    const plan = planFor(root, "a.txt", "restore");
    // Replaced by an identical copy (a new inode): someone else's file now.
    Deno.writeTextFileSync(`${ws}/copy`, "left by the turn\n");
    Deno.renameSync(`${ws}/copy`, `${ws}/a.txt`);
    const r = restorePath(root, plan, new TextEncoder().encode("old\n"), deadline());
    assertEquals(r, { ok: false, code: "workspace_changed" });
    assertEquals(Deno.readTextFileSync(`${ws}/a.txt`), "left by the turn\n");
    // Same inode, other content: refused as well.
    const again = planFor(root, "a.txt", "restore");
    Deno.writeTextFileSync(`${ws}/a.txt`, "edited in place\n");
    assertEquals(
      restorePath(root, again, new TextEncoder().encode("old\n"), deadline()),
      { ok: false, code: "workspace_changed" },
    );
    assertEquals(Deno.readTextFileSync(`${ws}/a.txt`), "edited in place\n");
  });
});

Deno.test("a delete refuses a hardlinked file and a reserved name is refused", () => {
  withWorkspace((ws, root) => {
    Deno.writeTextFileSync(`${ws}/made.txt`, "made\n");
    const plan = planFor(root, "made.txt", "delete");
    Deno.linkSync(`${ws}/made.txt`, `${ws}/other-link`);
    assertEquals(restorePath(root, plan, null, deadline()), {
      ok: false,
      code: "workspace_changed",
    });
    assertEquals(Deno.readTextFileSync(`${ws}/made.txt`), "made\n");
    Deno.removeSync(`${ws}/other-link`);
    assertEquals(restorePath(root, plan, null, deadline()), { ok: true });
    assertEquals([...Deno.readDirSync(ws)].map((e) => e.name), []);
    const reserved = { ...plan, path: ".agent-builder-write-0011" };
    assertEquals(restorePath(root, reserved, null, deadline()), {
      ok: false,
      code: "path_invalid",
    });
  });
});
