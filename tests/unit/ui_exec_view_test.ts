/** The command card's pure helpers [UI-10]: argv display quoting, exit lines, result parsing. */
import { assertEquals } from "../helpers/assert.ts";
import {
  argvLine,
  changesUrl,
  diffUrl,
  exitLine,
  parseCommandResult,
  quoteArg,
} from "../../ui/lib/exec_view.ts";

Deno.test("argv is shown as one line a shell would read back to the same items", () => {
  assertEquals(quoteArg("deno"), "deno");
  assertEquals(quoteArg("a b"), "'a b'");
  assertEquals(quoteArg("it's"), `'it'\\''s'`);
  assertEquals(quoteArg(""), "''");
  assertEquals(argvLine(["sed", "-i", "s/=/ = /", "main.ts"]), "sed -i 's/=/ = /' main.ts");
  assertEquals(argvLine("not a list"), "");
});

Deno.test("a command result parses into an exit line; anything else is null", () => {
  const r = parseCommandResult(JSON.stringify({
    outcome: "exited",
    exit_code: 1,
    signal: null,
    duration_ms: 1234,
    stdout: "not ok 1",
    stderr: "",
    changes: { total: 2 },
  }))!;
  assertEquals(exitLine(r), "exit 1 · 1.2 s");
  assertEquals(r.changes, 2);
  assertEquals(
    exitLine({ ...r, outcome: "signaled", signal: "SIGKILL", durationMs: 20 }),
    "SIGKILL · 20 ms",
  );
  assertEquals(exitLine({ ...r, outcome: "outcome_unknown", durationMs: null }), "outcome unknown");
  assertEquals(parseCommandResult('{"error":"exec_busy"}'), null);
  assertEquals(parseCommandResult("not json"), null);
  assertEquals(parseCommandResult(null), null);
});

Deno.test("change-set URLs encode every part", () => {
  assertEquals(changesUrl("a", "r", null), "/api/agents/a/runs/r/changes");
  assertEquals(changesUrl("a", "r", "call-1"), "/api/agents/a/runs/r/changes?call_id=call-1");
  assertEquals(
    diffUrl("a", "r", "call-1", "src/a b&c.ts"),
    "/api/agents/a/runs/r/changes/diff?call_id=call-1&path=src%2Fa%20b%26c.ts",
  );
});
