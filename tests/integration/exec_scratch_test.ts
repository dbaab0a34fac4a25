/**
 * Scratch copies through a real Run [EX-3]: a workspace past the scratch
 * bound is `workspace_too_large` with nothing run, and a server killed during a
 * command leaves no scratch copy after its restart, with the command's
 * operation `outcome_unknown`.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { SCRATCH_BYTES_MAX } from "../../runtime/limits.ts";

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

function scratchRoot(h: RunHarness): string {
  return `${h.server.home}/.runtime/agents/${h.agent}/scratch`;
}

function listing(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw err;
  }
}

async function approveNext(h: RunHarness, runId: string, seen: number): Promise<void> {
  const frames = await readSse(h, runId, {
    until: (f) => f.event === "permission.requested" && --seen < 0,
    timeoutMs: 120_000,
  });
  const req = frames.at(-1)!;
  assertEquals(req.event, "permission.requested");
  const id = req.data.payload.permission_id;
  const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, {
    decision: "approve",
  });
  assertEquals(d.status, 200);
}

function completed(frames: SseFrame[], callId: string) {
  return frames.find((f) => f.event === "tool.call.completed" && f.data.payload.call_id === callId)!
    .data.payload;
}

Deno.test("a workspace past the scratch bound is workspace_too_large and the command never runs", async () => {
  const h = await startRunHarness();
  try {
    // A sparse file one byte past 512 MiB: its logical size counts, and the refusal comes
    // before anything is copied or run. (The entry bound at 20,000 and 20,001 is proven with
    // the real constant in tests/unit/exec_scratch_test.ts, where creating 20,000 files is
    // affordable on tmpfs.)
    const f = Deno.openSync(`${workspace(h)}/huge.bin`, { create: true, write: true, mode: 0o600 });
    f.truncateSync(SCRATCH_BYTES_MAX + 1);
    f.close();
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "exec__command", arguments: { argv: ["touch", "ran"] } }]),
      scenarios.text("The workspace is too large for a scratch copy."),
    );
    const r = await submit(h, conv, "run something");
    const runId = r.body.run_id;
    await approveNext(h, runId, 0);
    const frames = await readSse(h, runId, {
      until: (f) => f.event.startsWith("run.") && f.event !== "run.started",
      timeoutMs: 120_000,
    });
    assertEquals(frames.at(-1)!.event, "run.completed");
    assertEquals(completed(frames, "call-1").code, "workspace_too_large");
    const tool = h.ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
      m.role === "tool"
    );
    assert(tool.content.includes("workspace_too_large"), tool.content);
    const cs = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/changes`);
    assertEquals(cs.body.error.code, "change_set_not_found");
    assertEquals(listing(scratchRoot(h)), []);
  } finally {
    await h.close();
  }
});

Deno.test("a server killed during a command restarts without its scratch copy, the command outcome_unknown", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    Deno.writeTextFileSync(`${workspace(h)}/keep.txt`, "kept\n", { mode: 0o600 });
    const conv = await newConversation(h);
    ollama.enqueue(
      scenarios.toolCall([{
        name: "exec__command",
        arguments: { argv: ["sh", "-c", "echo started; sleep 100"], timeout_s: 120 },
      }]),
    );
    const r = await submit(h, conv, "run something long");
    const runId = r.body.run_id;
    await approveNext(h, runId, 0);
    await readSse(h, runId, {
      until: (f) =>
        f.event === "tool.output.delta" && String(f.data.payload.text).includes("started"),
      timeoutMs: 60_000,
    });
    assertEquals(listing(scratchRoot(h)).length, 1, "the Run's scratch copy exists");
    await h.server.kill();

    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const turn = await waitTurn(h2, conv, runId);
      assertEquals(turn.state, "interrupted");
      assertEquals(listing(scratchRoot(h2)), [], "no scratch copy remains after the restart");
      const audit = await h2.api("GET", `/api/agents/${h2.agent}/runs/${runId}/capability-audit`);
      const ops = audit.body.entries.filter((e: { kind: string }) => e.kind === "operation");
      assertEquals(
        ops.map((e: { tool_id: string; state: string }) => `${e.tool_id}:${e.state}`),
        ["exec/command:outcome_unknown"],
      );
      assertEquals(Deno.readTextFileSync(`${workspace(h2)}/keep.txt`), "kept\n");
      assert(listing(workspace(h2)).includes("keep.txt"));
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});

Deno.test("cancelling a Run during a command ends it promptly and removes its scratch copy", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{
        name: "exec__command",
        arguments: { argv: ["sh", "-c", "echo started; sleep 100"], timeout_s: 120 },
      }]),
    );
    const r = await submit(h, conv, "run something long, then stop");
    const runId = r.body.run_id;
    await approveNext(h, runId, 0);
    await readSse(h, runId, {
      until: (f) =>
        f.event === "tool.output.delta" && String(f.data.payload.text).includes("started"),
      timeoutMs: 60_000,
    });
    assertEquals(listing(scratchRoot(h)).length, 1);
    const c = await h.api("POST", `/api/agents/${h.agent}/runs/${runId}/cancel`);
    assertEquals(c.status, 202);
    const frames = await readSse(h, runId, {
      until: (f) => f.event.startsWith("run.") && f.event !== "run.started",
      timeoutMs: 60_000,
    });
    assertEquals(frames.at(-1)!.event, "run.cancelled");
    assertEquals((await waitTurn(h, conv, runId)).state, "cancelled");
    assertEquals(listing(scratchRoot(h)), [], "the scratch copy went with the terminal");
  } finally {
    await h.close();
  }
});
