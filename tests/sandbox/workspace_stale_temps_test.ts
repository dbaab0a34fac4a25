/** Startup cleanup of `.agent-builder-write-*` temps [TL-6]: ≤ 16 per call, anomalies fail closed. */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  ensureDefaultInstructionFile,
  readInstructionFile,
} from "../../runtime/workspace/instruction_file.ts";
import { cleanStaleWriteTemps } from "../../runtime/tools/stale_temps.ts";
import { withWorkspace } from "./workspace_fixture.ts";

Deno.test("cleanup removes at most 16 stale temps and reports the rest", () => {
  withWorkspace((ws) => {
    for (let i = 0; i < 12; i++) ws.file(`.agent-builder-write-a${i}`, "stale");
    for (let i = 0; i < 8; i++) ws.file(`sub/.agent-builder-write-b${i}`, "stale");
    ws.file("keep.txt", "keep\n");
    const first = cleanStaleWriteTemps(ws.root);
    assertEquals(first, { ok: true, removed: 16, remaining: 4 });
    const second = cleanStaleWriteTemps(ws.root);
    assertEquals(second, { ok: true, removed: 4, remaining: 0 });
    assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name).sort(), ["keep.txt", "sub"]);
    assertEquals([...Deno.readDirSync(`${ws.dir}/sub`)].length, 0);
  });
});

Deno.test("cleanup removes exactly 16 temps, and leaves the 17th for the next start", () => {
  withWorkspace((ws) => {
    for (let i = 0; i < 16; i++) ws.file(`.agent-builder-write-e${i}`, "stale");
    assertEquals(cleanStaleWriteTemps(ws.root), { ok: true, removed: 16, remaining: 0 });
    for (let i = 0; i < 17; i++) ws.file(`.agent-builder-write-f${i}`, "stale");
    assertEquals(cleanStaleWriteTemps(ws.root), { ok: true, removed: 16, remaining: 1 });
    assertEquals([...Deno.readDirSync(ws.dir)].length, 1);
  });
});

Deno.test("cleanup fails closed on a symlink, directory or foreign file in the temp namespace", () => {
  withWorkspace((ws) => {
    ws.file("target.txt", "precious\n");
    Deno.symlinkSync(`${ws.dir}/target.txt`, `${ws.dir}/.agent-builder-write-link`);
    const r = cleanStaleWriteTemps(ws.root);
    assertEquals(r.ok ? "ok" : r.code, "path_symlink");
    Deno.removeSync(`${ws.dir}/.agent-builder-write-link`);
    ws.mkdir(".agent-builder-write-dir");
    const d = cleanStaleWriteTemps(ws.root);
    assertEquals(d.ok ? "ok" : d.code, "file_not_regular");
    Deno.removeSync(`${ws.dir}/.agent-builder-write-dir`);
    const f = ws.file(".agent-builder-write-foreign", "x");
    Deno.chownSync(f, 4242, 4242);
    const o = cleanStaleWriteTemps(ws.root);
    assertEquals(o.ok ? "ok" : o.code, "path_unsafe_owner");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/target.txt`), "precious\n");
  });
});

Deno.test("cleanup removes a hardlinked temp by name only, keeping the other link's content", () => {
  withWorkspace((ws) => {
    ws.file("target.txt", "precious\n");
    Deno.linkSync(`${ws.dir}/target.txt`, `${ws.dir}/.agent-builder-write-hard`);
    assertEquals(cleanStaleWriteTemps(ws.root), { ok: true, removed: 1, remaining: 0 });
    assertEquals(Deno.readTextFileSync(`${ws.dir}/target.txt`), "precious\n");
    assertEquals(Deno.statSync(`${ws.dir}/target.txt`).nlink, 1);
  });
});

Deno.test("a crash between the instruction file's link and its temp unlink is repaired by the sweep", () => {
  withWorkspace((ws) => {
    // The state a crash right after linkat() leaves: temp and name share one inode.
    assertEquals(ensureDefaultInstructionFile(ws.dir), "created");
    Deno.linkSync(`${ws.dir}/agent-builder.md`, `${ws.dir}/.agent-builder-write-0011223344556677`);
    const before = readInstructionFile(ws.dir);
    assertEquals(before.ok ? "ok" : before.code, "file_hardlinked");
    assertEquals(ensureDefaultInstructionFile(ws.dir), "exists");
    assertEquals(cleanStaleWriteTemps(ws.root), { ok: true, removed: 1, remaining: 0 });
    const after = readInstructionFile(ws.dir);
    assert(after.ok && after.present, "the instruction file reads again after the sweep");
  });
});
