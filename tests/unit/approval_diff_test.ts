/**
 * Approval diffs [TL-12]: real multi-hunk unified diffs with three lines of
 * context, the ≤ 4 KiB preview and the ≤ 256 KiB full diff kept one click
 * away — each bound hit at the limit and one past it.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  APPROVAL_DIFF_EDIT_LENGTH_MAX,
  APPROVAL_FULL_DIFF_MAX_BYTES,
  EDIT_PREVIEW_MAX_BYTES,
} from "../../runtime/limits.ts";
import {
  keptFullDiff,
  lineDiff,
  PREVIEW_TRUNCATED_MARKER,
  previewOf,
  singleHunkDiff,
} from "../../runtime/tools/mutation_plan.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;
const lines = (n: number, f = (i: number) => `line ${i}`) =>
  Array.from({ length: n }, (_, i) => f(i)).join("\n") + "\n";

Deno.test("two changes far apart are two hunks, each with three lines of context", () => {
  const before = lines(40);
  const after = before.replace("line 5\n", "LINE 5\n").replace("line 30\n", "LINE 30\n");
  const d = lineDiff("src/a.txt", before, after);
  assertEquals(d.split("\n").filter((l) => l.startsWith("@@")), [
    "@@ -3,7 +3,7 @@",
    "@@ -28,7 +28,7 @@",
  ]);
  assert(d.startsWith("--- a/src/a.txt\n+++ b/src/a.txt\n"));
  // Three lines before and after each change, nothing else of the file.
  assert(d.includes(" line 2\n line 3\n line 4\n-line 5\n+LINE 5\n line 6\n line 7\n line 8\n"));
  assert(!d.includes(" line 1\n") && !d.includes(" line 9\n") && !d.includes(" line 20\n"));
});

Deno.test("changes closer than twice the context share one hunk", () => {
  const before = lines(20);
  const after = before.replace("line 5\n", "X\n").replace("line 10\n", "Y\n");
  const d = lineDiff("a.txt", before, after);
  assertEquals(d.split("\n").filter((l) => l.startsWith("@@")), ["@@ -3,12 +3,12 @@"]);
});

Deno.test("a create diffs against /dev/null", () => {
  assertEquals(
    lineDiff("new.txt", null, "a\nb\n"),
    "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n",
  );
});

Deno.test("past the edit-length bound the exact single hunk is used, deterministically", () => {
  const n = APPROVAL_DIFF_EDIT_LENGTH_MAX + 10;
  const before = lines(n, (i) => `a${i}`);
  const after = lines(n, (i) => `b${i}`);
  const d = lineDiff("big.txt", before, after);
  assertEquals(d, singleHunkDiff("big.txt", before, after));
  assertEquals(d.split("\n").filter((l) => l.startsWith("@@")).length, 1);
  assertEquals(lineDiff("big.txt", before, after), d);
});

Deno.test("previewOf() keeps a diff of exactly 4 KiB whole and cuts one byte more with the marker", () => {
  const at = "x".repeat(EDIT_PREVIEW_MAX_BYTES);
  assertEquals(previewOf(at), at);
  const past = at + "y";
  const p = previewOf(past);
  assert(bytes(p) <= EDIT_PREVIEW_MAX_BYTES);
  assert(p.endsWith(PREVIEW_TRUNCATED_MARKER));
  assert(past.startsWith(p.slice(0, p.length - PREVIEW_TRUNCATED_MARKER.length)));
});

Deno.test("previewOf() never splits a UTF-8 sequence", () => {
  const p = previewOf("é".repeat(EDIT_PREVIEW_MAX_BYTES));
  assert(bytes(p) <= EDIT_PREVIEW_MAX_BYTES);
  assert(p.isWellFormed() && !p.includes("\uFFFD"));
});

Deno.test("keptFullDiff() keeps a diff of exactly 256 KiB and drops one byte more", () => {
  const at = "z".repeat(APPROVAL_FULL_DIFF_MAX_BYTES);
  assertEquals(keptFullDiff(at), at);
  assertEquals(keptFullDiff(at + "z"), null);
  // Bytes, not characters: 256 Ki two-byte characters are past the bound.
  assertEquals(keptFullDiff("é".repeat(APPROVAL_FULL_DIFF_MAX_BYTES / 2 + 1)), null);
});

Deno.test("a multi-hunk diff of a large file keeps the preview bounded and the full diff whole", () => {
  const before = lines(3000, (i) => `line ${i} of a somewhat longer text`);
  let after = before;
  for (let i = 100; i < 3000; i += 100) after = after.replace(`line ${i} of`, `LINE ${i} of`);
  const d = lineDiff("big.txt", before, after);
  assertEquals(d.split("\n").filter((l) => l.startsWith("@@")).length, 29);
  assert(bytes(d) > EDIT_PREVIEW_MAX_BYTES);
  assert(bytes(previewOf(d)) <= EDIT_PREVIEW_MAX_BYTES);
  assertEquals(keptFullDiff(d), d);
});
