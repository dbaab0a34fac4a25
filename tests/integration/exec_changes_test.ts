/**
 * exec/command and exec/apply through a real Run [EX-2..5]: the scripted
 * model asks for a command; after its approval the program runs in the
 * runner on a scratch copy and its change comes back as a change set (the
 * model sees exit code, output and the summary; the operator reads every
 * path and diff through `GET …/changes`); exec/apply shows the whole diff
 * in one approval and commits it; a file edited in the workspace meanwhile
 * is refused `workspace_changed` while the others apply; bad argv, programs
 * and working directories are fixed tool errors with nothing run.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

/** Waits for the next permission request after `seen` approvals and returns its id and frame. */
async function nextPermission(h: RunHarness, runId: string, seen: number) {
  const frames = await readSse(h, runId, {
    until: (f) => f.event === "permission.requested" && --seen < 0,
    timeoutMs: 60_000,
  });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  return req.data.payload as { permission_id: string; tool_id: string; preview: string };
}

async function approve(h: RunHarness, id: string, decision: "approve" | "deny" = "approve") {
  const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, { decision });
  assertEquals(d.status, 200, JSON.stringify(d.body));
}

async function finished(h: RunHarness, runId: string): Promise<SseFrame[]> {
  return await readSse(h, runId, {
    until: (f) => f.event.startsWith("run.") && f.event !== "run.started",
    timeoutMs: 120_000,
  });
}

function completed(frames: SseFrame[], callId: string) {
  return frames.find((f) => f.event === "tool.call.completed" && f.data.payload.call_id === callId)!
    .data.payload;
}

function scratchRoot(h: RunHarness): string {
  return `${h.server.home}/.runtime/agents/${h.agent}/scratch`;
}

function entries(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
}

Deno.test("exec/command and exec/apply through a real Run", async (t) => {
  const h = await startRunHarness();
  try {
    await t.step(
      "a formatter-like command's change comes back as a change set and exec/apply commits it",
      async () => {
        Deno.writeTextFileSync(`${workspace(h)}/main.ts`, "const a=1\nconst b=2\n", {
          mode: 0o600,
        });
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "exec__command",
            arguments: { argv: ["sed", "-i", "s/=/ = /", "main.ts"] },
          }]),
          scenarios.toolCall([{ name: "exec__apply", arguments: {} }]),
          scenarios.text("Formatted and applied."),
        );
        const r = await submit(h, conv, "format main.ts");
        assertEquals(r.status, 202);
        const runId = r.body.run_id;
        const ask1 = await nextPermission(h, runId, 0);
        assertEquals(ask1.tool_id, "exec/command");
        assert(ask1.preview.includes("$ sed -i 's/=/ = /' main.ts"), ask1.preview);
        assert(ask1.preview.includes("cwd: ."), ask1.preview);
        await approve(h, ask1.permission_id);
        const ask2 = await nextPermission(h, runId, 1);
        assertEquals(ask2.tool_id, "exec/apply");
        // The workspace is untouched until the apply is approved.
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/main.ts`), "const a=1\nconst b=2\n");
        assert(ask2.preview.includes("M main.ts"), ask2.preview);
        assert(ask2.preview.includes("--- a/main.ts\n+++ b/main.ts\n"), ask2.preview);
        assert(ask2.preview.includes("-const a=1\n-const b=2\n+const a = 1\n"), ask2.preview);
        // The operator reads the whole change set while the approval waits.
        const cs = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/changes`);
        assertEquals(cs.status, 200);
        assertEquals(cs.body.call_id, "call-1");
        assertEquals(cs.body.command.argv, ["sed", "-i", "s/=/ = /", "main.ts"]);
        assertEquals(cs.body.command.exit_code, 0);
        assertEquals(
          cs.body.change_set.entries.map((e: { path: string; kind: string; applied: null }) =>
            `${e.kind}:${e.path}:${e.applied}`
          ),
          ["modified:main.ts:null"],
        );
        const diff = await h.api(
          "GET",
          `/api/agents/${h.agent}/runs/${runId}/changes/diff?path=main.ts`,
        );
        assertEquals(diff.status, 200);
        assert(diff.body.diff.includes("+const b = 2"), diff.body.diff);
        await approve(h, ask2.permission_id);
        const frames = await finished(h, runId);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(
          Deno.readTextFileSync(`${workspace(h)}/main.ts`),
          "const a = 1\nconst b = 2\n",
        );
        // The model saw the command's result and the change-set summary.
        const cmd = JSON.parse(completed(frames, "call-1").result);
        assertEquals(cmd.exit_code, 0);
        assertEquals(cmd.changes.paths, ["M main.ts"]);
        const apply = JSON.parse(completed(frames, "call-2").result);
        assertEquals(apply.applied, 1);
        const toolMsg = h.ollama.chats.at(-2)!.body.messages.filter((m: { role: string }) =>
          m.role === "tool"
        );
        assert(toolMsg[0].content.includes('"exit_code":0'), toolMsg[0].content);
        const after = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/changes`);
        assertEquals(after.body.change_set.entries[0].applied, "applied");
        // The change-set routes: strict queries, unknown ids and paths are fixed errors.
        const base = `/api/agents/${h.agent}/runs/${runId}/changes`;
        const code = async (path: string) => {
          const res = await h.api("GET", path);
          return `${res.status}:${res.body?.error?.code}`;
        };
        assertEquals(await code(`${base}?bogus=1`), "422:schema_violation");
        assertEquals(await code(`${base}/diff`), "422:schema_violation");
        assertEquals(await code(`${base}/diff?path=nope.ts`), "404:change_set_not_found");
        assertEquals(await code(`${base}?call_id=call-2`), "404:change_set_not_found");
        assertEquals(await code(`${base}?call_id=x`), "404:change_set_not_found");
        assertEquals(
          await code(`/api/agents/${h.agent}/runs/${crypto.randomUUID()}/changes`),
          "404:run_not_found",
        );
        assertEquals(
          await code(`/api/agents/${crypto.randomUUID()}/runs/${runId}/changes`),
          "404:agent_not_found",
        );
        const anon = await fetch(`${h.server.url}${base}`);
        await anon.body?.cancel();
        assertEquals(anon.status, 401);
        // The scratch copy went with the Run's terminal.
        assertEquals(entries(scratchRoot(h)), []);
      },
    );

    await t.step(
      "deno fmt, the product's own runtime, formats a file on the scratch copy",
      async () => {
        Deno.writeTextFileSync(`${workspace(h)}/fmt_me.ts`, "const  x={a:1}\n", { mode: 0o600 });
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "exec__command",
            arguments: { argv: ["deno", "fmt", "fmt_me.ts"], timeout_s: 60 },
          }]),
          scenarios.toolCall([{ name: "exec__apply", arguments: { paths: ["fmt_me.ts"] } }]),
          scenarios.text("Formatted."),
        );
        const r = await submit(h, conv, "deno fmt fmt_me.ts");
        const runId = r.body.run_id;
        await approve(h, (await nextPermission(h, runId, 0)).permission_id);
        const ask = await nextPermission(h, runId, 1);
        assert(ask.preview.includes("+const x = { a: 1 };"), ask.preview);
        await approve(h, ask.permission_id);
        const frames = await finished(h, runId);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const cmd = JSON.parse(completed(frames, "call-1").result);
        assertEquals([cmd.outcome, cmd.exit_code], ["exited", 0]);
        assertEquals(cmd.changes.paths, ["M fmt_me.ts"]);
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/fmt_me.ts`), "const x = { a: 1 };\n");
      },
    );

    await t.step(
      "a file edited in the workspace between command and apply is refused workspace_changed",
      async () => {
        Deno.writeTextFileSync(`${workspace(h)}/a.txt`, "x=1\n", { mode: 0o600 });
        Deno.writeTextFileSync(`${workspace(h)}/b.txt`, "y=2\n", { mode: 0o600 });
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "exec__command",
            arguments: { argv: ["sed", "-i", "s/=/ = /", "a.txt", "b.txt"], timeout_s: 30 },
          }]),
          scenarios.toolCall([{ name: "exec__apply", arguments: {} }]),
          scenarios.text("Done."),
        );
        const r = await submit(h, conv, "format both");
        const runId = r.body.run_id;
        await approve(h, (await nextPermission(h, runId, 0)).permission_id);
        const ask = await nextPermission(h, runId, 1);
        assertEquals(ask.tool_id, "exec/apply");
        Deno.writeTextFileSync(`${workspace(h)}/b.txt`, "y=operator\n");
        await approve(h, ask.permission_id);
        const frames = await finished(h, runId);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const apply = JSON.parse(completed(frames, "call-2").result);
        assertEquals(apply.applied, 1);
        assertEquals(
          apply.results.map((x: { path: string; outcome: string }) => `${x.path}:${x.outcome}`),
          ["a.txt:applied", "b.txt:workspace_changed"],
        );
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/a.txt`), "x = 1\n");
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/b.txt`), "y=operator\n");
        const cs = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/changes`);
        assertEquals(
          cs.body.change_set.entries.map((e: { applied: string }) => e.applied),
          ["applied", "workspace_changed"],
        );
      },
    );

    await t.step("bad argv, programs and working directories run nothing", async () => {
      // [arguments, code, asks for approval first]: only a cwd that passes the argument
      // rules but is not a directory of the scratch copy gets as far as the approval.
      const runs: [Record<string, unknown>, string, boolean][][] = [
        [
          [{ argv: ["/bin/sh", "-c", "touch pwned"] }, "exec_unknown_program", false],
          [{ argv: ["touch", "a\u0000b"] }, "exec_argv_invalid", false],
        ],
        [
          [{ argv: ["touch", "pwned"], cwd: "../.." }, "exec_cwd_invalid", false],
          [{ argv: [] }, "exec_argv_invalid", false],
        ],
        [
          [{ argv: ["touch", "x".repeat(4097)] }, "tool_invalid_arguments", false],
          [{ argv: ["touch", "pwned"], cwd: "no-such-dir" }, "exec_cwd_invalid", true],
        ],
      ];
      for (const calls of runs) {
        const conv = await newConversation(h);
        h.ollama.enqueue(
          ...calls.map(([args]) =>
            scenarios.toolCall([{ name: "exec__command", arguments: args }])
          ),
          scenarios.text("Refused."),
        );
        const r = await submit(h, conv, "try bad commands");
        const runId = r.body.run_id;
        let asked = 0;
        for (const [, , asks] of calls) {
          if (!asks) continue;
          await approve(h, (await nextPermission(h, runId, asked)).permission_id);
          asked++;
        }
        const frames = await finished(h, runId);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(frames.filter((f) => f.event === "permission.requested").length, asked);
        for (const [n, [, code]] of calls.entries()) {
          assertEquals(completed(frames, `call-${n + 1}`).code, code);
        }
      }
      assertEquals(entries(workspace(h)).includes("pwned"), false);
    });

    await t.step(
      "a failing node --test of a workspace project reaches the model, live and in the result",
      async () => {
        Deno.mkdirSync(`${workspace(h)}/proj`, { mode: 0o700 });
        Deno.writeTextFileSync(
          `${workspace(h)}/proj/sum.test.mjs`,
          'import test from "node:test";\nimport assert from "node:assert/strict";\n' +
            'test("sum adds", () => assert.equal(1 + 1, 3));\n',
          { mode: 0o600 },
        );
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "exec__command",
            arguments: { argv: ["node", "--test"], cwd: "proj", timeout_s: 60 },
          }]),
          scenarios.text("The test fails: 2 is not 3."),
        );
        const r = await submit(h, conv, "run the tests");
        const runId = r.body.run_id;
        await approve(h, (await nextPermission(h, runId, 0)).permission_id);
        const frames = await finished(h, runId);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const result = JSON.parse(completed(frames, "call-1").result);
        assertEquals(result.outcome, "exited");
        assertEquals(result.exit_code, 1);
        assert(result.stdout.includes("not ok 1 - sum adds"), result.stdout);
        // The model's next request carries that output.
        const tool = h.ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
          m.role === "tool"
        );
        assert(tool.content.includes("not ok 1 - sum adds"), tool.content);
        // Live output went out as ephemeral deltas of the same call while it ran.
        const live = frames.filter((f) => f.event === "tool.output.delta");
        assert(live.length > 0);
        assert(live.every((f) => f.data.payload.call_id === "call-1"));
        assert(
          live.map((f) => f.data.payload.text).join("").includes("not ok 1 - sum adds"),
        );
        // A test run changes nothing in the workspace project: an empty change set.
        assertEquals(result.changes.total, 0);
      },
    );

    await t.step("exec/apply without a command in the Run is change_set_not_found", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "exec__apply", arguments: {} }]),
        scenarios.text("Nothing to apply."),
      );
      const r = await submit(h, conv, "apply");
      const frames = await finished(h, r.body.run_id);
      assert(!frames.some((f) => f.event === "permission.requested"));
      assertEquals(completed(frames, "call-1").code, "change_set_not_found");
      const cs = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/changes`);
      assertEquals(cs.status, 404);
      assertEquals(cs.body.error.code, "change_set_not_found");
    });
  } finally {
    await h.close();
  }
});
