/**
 * The injected clock is the ONE clock of a call [TL-4] [TL-5] [TL-6]: every
 * deadline check inside grep, mutation planning and commit (including the
 * capture of each file) reads the same clock the deadline was set from. A
 * frozen clock far from the process clock must therefore never time out, and
 * the deadline tests elsewhere fail for the reason they claim.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileGrep } from "../../runtime/tools/file_grep.ts";
import { fileReadText } from "../../runtime/tools/file_read_text.ts";
import { prepareEdit } from "../../runtime/tools/file_edit.ts";
import { prepareWrite } from "../../runtime/tools/file_write.ts";
import { commitMutation } from "../../runtime/tools/mutation_commit.ts";
import { withWorkspace } from "./workspace_fixture.ts";

const binding = { agent_id: "agent-1", generation: 1, run_id: "run-1", call_id: "call-1" };
const code = (r: { ok: boolean; code?: string }) => (r.ok ? "ok" : r.code);
/** Frozen long before the process clock started: only a mixed-clock check can time out. */
const frozen = () => -1e9;

Deno.test("grep with a frozen injected clock never times out", () => {
  withWorkspace((ws) => {
    ws.file("a/one.txt", "needle\n");
    ws.file("two.txt", "needle\n");
    const r = fileGrep(ws.root, { pattern: "needle" }, { now: frozen });
    assertEquals(code(r), "ok");
    assert(r.ok && r.matches.length === 2);
    assertEquals(
      code(fileGrep(ws.root, { pattern: "needle", path: "two.txt" }, { now: frozen })),
      "ok",
    );
  });
});

Deno.test("edit planning and commit with a frozen injected clock never time out", () => {
  withWorkspace((ws) => {
    ws.file("e.txt", "alpha\n");
    const read = fileReadText(ws.root, { path: "e.txt" }, { hooks: { now: frozen } });
    assert(read.ok);
    const edit = prepareEdit(ws.root, { path: "e.txt", old_text: "alpha", new_text: "beta" }, {
      receipt: read.receipt,
      binding,
    }, { now: frozen });
    assertEquals(code(edit), "ok");
    const write = prepareWrite(ws.root, { path: "e.txt", content: "gamma\n" }, {
      receipt: read.receipt,
      binding,
    }, { now: frozen });
    assertEquals(code(write), "ok");
    assert(edit.ok);
    assertEquals(
      code(commitMutation(ws.root, edit.plan, { binding, hooks: { now: frozen } })),
      "ok",
    );
    assertEquals(Deno.readTextFileSync(`${ws.dir}/e.txt`), "beta\n");
  });
});
