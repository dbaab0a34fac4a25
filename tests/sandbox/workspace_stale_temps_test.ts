/** Startup cleanup of `.agent-builder-write-*` temps [TL-6]: ≤ 16 per call, anomalies fail closed. */
import { assertEquals } from "../helpers/assert.ts";
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

Deno.test("cleanup fails closed on a symlink, hardlink or foreign file in the temp namespace", () => {
  withWorkspace((ws) => {
    ws.file("target.txt", "precious\n");
    Deno.symlinkSync(`${ws.dir}/target.txt`, `${ws.dir}/.agent-builder-write-link`);
    const r = cleanStaleWriteTemps(ws.root);
    assertEquals(r.ok ? "ok" : r.code, "path_symlink");
    Deno.removeSync(`${ws.dir}/.agent-builder-write-link`);
    Deno.linkSync(`${ws.dir}/target.txt`, `${ws.dir}/.agent-builder-write-hard`);
    const h = cleanStaleWriteTemps(ws.root);
    assertEquals(h.ok ? "ok" : h.code, "file_hardlinked");
    Deno.removeSync(`${ws.dir}/.agent-builder-write-hard`);
    const f = ws.file(".agent-builder-write-foreign", "x");
    Deno.chownSync(f, 4242, 4242);
    const o = cleanStaleWriteTemps(ws.root);
    assertEquals(o.ok ? "ok" : o.code, "path_unsafe_owner");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/target.txt`), "precious\n");
  });
});
