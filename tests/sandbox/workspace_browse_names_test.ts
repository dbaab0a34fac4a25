/** The operator's workspace browser shows names with hidden characters escaped [OP-1, #18]. */
import { isHiddenCodePoint } from "../../runtime/display_name.ts";
import { listWorkspaceDir } from "../../runtime/workspace/operator_files.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { withWorkspace } from "./workspace_fixture.ts";

Deno.test("a workspace listing shows ESC, newline and U+202E in names escaped", () => {
  withWorkspace((ws) => {
    ws.file("clean.txt", "x\n");
    ws.file("a\u001b[2Jb.txt", "x\n");
    ws.file("line\nbreak.txt", "x\n");
    ws.file("invoice\u202Etxt.exe", "x\n");
    const r = listWorkspaceDir(ws.dir, ".");
    assert(r.ok);
    const names = r.entries.map((e) => e.name).sort();
    assertEquals(names, [
      "a\\u{1B}[2Jb.txt",
      "clean.txt",
      "invoice\\u{202E}txt.exe",
      "line\\u{A}break.txt",
    ]);
    for (const n of names) assert([...n].every((ch) => !isHiddenCodePoint(ch.codePointAt(0)!)), n);
  });
});
