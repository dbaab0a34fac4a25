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
import { answerSegments, cardSubject } from "../../ui/lib/answer_blocks.ts";
import { applyMessage, emptyRun, LIVE_OUTPUT_MAX_CHARS } from "../../ui/lib/run_store.ts";

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

Deno.test("a command's card carries its Run, Agent and live output, and its argv as subject", () => {
  const env = (seq: number, kind: string, payload: Record<string, unknown>) => ({
    seq,
    kind,
    ts: 1,
    payload,
    run_id: "r1",
    agent_id: "a1",
    conversation_id: "c1",
  });
  const segs = answerSegments(
    [env(1, "tool.call.requested", {
      call_id: "call-1",
      tool_id: "exec/command",
      args: {
        argv: ["deno", "test"],
      },
    })],
    new Map(),
    new Map([["call-1", "running 3 tests\n"]]),
  );
  const card = segs[0].kind === "tool" ? segs[0].card : null;
  assertEquals(
    [card?.runId, card?.agentId, card?.liveOutput, cardSubject(card!.args)],
    ["r1", "a1", "running 3 tests\n", "deno test"],
  );
});

Deno.test("live command output is kept per call id and bounded; it never becomes a durable event", () => {
  let v = emptyRun("a1", "c1", "r1");
  const msg = (seq: number, text: string) => ({
    id: String(seq),
    event: "tool.output.delta",
    data: JSON.stringify({
      v: 1,
      // Ids as the server sends them (UUIDs): the UI drops a frame that breaks the contract.
      run_id: "00000000-0000-4000-8000-0000000000a1",
      agent_id: "00000000-0000-4000-8000-0000000000a2",
      conversation_id: "00000000-0000-4000-8000-0000000000a3",
      seq: 3,
      kind: "tool.output.delta",
      ts: 1,
      payload: { call_id: "call-1", stream: "stdout", text },
    }),
  });
  v = applyMessage(v, msg(4, "one\n"));
  v = applyMessage(v, msg(5, "two\n"));
  assertEquals(v.liveOutput.get("call-1"), "one\ntwo\n");
  assertEquals(v.events, []);
  v = applyMessage(v, msg(6, "x".repeat(LIVE_OUTPUT_MAX_CHARS)));
  assertEquals(v.liveOutput.get("call-1")!.length, LIVE_OUTPUT_MAX_CHARS);
});
