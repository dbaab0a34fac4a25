/**
 * What the model and the operator's record get of a command [EX-4, TL-3]:
 * the model's result always fits one projection (≤ 4096 bytes) and keeps
 * the output's tail with a fixed marker; exec/run keeps the head; the stored
 * record stays within its bound even for output that JSON escaping inflates.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  execRunResult,
  headOf,
  modelResult,
  recordBody,
  tailOf,
} from "../../runtime/exec/run_exec.ts";
import type { ChangeSet } from "../../runtime/exec/change_set.ts";
import type { CommandResult } from "../../runtime/exec/runner_types.ts";
import { EXEC_RECORD_MAX_BYTES, TOOL_RESULT_PROJECTION_MAX_BYTES } from "../../runtime/limits.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

const emptySet: ChangeSet = {
  digest: "0".repeat(64),
  entries: [],
  total: 0,
  truncated: false,
  counts: { added: 0, modified: 0, deleted: 0 },
  left_out: 0,
  diffs: new Map(),
};

function result(stdout: string, stderr: string): CommandResult {
  return {
    outcome: "exited",
    exit_code: 1,
    signal: null,
    duration_ms: 1200,
    stdout: { text: stdout, total_bytes: bytes(stdout), truncated: false },
    stderr: { text: stderr, total_bytes: bytes(stderr), truncated: false },
    pid_namespace: true,
  };
}

Deno.test("a small command result reaches the model whole", () => {
  const r = JSON.parse(modelResult(result("ok 1\n", "warn\n"), emptySet));
  assertEquals([r.exit_code, r.stdout, r.stderr, r.changes.total], [1, "ok 1\n", "warn\n", 0]);
});

Deno.test("64 KiB of output is cut to its tail with a marker and the result fits 4096 bytes", () => {
  const lines = Array.from({ length: 3000 }, (_, i) => `line ${i} é\u0001"`).join("\n");
  for (const [out, err] of [[lines, ""], ["", lines], [lines, lines]]) {
    const text = modelResult(result(out, err), emptySet);
    assert(bytes(text) <= TOOL_RESULT_PROJECTION_MAX_BYTES, String(bytes(text)));
    const r = JSON.parse(text);
    const kept = out ? r.stdout : r.stderr;
    assert(kept.startsWith("[… ") && kept.includes(" earlier bytes omitted …]\n"), kept);
    assert(kept.endsWith(`line 2999 é\u0001"`), kept.slice(-40));
  }
});

Deno.test("a change set of 256 paths still fits: the summary lists 16", () => {
  const entries = Array.from({ length: 256 }, (_, i) => ({
    path: `src/deeply/nested/directory/file-${String(i).padStart(3, "0")}.ts`,
    kind: "modified" as const,
    old_size: 1,
    new_size: 2,
    binary: false,
    old_digest: "a".repeat(64),
    new_digest: "b".repeat(64),
    diff_bytes: 10,
    note: null,
    base: null,
  }));
  const set = { ...emptySet, entries, total: 300, truncated: true };
  const text = modelResult(result("x".repeat(60_000), ""), set);
  assert(bytes(text) <= TOOL_RESULT_PROJECTION_MAX_BYTES);
  const r = JSON.parse(text);
  assertEquals([r.changes.paths.length, r.changes.total, r.changes.truncated], [16, 300, true]);
});

Deno.test("exec/run keeps the head of its output (the first diagnostics)", () => {
  const diags = Array.from({ length: 400 }, (_, i) => `a.ts:${i + 1}:1 TS2322 bad`).join("\n");
  const text = execRunResult({
    profile: "runtime-compile",
    outcome: "exited",
    exit_code: 1,
    duration_ms: 5,
    output: diags,
    truncated: false,
  });
  assert(bytes(text) <= TOOL_RESULT_PROJECTION_MAX_BYTES);
  const r = JSON.parse(text);
  assert(r.output.startsWith("a.ts:1:1 TS2322 bad\na.ts:2:1"), r.output.slice(0, 40));
  assert(/more bytes omitted …\]$/.test(r.output));
  assertEquals(r.output_truncated, true);
});

Deno.test("head and tail cuts never split a code point", () => {
  const s = "é".repeat(100);
  assert(!tailOf(s, 51).includes("\uFFFD"));
  assert(!headOf(s, 101).includes("\uFFFD"));
  assertEquals(tailOf("short", 10), "short");
});

Deno.test("a record of control-heavy output stays within its bound", () => {
  const noisy = "\u0001".repeat(64 * 1024);
  const r = result(noisy, noisy);
  const body = recordBody({ ...r, argv: ["x"], change_set: {} });
  assert(bytes(body) <= EXEC_RECORD_MAX_BYTES, String(bytes(body)));
  const parsed = JSON.parse(body);
  assertEquals(parsed.stdout.truncated, true);
  assertEquals(parsed.argv, ["x"]);
});
