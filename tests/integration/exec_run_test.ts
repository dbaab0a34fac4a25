/**
 * exec/run through a real Run [TL-7, EX-1]: the catalog, policy and approval
 * path carry both profiles to the runner — runtime-compile reports a type
 * error with its position to the model, bounded-bash runs a builtin, and a
 * bounded-bash line with a pipe is refused before any approval with nothing
 * run.
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

async function approveNext(h: RunHarness, runId: string, seen: number): Promise<void> {
  const frames = await readSse(h, runId, {
    until: (f) => f.event === "permission.requested" && --seen < 0,
    timeoutMs: 60_000,
  });
  const req = frames.at(-1)!;
  if (req.event !== "permission.requested") console.error(JSON.stringify(req.data));
  assertEquals(req.event, "permission.requested");
  assertEquals(req.data.payload.tool_id, "exec/run");
  const d = await h.api(
    "POST",
    `/api/agents/${h.agent}/permissions/${req.data.payload.permission_id}`,
    {
      decision: "approve",
    },
  );
  assertEquals(d.status, 200);
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

Deno.test("exec/run through a real Run", async (t) => {
  const h = await startRunHarness();
  try {
    await t.step("runtime-compile reports a type error with its position", async () => {
      Deno.writeTextFileSync(
        `${workspace(h)}/bad.ts`,
        'export const n: number = "not a number";\n',
        { mode: 0o600 },
      );
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{
          name: "exec__run",
          arguments: { profile: "runtime-compile", path: "bad.ts" },
        }]),
        scenarios.toolCall([{
          name: "exec__run",
          arguments: { profile: "bounded-bash", command: "printf 'hello %s' world" },
        }]),
        scenarios.text("bad.ts has a type error."),
      );
      const r = await submit(h, conv, "check bad.ts");
      const runId = r.body.run_id;
      await approveNext(h, runId, 0);
      await approveNext(h, runId, 1);
      const frames = await finished(h, runId);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const compile = JSON.parse(completed(frames, "call-1").result);
      assertEquals(compile.profile, "runtime-compile");
      assert(/bad\.ts:1:14 TS2322 /.test(compile.output), JSON.stringify(compile));
      const bash = JSON.parse(completed(frames, "call-2").result);
      assertEquals(bash.output, "hello world");
      assertEquals(bash.exit_code, 0);
      const tool = h.ollama.chats.at(-2)!.body.messages.find((m: { role: string }) =>
        m.role === "tool"
      );
      assert(tool.content.includes("TS2322"), tool.content);
    });

    await t.step("bounded-bash refuses a pipe before any approval", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{
          name: "exec__run",
          arguments: { profile: "bounded-bash", command: "printf pwned | tee pwned" },
        }]),
        scenarios.toolCall([{
          name: "exec__run",
          arguments: { profile: "bounded-bash", command: "printf x", path: "bad.ts" },
        }]),
        scenarios.text("Refused."),
      );
      const r = await submit(h, conv, "pipe");
      const frames = await finished(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assert(!frames.some((f) => f.event === "permission.requested"));
      assertEquals(completed(frames, "call-1").code, "bash_syntax_refused");
      assertEquals(completed(frames, "call-2").code, "tool_invalid_arguments");
      let exists = true;
      try {
        Deno.statSync(`${workspace(h)}/pwned`);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
        exists = false;
      }
      assertEquals(exists, false);
    });
  } finally {
    await h.close();
  }
});
