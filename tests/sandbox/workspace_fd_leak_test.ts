/**
 * Every workspace executor closes every fd it opens, on success and on every
 * refusal path [TL-4] [TL-5] [TL-6] [CX-2]: the fds of /proc/self/fd that
 * point into the test's workspace are listed before and after each call.
 */
import { assertEquals } from "../helpers/assert.ts";
import { fileStat } from "../../runtime/tools/file_stat.ts";
import { fileReadText } from "../../runtime/tools/file_read_text.ts";
import { fileGlob } from "../../runtime/tools/file_glob.ts";
import { fileGrep } from "../../runtime/tools/file_grep.ts";
import { prepareEdit } from "../../runtime/tools/file_edit.ts";
import { prepareWrite } from "../../runtime/tools/file_write.ts";
import { commitMutation } from "../../runtime/tools/mutation_commit.ts";
import { cleanStaleWriteTemps } from "../../runtime/tools/stale_temps.ts";
import {
  ensureDefaultInstructionFile,
  readInstructionFile,
} from "../../runtime/workspace/instruction_file.ts";
import { steppingClock, type TempWorkspace, withWorkspace } from "./workspace_fixture.ts";

const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);
const binding = { agent_id: "agent-1", generation: 1, run_id: "run-1", call_id: "call-1" };

/**
 * The fds of this process that point into `dir`. Only those are counted:
 * under `deno test --parallel` other test modules share the process and open
 * and close their own fds (in their own temp dirs) at any moment.
 */
function fdsInto(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync("/proc/self/fd")) {
    let target: string;
    try {
      target = Deno.readLinkSync(`/proc/self/fd/${e.name}`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue; // closed meanwhile by another module
      throw err;
    }
    if (target === dir || target.startsWith(`${dir}/`)) out.push(`${e.name} -> ${target}`);
  }
  return out.sort();
}

let watched = "";

/** Runs `fn` and asserts no fd into the workspace is left open afterwards. */
function noLeak<T>(label: string, fn: () => T): T {
  const before = fdsInto(watched);
  let out: T;
  try {
    out = fn();
  } catch (err) {
    assertEquals(fdsInto(watched), before, `${label} (threw) leaked an fd`);
    throw err;
  }
  assertEquals(fdsInto(watched), before, `${label} leaked an fd`);
  return out;
}

/** withWorkspace, with `noLeak` watching that workspace's directory. */
function withWatchedWorkspace(fn: (ws: TempWorkspace) => void): void {
  withWorkspace((ws) => {
    watched = Deno.realPathSync(ws.dir);
    assertEquals(fdsInto(watched).length, 1, "only the workspace root fd is open");
    fn(ws);
  });
}

function hostileTree(ws: TempWorkspace): void {
  ws.file("ok.txt", "needle\n");
  ws.file("dir/in.txt", "needle\n");
  ws.file("hard.txt", "x\n");
  Deno.linkSync(`${ws.dir}/hard.txt`, `${ws.dir}/hard2.txt`);
  Deno.symlinkSync(`${ws.dir}/ok.txt`, `${ws.dir}/link.txt`);
  Deno.symlinkSync(`${ws.dir}/dir`, `${ws.dir}/linkdir`);
  new Deno.Command("mkfifo", { args: ["-m", "600", `${ws.dir}/pipe`] }).outputSync();
  ws.file("bin.dat", new Uint8Array([0x61, 0, 0x62]));
  ws.file("bad.txt", new Uint8Array([0x61, 0xff]));
  const sparse = ws.file("sparse.txt", "a");
  Deno.truncateSync(sparse, 64 * 1024);
  ws.file("big.txt", "a".repeat(1024 * 1024 + 1));
  const gw = ws.file("gw/in.txt", "x\n");
  Deno.chmodSync(gw, 0o666);
  ws.file("long.txt", "needle" + "x".repeat(16 * 1024) + "\n");
}

const PATHS = [
  "ok.txt",
  "dir/in.txt",
  "dir",
  ".",
  "hard.txt",
  "link.txt",
  "linkdir/in.txt",
  "pipe",
  "bin.dat",
  "bad.txt",
  "sparse.txt",
  "big.txt",
  "gw/in.txt",
  "missing.txt",
  "ok.txt/child",
  "../escape",
];

Deno.test("stat and read_text close every fd on success and on every refusal", () => {
  withWatchedWorkspace((ws) => {
    hostileTree(ws);
    for (const path of PATHS) {
      noLeak(`stat ${path}`, () => fileStat(ws.root, { path }));
      noLeak(`read ${path}`, () => fileReadText(ws.root, { path }));
    }
    noLeak("read bad offset", () => fileReadText(ws.root, { path: "ok.txt", offset: 99 }));
    noLeak(
      "read timeout",
      () => fileReadText(ws.root, { path: "ok.txt" }, { hooks: { now: steppingClock(200) } }),
    );
    const p = `${ws.dir}/ok.txt`;
    noLeak("read growth race", () =>
      fileReadText(ws.root, { path: "ok.txt" }, {
        hooks: { afterOpen: () => Deno.writeTextFileSync(p, "more\n", { append: true }) },
      }));
  });
});

Deno.test("glob and grep close every fd, including when a cap or the deadline fails them", () => {
  withWatchedWorkspace((ws) => {
    hostileTree(ws);
    noLeak("glob", () => fileGlob(ws.root, { pattern: "**" }));
    noLeak("grep", () => fileGrep(ws.root, { pattern: "needle" }));
    noLeak("grep regex", () => fileGrep(ws.root, { pattern: "ne?dle$", regex: true }));
    for (const path of PATHS) {
      noLeak(`grep in ${path}`, () => fileGrep(ws.root, { pattern: "x", path }));
      noLeak(`glob in ${path}`, () => fileGlob(ws.root, { pattern: "*", path }));
    }
    assertEquals(
      code(
        noLeak(
          "glob deadline",
          () => fileGlob(ws.root, { pattern: "**" }, { now: steppingClock(90) }),
        ),
      ),
      "file_timeout",
    );
    assertEquals(
      code(
        noLeak(
          "grep deadline",
          () => fileGrep(ws.root, { pattern: "x" }, { now: steppingClock(90) }),
        ),
      ),
      "file_timeout",
    );
    const d = Array.from({ length: 18 }, (_, i) => `d${i}`).join("/");
    ws.file(`${d}/deep.txt`, "needle\n");
    noLeak("grep depth", () => fileGrep(ws.root, { pattern: "needle" }));
    for (let i = 0; i < 1100; i++) Deno.symlinkSync("x", `${ws.dir}/dir/s${i}`);
    for (let i = 0; i < 1100; i++) Deno.writeTextFileSync(`${ws.dir}/d0/f${i}`, "");
    assertEquals(
      code(noLeak("glob files cap", () => fileGlob(ws.root, { pattern: "**" }, { now: () => 0 }))),
      "search_limit",
    );
    for (let i = 1100; i < 4200; i++) Deno.symlinkSync("x", `${ws.dir}/dir/s${i}`);
    assertEquals(
      code(noLeak("grep entries cap", () => fileGrep(ws.root, { pattern: "x" }, { now: () => 0 }))),
      "search_limit",
    );
  });
});

Deno.test("edit, write and commit close every fd on every outcome", () => {
  withWatchedWorkspace((ws) => {
    hostileTree(ws);
    const read = fileReadText(ws.root, { path: "ok.txt" });
    if (!read.ok) throw new Error(read.code);
    const rc = read.receipt;
    for (const path of PATHS) {
      const ctx = { receipt: path === "ok.txt" ? rc : null, binding };
      noLeak(`write ${path}`, () => prepareWrite(ws.root, { path, content: "n\n" }, ctx));
      noLeak(
        `edit ${path}`,
        () => prepareEdit(ws.root, { path, old_text: "needle", new_text: "pin" }, ctx),
      );
    }
    // Successful replace and create.
    const rep = prepareEdit(ws.root, { path: "ok.txt", old_text: "needle", new_text: "pin" }, {
      receipt: rc,
      binding,
    });
    if (!rep.ok) throw new Error(rep.code);
    noLeak("commit replace", () => commitMutation(ws.root, rep.plan, { binding }));
    noLeak("commit replace again (stale)", () => commitMutation(ws.root, rep.plan, { binding }));
    noLeak(
      "commit tampered",
      () => commitMutation(ws.root, { ...rep.plan, path: "x" }, { binding }),
    );
    const cr = prepareWrite(ws.root, { path: "dir/new.txt", content: "n\n" }, {
      receipt: null,
      binding,
    });
    if (!cr.ok) throw new Error(cr.code);
    noLeak("commit create", () => commitMutation(ws.root, cr.plan, { binding }));
    noLeak("commit create exists", () => commitMutation(ws.root, cr.plan, { binding }));
    // Exchange undone because another writer replaced the target meanwhile.
    const r2 = fileReadText(ws.root, { path: "ok.txt" });
    if (!r2.ok) throw new Error(r2.code);
    const w = prepareWrite(ws.root, { path: "ok.txt", content: "ours\n" }, {
      receipt: r2.receipt,
      binding,
    });
    if (!w.ok) throw new Error(w.code);
    noLeak("commit exchange undone", () =>
      commitMutation(ws.root, w.plan, {
        binding,
        hooks: {
          beforeSwap: () => {
            Deno.writeTextFileSync(`${ws.dir}/theirs`, "theirs\n", { mode: 0o600 });
            Deno.renameSync(`${ws.dir}/theirs`, `${ws.dir}/ok.txt`);
          },
        },
      }));
    // Lock held by another writer until the deadline.
    const r3 = fileReadText(ws.root, { path: "ok.txt" });
    if (!r3.ok) throw new Error(r3.code);
    const w3 = prepareWrite(ws.root, { path: "ok.txt", content: "ours\n" }, {
      receipt: r3.receipt,
      binding,
    });
    if (!w3.ok) throw new Error(w3.code);
    const other = Deno.openSync(ws.dir, { read: true });
    try {
      other.lockSync(true);
      noLeak(
        "commit lock timeout",
        () => commitMutation(ws.root, w3.plan, { binding, hooks: { now: steppingClock(100) } }),
      );
    } finally {
      other.close();
    }
  });
});

Deno.test("the temp sweep and the instruction file close every fd on every outcome", () => {
  withWatchedWorkspace((ws) => {
    for (let i = 0; i < 3; i++) ws.file(`dir/.agent-builder-write-${i}`, "stale");
    noLeak("sweep", () => cleanStaleWriteTemps(ws.root));
    Deno.symlinkSync("x", `${ws.dir}/dir/.agent-builder-write-link`);
    noLeak("sweep anomaly", () => cleanStaleWriteTemps(ws.root));
    noLeak("instruction missing", () => readInstructionFile(ws.dir));
    noLeak("instruction create", () => ensureDefaultInstructionFile(ws.dir));
    noLeak("instruction exists", () => ensureDefaultInstructionFile(ws.dir));
    noLeak("instruction read", () => readInstructionFile(ws.dir));
    Deno.linkSync(`${ws.dir}/agent-builder.md`, `${ws.dir}/second`);
    noLeak("instruction hardlinked", () => readInstructionFile(ws.dir));
    noLeak("instruction unsafe root", () => readInstructionFile(`${ws.dir}/dir/missing`));
    Deno.chmodSync(ws.dir, 0o777);
    try {
      noLeak("provision unsafe root", () => {
        try {
          ensureDefaultInstructionFile(ws.dir);
        } catch (err) {
          if (!(err instanceof Error)) throw err;
        }
      });
    } finally {
      Deno.chmodSync(ws.dir, 0o700);
    }
  });
});
