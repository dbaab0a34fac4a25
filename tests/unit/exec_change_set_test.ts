/**
 * Change sets [EX-4] and their application [EX-5] against real directories:
 * what a "command" did in the scratch comes back as added/modified/deleted
 * paths with sizes, digests and unified diffs; exec/apply's per-path commit
 * writes exactly those bytes, refuses a path the workspace changed since the
 * sync with `workspace_changed` while the others apply, and applies binary
 * files by digest.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { applyEntry } from "../../runtime/exec/apply.ts";
import { computeChangeSet } from "../../runtime/exec/change_set.ts";
import { ScratchCopy } from "../../runtime/exec/scratch.ts";
import { openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { CHANGE_SET_PATHS_MAX } from "../../runtime/limits.ts";
import { closeFd } from "../../sandbox/libc.ts";

function setup() {
  const root = Deno.makeTempDirSync({ prefix: "ab-changes-" });
  Deno.chmodSync(root, 0o700);
  const ws = `${root}/ws`;
  Deno.mkdirSync(ws, { mode: 0o700 });
  const scratch = new ScratchCopy({ workspaceDir: ws, scratchDir: `${root}/scratch`, owner: null });
  return { root, ws, scratch, cleanup: () => Deno.removeSync(root, { recursive: true }) };
}

function changes(t: ReturnType<typeof setup>) {
  const o = openWorkspaceRoot(t.ws);
  assert(o.ok);
  try {
    const r = computeChangeSet(t.scratch, o.root.fd);
    assert(r.ok);
    return r.set;
  } finally {
    o.root.close();
  }
}

function applyAll(t: ReturnType<typeof setup>, paths?: string[]) {
  const set = changes(t);
  const o = openWorkspaceRoot(t.ws);
  assert(o.ok);
  const sc = t.scratch.openRoot();
  try {
    return set.entries.filter((e) => !paths || paths.includes(e.path)).map((e) =>
      applyEntry(o.root, sc, e, { deadline: performance.now() + 10_000 })
    );
  } finally {
    closeFd(sc);
    o.root.close();
  }
}

Deno.test("a command's edits come back as a change set with unified diffs", () => {
  const t = setup();
  try {
    Deno.writeTextFileSync(`${t.ws}/a.ts`, "const a=1\n");
    Deno.writeTextFileSync(`${t.ws}/same.ts`, "same\n");
    Deno.writeTextFileSync(`${t.ws}/old.txt`, "bye\n");
    Deno.writeFileSync(`${t.ws}/img.bin`, new Uint8Array([0, 1, 2, 3]));
    assert(t.scratch.sync().ok);
    const sc = t.scratch.dir;
    Deno.writeTextFileSync(`${sc}/a.ts`, "const a = 1;\n");
    Deno.writeTextFileSync(`${sc}/same.ts`, "same\n"); // rewritten to the same bytes
    Deno.removeSync(`${sc}/old.txt`);
    Deno.mkdirSync(`${sc}/new/dir`, { recursive: true });
    Deno.writeTextFileSync(`${sc}/new/dir/b.ts`, "export {};\n");
    Deno.writeFileSync(`${sc}/img.bin`, new Uint8Array([9, 1, 2, 3, 4]));
    Deno.symlinkSync("a.ts", `${sc}/link.ts`);
    const set = changes(t);
    assertEquals(
      set.entries.map((e) => `${e.kind}:${e.path}:${e.old_size}:${e.new_size}:${e.note}`),
      [
        "modified:a.ts:10:13:null",
        "modified:img.bin:4:5:binary",
        "added:new/dir/b.ts:null:11:null",
        "deleted:old.txt:4:null:null",
      ],
    );
    assertEquals(set.counts, { added: 1, modified: 2, deleted: 1 });
    assertEquals(set.left_out, 1); // the link
    assertEquals(set.truncated, false);
    const d = set.diffs.get("a.ts")!;
    assert(d.includes("--- a/a.ts") && d.includes("+++ b/a.ts"), d);
    assert(d.includes("-const a=1\n+const a = 1;\n"), d);
    assert(set.diffs.get("new/dir/b.ts")!.includes("--- /dev/null"));
    assertEquals(set.diffs.has("img.bin"), false);
    assertEquals(set.entries[1].binary, true);
  } finally {
    t.cleanup();
  }
});

Deno.test("exec/apply commits every path atomically, binary by digest, deletions included", () => {
  const t = setup();
  try {
    Deno.writeTextFileSync(`${t.ws}/a.ts`, "const a=1\n", { mode: 0o644 });
    Deno.writeTextFileSync(`${t.ws}/old.txt`, "bye\n");
    Deno.writeFileSync(`${t.ws}/img.bin`, new Uint8Array([0, 1]));
    assert(t.scratch.sync().ok);
    const sc = t.scratch.dir;
    Deno.writeTextFileSync(`${sc}/a.ts`, "const a = 1;\n");
    Deno.removeSync(`${sc}/old.txt`);
    Deno.mkdirSync(`${sc}/new`);
    Deno.writeTextFileSync(`${sc}/new/b.ts`, "export {};\n");
    Deno.writeFileSync(`${sc}/img.bin`, new Uint8Array([7, 0, 255]));
    const out = applyAll(t);
    assertEquals(out.map((o) => o.ok ? `ok:${o.path}` : `${o.code}:${o.path}`), [
      "ok:a.ts",
      "ok:img.bin",
      "ok:new/b.ts",
      "ok:old.txt",
    ]);
    assertEquals(Deno.readTextFileSync(`${t.ws}/a.ts`), "const a = 1;\n");
    assertEquals(Deno.statSync(`${t.ws}/a.ts`).mode! & 0o777, 0o644);
    assertEquals([...Deno.readFileSync(`${t.ws}/img.bin`)], [7, 0, 255]);
    assertEquals(Deno.readTextFileSync(`${t.ws}/new/b.ts`), "export {};\n");
    let gone = false;
    try {
      Deno.statSync(`${t.ws}/old.txt`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      gone = true;
    }
    assert(gone);
    // No reserved temp is left behind.
    assertEquals(
      [...Deno.readDirSync(t.ws)].map((e) => e.name).filter((n) => n.startsWith(".agent")),
      [],
    );
  } finally {
    t.cleanup();
  }
});

Deno.test("a path the workspace changed since the sync is refused workspace_changed and the others apply", () => {
  const t = setup();
  try {
    Deno.writeTextFileSync(`${t.ws}/a.ts`, "a0\n");
    Deno.writeTextFileSync(`${t.ws}/b.ts`, "b0\n");
    assert(t.scratch.sync().ok);
    Deno.writeTextFileSync(`${t.scratch.dir}/a.ts`, "a-command\n");
    Deno.writeTextFileSync(`${t.scratch.dir}/b.ts`, "b-command\n");
    const set = changes(t);
    assertEquals(set.entries.length, 2);
    // The operator edits b.ts after the change set was computed (e.g. during the approval).
    Deno.writeTextFileSync(`${t.ws}/b.ts`, "b-operator\n");
    const o = openWorkspaceRoot(t.ws);
    assert(o.ok);
    const sc = t.scratch.openRoot();
    try {
      const out = set.entries.map((e) =>
        applyEntry(o.root, sc, e, { deadline: performance.now() + 10_000 })
      );
      assertEquals(out.map((r) => r.ok ? "ok" : r.code), ["ok", "workspace_changed"]);
    } finally {
      closeFd(sc);
      o.root.close();
    }
    assertEquals(Deno.readTextFileSync(`${t.ws}/a.ts`), "a-command\n");
    assertEquals(Deno.readTextFileSync(`${t.ws}/b.ts`), "b-operator\n");
  } finally {
    t.cleanup();
  }
});

Deno.test("a change set lists at most 256 paths and says it is truncated beyond", () => {
  const t = setup();
  try {
    assert(t.scratch.sync().ok);
    for (let i = 0; i < CHANGE_SET_PATHS_MAX; i++) {
      Deno.writeTextFileSync(`${t.scratch.dir}/f${String(i).padStart(3, "0")}`, `${i}\n`);
    }
    const at = changes(t);
    assertEquals(at.entries.length, CHANGE_SET_PATHS_MAX);
    assertEquals(at.truncated, false);
    Deno.writeTextFileSync(`${t.scratch.dir}/z-one-more`, "x\n");
    const past = changes(t);
    assertEquals(past.entries.length, CHANGE_SET_PATHS_MAX);
    assertEquals(past.total, CHANGE_SET_PATHS_MAX + 1);
    assertEquals(past.truncated, true);
  } finally {
    t.cleanup();
  }
});

Deno.test("the command's DENO_DIR cache is not a change unless the workspace has one", () => {
  const t = setup();
  try {
    assert(t.scratch.sync().ok);
    Deno.mkdirSync(`${t.scratch.dir}/.deno/deps`, { recursive: true });
    Deno.writeTextFileSync(`${t.scratch.dir}/.deno/deps/cache`, "c\n");
    Deno.writeTextFileSync(`${t.scratch.dir}/real.ts`, "x\n");
    assertEquals(changes(t).entries.map((e) => e.path), ["real.ts"]);
    t.scratch.removeSync();
    Deno.mkdirSync(`${t.ws}/.deno`);
    Deno.writeTextFileSync(`${t.ws}/.deno/kept.txt`, "k\n");
    assert(t.scratch.sync().ok);
    Deno.writeTextFileSync(`${t.scratch.dir}/.deno/kept.txt`, "k2\n");
    assertEquals(changes(t).entries.map((e) => e.path), [".deno/kept.txt"]);
  } finally {
    t.cleanup();
  }
});
