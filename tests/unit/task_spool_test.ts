/**
 * The Task output spool [EX-6]: up to TASK_OUTPUT_MAX_BYTES everything is
 * kept; past it the file is cut to its tail (never above the bound, at a
 * code-point boundary) and the dropped bytes are counted exactly; the tail
 * reads (in memory while it runs, from the file after) agree.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { OutputSpool, readSpoolTail } from "../../runtime/tasks/output_spool.ts";
import { TASK_OUTPUT_MAX_BYTES, TASK_OUTPUT_TRIM_TO_BYTES } from "../../runtime/limits.ts";

function withDir(fn: (dir: string) => void): void {
  const dir = Deno.makeTempDirSync();
  try {
    fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("exactly 1 MiB is kept whole; one byte more cuts the front and counts it", () => {
  withDir((dir) => {
    const s = new OutputSpool(`${dir}/a.log`);
    for (let i = 0; i < 16; i++) s.append("a".repeat(TASK_OUTPUT_MAX_BYTES / 16));
    assertEquals([s.total, s.omitted], [TASK_OUTPUT_MAX_BYTES, 0]);
    assertEquals(Deno.statSync(`${dir}/a.log`).size, TASK_OUTPUT_MAX_BYTES);
    s.append("b");
    const size = Deno.statSync(`${dir}/a.log`).size;
    assertEquals([s.total, s.omitted, size], [
      TASK_OUTPUT_MAX_BYTES + 1,
      TASK_OUTPUT_MAX_BYTES + 1 - TASK_OUTPUT_TRIM_TO_BYTES,
      TASK_OUTPUT_TRIM_TO_BYTES,
    ]);
    const t = s.tail(10);
    assertEquals(t, { text: "aaaaaaaaab", earlier: TASK_OUTPUT_MAX_BYTES + 1 - 10 });
    s.close();
    assertEquals(readSpoolTail(`${dir}/a.log`, 10, s.omitted), t);
  });
});

Deno.test("a spool never exceeds its bound and cuts at a code-point boundary", () => {
  withDir((dir) => {
    const s = new OutputSpool(`${dir}/b.log`, 64, 40);
    let total = 0;
    for (let i = 0; i < 50; i++) {
      const chunk = `é${i}€`;
      s.append(chunk);
      total += new TextEncoder().encode(chunk).length;
      const size = Deno.statSync(`${dir}/b.log`).size;
      assert(size <= 64, `${size}`);
      assertEquals(size + s.omitted, total);
    }
    const text = new TextDecoder("utf-8", { fatal: true }).decode(
      Deno.readFileSync(`${dir}/b.log`),
    );
    assert(text.endsWith("é49€"), text);
    assertEquals(s.tail(1000).text, text);
    s.close();
  });
});

Deno.test("a missing spool reads as null (a Task whose root went)", () => {
  assertEquals(readSpoolTail("/nonexistent/output.log", 10, 0), null);
});
