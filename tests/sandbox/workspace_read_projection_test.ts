/**
 * One read_text window always reaches the model whole [TL-3] [TL-4]: the
 * window is cut so the executor's whole JSON result (text escapes and
 * envelope included) fits the 4096-byte projection, instead of every full
 * window turning into a "result withheld" receipt. Goes through the real
 * executor (runtime/runs/tool_exec.ts) and the real projection.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { executeReadTool } from "../../runtime/runs/tool_exec.ts";
import { BUILTIN_TOOL_SPECS } from "../../runtime/tools/catalog.ts";
import { newProjectionBudget, projectToolResult } from "../../runtime/tools/projection.ts";
import { withWorkspace } from "./workspace_fixture.ts";

const spec = BUILTIN_TOOL_SPECS.find((s) => s.id === "file/read_text")!;

/** Reads `path` window by window; every window must project whole and the text reassemble. */
function readAllInline(dir: string, path: string): string {
  let offset = 0;
  let text = "";
  for (let i = 0; i < 1000; i++) {
    const r = executeReadTool(spec, dir, { path, offset });
    assert(r.ok, `read ${path}@${offset}: ${r.ok ? "" : r.code}`);
    const proj = projectToolResult(`c${i}`, r.text, newProjectionBudget());
    assert(proj.ok && proj.kind === "full", `${path}@${offset}: ${r.text.length} chars withheld`);
    const v = JSON.parse(r.text) as { text: string; next_offset: number | null };
    text += v.text;
    if (v.next_offset === null) return text;
    assert(v.next_offset > offset, "every window makes progress");
    offset = v.next_offset;
  }
  throw new Error("too many windows");
}

Deno.test("every read_text window of a large file reaches the model whole, escapes and envelope included", () => {
  withWorkspace((ws) => {
    const files: Record<string, string> = {
      "flat.txt": "a".repeat(20_000),
      "code.ts": Array.from({ length: 900 }, (_, i) => `const v${i} = "x\\ty";`).join("\n"),
      "quotes.txt": '"\\'.repeat(5000),
      "tabs.txt": "\t\r\n".repeat(3000),
      "wide.txt": "€😀é".repeat(2000),
    };
    const deep = Array.from({ length: 31 }, (_, i) => `"q${i}"`.padEnd(28, "d")).join("/");
    files[`${deep}/"long".txt`] = '"'.repeat(9000);
    for (const [path, content] of Object.entries(files)) {
      ws.file(path, content);
      assertEquals(readAllInline(ws.dir, path), content, path);
    }
  });
});
