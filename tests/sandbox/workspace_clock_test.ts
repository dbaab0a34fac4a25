/**
 * The injected clock is the ONE clock of a call [TL-4] [TL-5] [TL-6]: every
 * deadline check inside grep, mutation planning and commit (including the
 * capture of each file) reads the same clock the deadline was set from. A
 * frozen clock far from the process clock must therefore never time out, and
 * the deadline tests elsewhere fail for the reason they claim.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileGlob } from "../../runtime/tools/file_glob.ts";
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

/** A clock that reads 0 once (when the deadline is set) and `later` ever after. */
function jumpTo(later: number): () => number {
  let first = true;
  return () => {
    if (first) {
      first = false;
      return 0;
    }
    return later;
  };
}

Deno.test("the deadlines are exactly 0.5 s (read), 1 s (glob/grep) and 2 s (edit/write)", () => {
  withWorkspace((ws) => {
    ws.file("d/f.txt", "needle\n");
    const read = (t: number) =>
      code(fileReadText(ws.root, { path: "d/f.txt" }, { hooks: { now: jumpTo(t) } }));
    assertEquals([read(500), read(501)], ["ok", "file_timeout"]);
    const grep = (t: number) => code(fileGrep(ws.root, { pattern: "needle" }, { now: jumpTo(t) }));
    assertEquals([grep(1000), grep(1001)], ["ok", "file_timeout"]);
    const glob = (t: number) => code(fileGlob(ws.root, { pattern: "**" }, { now: jumpTo(t) }));
    assertEquals([glob(1000), glob(1001)], ["ok", "file_timeout"]);
    const r = fileReadText(ws.root, { path: "d/f.txt" });
    assert(r.ok);
    const ctx = { receipt: r.receipt, binding };
    const plan = (t: number) =>
      prepareWrite(ws.root, { path: "d/f.txt", content: "x\n" }, ctx, { now: jumpTo(t) });
    assertEquals([code(plan(2000)), code(plan(2001))], ["ok", "file_timeout"]);
    const p = plan(0);
    assert(p.ok);
    const commit = (t: number) =>
      code(commitMutation(ws.root, p.plan, { binding, hooks: { now: jumpTo(t) } }));
    assertEquals(commit(2001), "file_timeout");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/d/f.txt`), "needle\n");
    assertEquals([...Deno.readDirSync(`${ws.dir}/d`)].map((e) => e.name), ["f.txt"]);
    assertEquals(commit(2000), "ok");
    assertEquals(Deno.readTextFileSync(`${ws.dir}/d/f.txt`), "x\n");
  });
});
