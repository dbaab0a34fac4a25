/**
 * Scratch copies [EX-3] against real directories: first copy, later syncs
 * (the workspace wins, the command's own changes stay), left-out entries
 * with notes, the entry and byte bounds at the limit and one past it, and a
 * link planted in the scratch that a sync must not follow.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { ScratchCopy } from "../../runtime/exec/scratch.ts";
import { SCRATCH_BYTES_MAX, SCRATCH_DEPTH_MAX, SCRATCH_ENTRIES_MAX } from "../../runtime/limits.ts";
import { handOverToSandbox } from "../../runtime/exec/runner.ts";
import { resolveSandboxIdentity } from "../../sandbox/identity.ts";
import { AT_SYMLINK_NOFOLLOW, statx } from "../../sandbox/libc.ts";
import { identityOf, sameIdentity } from "../../linuxfs/fs_anchor.ts";
import { exists } from "../helpers/home.ts";

function setup(dir?: string): { ws: string; scratchDir: string; cleanup(): void } {
  const root = Deno.makeTempDirSync({ prefix: "ab-scratch-", dir });
  Deno.chmodSync(root, 0o700);
  const ws = `${root}/ws`;
  Deno.mkdirSync(ws, { mode: 0o700 });
  return {
    ws,
    scratchDir: `${root}/scratch`,
    cleanup: () => Deno.removeSync(root, { recursive: true }),
  };
}

const root = Deno.uid() === 0;

Deno.test("a first sync copies files, directories and links and notes what it leaves out", () => {
  const t = setup();
  try {
    Deno.mkdirSync(`${t.ws}/src/deep`, { recursive: true, mode: 0o755 });
    Deno.writeTextFileSync(`${t.ws}/src/a.ts`, "export const a = 1;\n", { mode: 0o644 });
    Deno.writeTextFileSync(`${t.ws}/src/deep/run.sh`, "#!/bin/sh\necho hi\n", { mode: 0o755 });
    Deno.writeTextFileSync(`${t.ws}/linked`, "two names\n");
    Deno.linkSync(`${t.ws}/linked`, `${t.ws}/linked2`);
    Deno.symlinkSync("src/a.ts", `${t.ws}/alias.ts`);
    new Deno.Command("mkfifo", { args: [`${t.ws}/pipe`] }).outputSync();
    const s = new ScratchCopy({
      workspaceDir: t.ws,
      scratchDir: t.scratchDir,
      owner: root ? { uid: 65534, gid: 65534 } : null,
    });
    const r = s.sync();
    assert(r.ok, JSON.stringify(r));
    assertEquals(r.first, true);
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/src/a.ts`), "export const a = 1;\n");
    assertEquals(Deno.statSync(`${t.scratchDir}/src/deep/run.sh`).mode! & 0o777, 0o755);
    assertEquals(Deno.readLinkSync(`${t.scratchDir}/alias.ts`), "src/a.ts");
    assertEquals(exists(`${t.scratchDir}/pipe`), false);
    assertEquals(exists(`${t.scratchDir}/linked`), false);
    const notes = r.notes.map((n) => `${n.path}:${n.reason}`).sort();
    assertEquals(notes, ["linked2:hardlink", "linked:hardlink", "pipe:fifo"]);
    assertEquals(r.notes_total, 3);
    if (root) {
      assertEquals(Deno.statSync(`${t.scratchDir}/src/a.ts`).uid, 65534);
      assertEquals(Deno.statSync(`${t.scratchDir}/src/deep`).uid, 65534);
      assertEquals(Deno.statSync(t.scratchDir).uid, 65534);
    }
    assertEquals([...s.base.files.keys()].sort(), ["src/a.ts", "src/deep/run.sh"]);
    s.removeSync();
    assertEquals(exists(t.scratchDir), false);
  } finally {
    t.cleanup();
  }
});

Deno.test("a later sync copies in what the workspace changed and keeps the command's own changes", () => {
  const t = setup();
  try {
    Deno.writeTextFileSync(`${t.ws}/keep.txt`, "k0\n");
    Deno.writeTextFileSync(`${t.ws}/both.txt`, "b0\n");
    Deno.writeTextFileSync(`${t.ws}/gone.txt`, "g0\n");
    Deno.mkdirSync(`${t.ws}/olddir`);
    Deno.writeTextFileSync(`${t.ws}/olddir/f`, "f\n");
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    assert(s.sync().ok);
    // The "command" edits the scratch.
    Deno.writeTextFileSync(`${t.scratchDir}/keep.txt`, "k-command\n");
    Deno.writeTextFileSync(`${t.scratchDir}/both.txt`, "b-command\n");
    Deno.writeTextFileSync(`${t.scratchDir}/made.txt`, "new\n");
    // The operator edits the workspace meanwhile.
    Deno.writeTextFileSync(`${t.ws}/both.txt`, "b-workspace\n");
    Deno.removeSync(`${t.ws}/gone.txt`);
    Deno.removeSync(`${t.ws}/olddir`, { recursive: true });
    Deno.writeTextFileSync(`${t.ws}/fresh.txt`, "fresh\n");
    const r = s.sync();
    assert(r.ok, JSON.stringify(r));
    assertEquals(r.first, false);
    assertEquals(r.copied, 2); // both.txt and fresh.txt
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/keep.txt`), "k-command\n");
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/both.txt`), "b-workspace\n");
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/made.txt`), "new\n");
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/fresh.txt`), "fresh\n");
    assertEquals(exists(`${t.scratchDir}/gone.txt`), false);
    assertEquals(exists(`${t.scratchDir}/olddir`), false);
    assertEquals([...s.base.files.keys()].sort(), ["both.txt", "fresh.txt", "keep.txt"]);
    s.removeSync();
  } finally {
    t.cleanup();
  }
});

Deno.test("a sync does not follow a link a command planted in the scratch", () => {
  const t = setup();
  const outside = Deno.makeTempDirSync({ prefix: "ab-outside-" });
  try {
    Deno.mkdirSync(`${t.ws}/a`);
    Deno.writeTextFileSync(`${t.ws}/a/f.txt`, "one\n");
    Deno.writeTextFileSync(`${outside}/f.txt`, "outside\n");
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    assert(s.sync().ok);
    Deno.removeSync(`${t.scratchDir}/a`, { recursive: true });
    Deno.symlinkSync(outside, `${t.scratchDir}/a`);
    Deno.writeTextFileSync(`${t.ws}/a/f.txt`, "two\n");
    const r = s.sync();
    assert(r.ok, JSON.stringify(r));
    assertEquals(Deno.readTextFileSync(`${outside}/f.txt`), "outside\n");
    assert(Deno.lstatSync(`${t.scratchDir}/a`).isDirectory);
    assertEquals(Deno.readTextFileSync(`${t.scratchDir}/a/f.txt`), "two\n");
    s.removeSync();
    assertEquals(Deno.readTextFileSync(`${outside}/f.txt`), "outside\n");
  } finally {
    t.cleanup();
    Deno.removeSync(outside, { recursive: true });
  }
});

/** tmpfs when the host has one: 20,000 file creations on a loaded disk take too long. */
function fastDir(): string | undefined {
  try {
    return Deno.statSync("/dev/shm").isDirectory ? "/dev/shm" : undefined;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

Deno.test("a workspace of exactly 20,000 entries is copied and one more is workspace_too_large", () => {
  const t = setup(fastDir());
  try {
    // 100 directories of 199 files: 100 + 19,900 = 20,000 entries.
    for (let d = 0; d < 100; d++) {
      Deno.mkdirSync(`${t.ws}/d${d}`);
      for (let f = 0; f < 199; f++) Deno.writeFileSync(`${t.ws}/d${d}/f${f}`, new Uint8Array());
    }
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    const r = s.sync();
    assert(r.ok, JSON.stringify(r));
    assertEquals(r.entries, SCRATCH_ENTRIES_MAX);
    s.removeSync();
    Deno.writeFileSync(`${t.ws}/one-more`, new Uint8Array());
    const s2 = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    const r2 = s2.sync();
    assertEquals(r2.ok ? "ok" : r2.code, "workspace_too_large");
    // A first copy that fails leaves nothing behind.
    assertEquals(exists(t.scratchDir), false);
  } finally {
    t.cleanup();
  }
});

Deno.test("the byte bound: at the bound copies, one byte past is workspace_too_large", () => {
  const t = setup();
  try {
    Deno.writeFileSync(`${t.ws}/a`, new Uint8Array(1000));
    Deno.writeFileSync(`${t.ws}/b`, new Uint8Array(24));
    const at = new ScratchCopy({
      workspaceDir: t.ws,
      scratchDir: t.scratchDir,
      owner: null,
      bounds: { bytes: 1024 },
    });
    assert(at.sync().ok);
    at.removeSync();
    Deno.writeFileSync(`${t.ws}/c`, new Uint8Array(1));
    const past = new ScratchCopy({
      workspaceDir: t.ws,
      scratchDir: t.scratchDir,
      owner: null,
      bounds: { bytes: 1024 },
    });
    const r = past.sync();
    assertEquals(r.ok ? "ok" : r.code, "workspace_too_large");
    assertEquals(exists(t.scratchDir), false);
  } finally {
    t.cleanup();
  }
});

Deno.test("a workspace one byte past 512 MiB is refused with the real bound", () => {
  const t = setup();
  try {
    // A sparse file: the logical size counts, and the refusal comes before any copy.
    const f = Deno.openSync(`${t.ws}/big`, { create: true, write: true });
    f.truncateSync(SCRATCH_BYTES_MAX + 1);
    f.close();
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    const r = s.sync();
    assertEquals(r.ok ? "ok" : r.code, "workspace_too_large");
    assertEquals(exists(t.scratchDir), false);
  } finally {
    t.cleanup();
  }
});

Deno.test("a copy made for the sandbox uid is left untouched by the runner's hand-over", () => {
  const t = setup();
  try {
    Deno.mkdirSync(`${t.ws}/src`);
    Deno.writeTextFileSync(`${t.ws}/src/a.ts`, "a\n");
    Deno.symlinkSync("src/a.ts", `${t.ws}/link`);
    const owner = root ? resolveSandboxIdentity() : null;
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner });
    assert(s.sync().ok);
    handOverToSandbox(t.scratchDir);
    // No chown happened, so no ctime moved: every copy still has its recorded identity
    // and a change set will not read it back.
    for (const [path, b] of s.base.files) {
      const st = statx(-100, `${t.scratchDir}/${path}`, AT_SYMLINK_NOFOLLOW);
      assert(st.ok);
      assert(sameIdentity(identityOf(st.st), b.scratch), path);
      if (root) assertEquals(st.st.uid, owner!.uid);
    }
    s.removeSync();
  } finally {
    t.cleanup();
  }
});

Deno.test("the depth bound: a directory 64 levels down is copied, one at 65 is left out with a note", () => {
  const t = setup();
  try {
    const level = (n: number) => Array.from({ length: n }, (_, i) => `d${i + 1}`).join("/");
    Deno.mkdirSync(`${t.ws}/${level(SCRATCH_DEPTH_MAX + 1)}`, { recursive: true });
    Deno.writeTextFileSync(`${t.ws}/${level(SCRATCH_DEPTH_MAX)}/at_bound.txt`, "in\n");
    Deno.writeTextFileSync(`${t.ws}/${level(SCRATCH_DEPTH_MAX + 1)}/past.txt`, "out\n");
    const s = new ScratchCopy({ workspaceDir: t.ws, scratchDir: t.scratchDir, owner: null });
    const r = s.sync();
    assert(r.ok, JSON.stringify(r));
    assertEquals(
      Deno.readTextFileSync(`${t.scratchDir}/${level(SCRATCH_DEPTH_MAX)}/at_bound.txt`),
      "in\n",
    );
    assertEquals(exists(`${t.scratchDir}/${level(SCRATCH_DEPTH_MAX + 1)}`), false);
    assertEquals(r.notes.map((n) => `${n.path}:${n.reason}`), [
      `${level(SCRATCH_DEPTH_MAX + 1)}:depth`,
    ]);
    s.removeSync();
  } finally {
    t.cleanup();
  }
});
