/**
 * The longer agent loop [SB-8, CX-10] through a real server, a real confined
 * Worker and the scripted Ollama server: a 20-step Turn (reads, a grep, an
 * approved write, reads again) runs to completion with the oldest tool results
 * of the Turn collapsed to content-free receipts in the later model requests;
 * each refusal of the loop's bounds ends the Run `model_tool_loop` with
 * nothing of the refused response executed; cancel ends a long Turn at once
 * at a model step and at an approval step; the journal stays within its
 * bounds. A breach is a refused call that ran, a collapsed result whose
 * content still reaches the model, or a journal over its caps.
 */
import { DatabaseSync } from "node:sqlite";
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
import { FINALIZATION_MARKER } from "../../runtime/context/plan.ts";
import {
  RUN_DURABLE_BYTES_MAX,
  RUN_EVENTS_MAX,
  WORKER_CALLS_PER_RESPONSE_MAX,
  WORKER_IDENTICAL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../../runtime/limits.ts";
import type { FakeToolCall } from "../../tools/fake_ollama/frames.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

const workspace = (h: RunHarness) => `${h.server.home}/data/agents/${h.agent}/workspace`;

/** A text file of about 2.5 KB whose every line names it (so its content is recognisable). */
function writeFile(h: RunHarness, name: string): void {
  const line = `${name}: ${"lorem ipsum dolor sit amet ".repeat(3)}\n`;
  Deno.writeTextFileSync(`${workspace(h)}/${name}`, line.repeat(28), { mode: 0o600 });
}

const read = (path: string): FakeToolCall => ({ name: "file__read_text", arguments: { path } });
const stat = (path: string): FakeToolCall => ({ name: "file__stat", arguments: { path } });

/**
 * Queues a scripted Turn: `steps`, then (with `report`) the final answer. A Turn the loop
 * refuses ends at its last step, so nothing is left queued for the next one.
 */
function script(h: RunHarness, steps: FakeToolCall[][], report = true): void {
  const src = scenarios.scriptedTools(steps);
  h.ollama.enqueue(...Array.from({ length: steps.length + (report ? 1 : 0) }, () => src));
}

function journalRow(h: RunHarness, runId: string) {
  const db = new DatabaseSync(`${h.server.home}/data/agents/${h.agent}/state.sqlite`, {
    readOnly: true,
  });
  try {
    const run = db.prepare("SELECT event_count, durable_bytes, state FROM runs WHERE id = ?")
      .get(runId) as { event_count: number; durable_bytes: number; state: string };
    const ops = db.prepare("SELECT count(*) AS n FROM operations WHERE run_id = ?")
      .get(runId) as { n: number };
    return { ...run, operations: ops.n };
  } finally {
    db.close();
  }
}

/** Every durable event of a Run through the validated replay pages. */
async function replayAll(h: RunHarness, runId: string) {
  const events: { kind: string; payload: Record<string, unknown> }[] = [];
  let cursor: number | null = 0;
  while (cursor !== null) {
    const r = await h.api("GET", `/api/agents/${h.agent}/runs/${runId}/replay?cursor=${cursor}`);
    assertEquals(r.status, 200);
    events.push(...r.body.events);
    cursor = r.body.next_cursor;
  }
  return events;
}

const last = (frames: SseFrame[]) => frames.at(-1)!;
const loopEnd = (frames: SseFrame[]) => [last(frames).event, last(frames).data.payload.code];

Deno.test("a long Turn runs 20 steps with in-Turn collapse, and each bound of the loop holds", async (t) => {
  const h = await startRunHarness();
  try {
    for (let i = 1; i <= 8; i++) writeFile(h, `f${i}.txt`);
    Deno.writeTextFileSync(`${workspace(h)}/target.txt`, "needle: old value\n", { mode: 0o600 });

    await t.step(
      "20 steps: reads, a grep, an approved write, reads again, then the report",
      async () => {
        const conv = await newConversation(h);
        const steps: FakeToolCall[][] = [
          ...[1, 2, 3, 4, 5, 6, 7, 8].map((i) => [read(`f${i}.txt`)]),
          [{ name: "file__grep", arguments: { pattern: "needle" } }],
          [read("target.txt")],
          [{
            name: "file__write",
            arguments: { path: "target.txt", content: "needle: new value\n" },
          }],
          [read("target.txt")],
          ...[2, 3, 4, 5, 6, 7, 8].map((i) => [read(`f${i}.txt`)]),
        ];
        assertEquals(steps.length, 19, "19 tool steps and the answer: 20 model requests");
        const first = h.ollama.chats.length;
        script(h, steps);
        const r = await submit(h, conv, "survey the files, fix target.txt, survey again");
        assertEquals(r.status, 202);
        const asked = await readSse(h, r.body.run_id, {
          until: (f) => f.event === "permission.requested",
        });
        const permission = last(asked).data.payload.permission_id;
        const d = await h.api("POST", `/api/agents/${h.agent}/permissions/${permission}`, {
          decision: "approve",
        });
        assertEquals(d.status, 200);
        const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
        assertEquals(last(frames).event, "run.completed");
        assertEquals(last(frames).data.payload.model_calls, 20);
        assertEquals(last(frames).data.payload.tool_calls, 19);
        assertEquals(
          Deno.readTextFileSync(`${workspace(h)}/target.txt`),
          "needle: new value\n",
          "the approved write happened",
        );

        // The model request at step 20: every tool message is there, the oldest as receipts.
        const chats = h.ollama.chats.slice(first);
        assertEquals(chats.length, 20);
        const messages: { role: string; content: string; tool_name?: string }[] =
          chats[19].body.messages;
        assert(
          messages.some((m) =>
            m.role === "user" && m.content === "survey the files, fix target.txt, survey again"
          ),
          "the user message is kept",
        );
        const tools = messages.filter((m) => m.role === "tool");
        assertEquals(tools.length, 19);
        const receipt = /^\[agent-builder context receipt\] tool result collapsed/;
        assert(receipt.test(tools[0].content), tools[0].content.slice(0, 200));
        assert(tools[0].content.includes("call_id=call-1 tool=file/read_text"));
        assert(!tools[0].content.includes("lorem"), "a receipt carries no content");
        const newest = tools[18];
        assert(newest.content.includes("f8.txt: lorem"), "the newest result is kept whole");
        const collapsed = tools.filter((m) => receipt.test(m.content)).length;
        assert(collapsed > 0 && collapsed < 19, `collapsed ${collapsed}`);
        // Collapse takes the oldest first: among the (large) reads, receipts form a prefix.
        const reads = tools.filter((m) =>
          m.tool_name === "file__read_text" &&
          (receipt.test(m.content) || m.content.includes("lorem"))
        );
        assertEquals(reads.length, 15, "the reads of the 2.5 KB files");
        const n = reads.filter((m) => receipt.test(m.content)).length;
        for (let i = 0; i < reads.length; i++) {
          assertEquals(receipt.test(reads[i].content), i < n);
        }
        // The first requests were small enough to need no collapse.
        const early = chats[1].body.messages.filter((m: { role: string }) => m.role === "tool");
        assert(!receipt.test(early[0].content));

        // The report names what the tools returned, receipts included.
        const answer = frames.filter((f) => f.event === "assistant.block.delta")
          .map((f) => f.data.payload.text).join("");
        assert(answer.startsWith("The tools returned:"), answer.slice(0, 100));
        const lines = answer.trim().split("\n");
        assertEquals(lines.length, 20);
        assert(
          lines[1].startsWith("1. file__read_text: [agent-builder context receipt]"),
          lines[1],
        );
        assert(lines[19].startsWith("19. file__read_text: {"), lines[19]);
        assert(!lines[19].includes("context receipt"), lines[19]);

        const events = await replayAll(h, r.body.run_id);
        const started = events.filter((e) => e.kind === "model.request.started");
        assertEquals(started.length, 20);
        assertEquals(started[19].payload.collapsed_results, collapsed);
        const row = journalRow(h, r.body.run_id);
        assertEquals(row.event_count, events.length);
        assert(row.event_count <= RUN_EVENTS_MAX, `events ${row.event_count}`);
        assert(row.durable_bytes <= RUN_DURABLE_BYTES_MAX, `bytes ${row.durable_bytes}`);
        assertEquals(row.operations, 19);
        const turn = await waitTurn(h, conv, r.body.run_id);
        assertEquals(turn.state, "completed");
      },
    );

    await t.step(
      `the full tool budget (${WORKER_TOOL_CALLS_MAX}) then a call after the finalization marker`,
      async () => {
        const conv = await newConversation(h);
        const per = WORKER_CALLS_PER_RESPONSE_MAX;
        const steps: FakeToolCall[][] = [];
        for (let i = 0; i < WORKER_TOOL_CALLS_MAX; i += per) {
          steps.push(Array.from({ length: per }, (_, j) => stat(`f${1 + ((i + j) % 8)}.txt`)));
        }
        // Each of the 8 files is stat'ed 3 times: the repetition rule at its limit, not past it.
        const flat = steps.flat();
        const keys = new Map<string, number>();
        for (const c of flat) keys.set(JSON.stringify(c), (keys.get(JSON.stringify(c)) ?? 0) + 1);
        assert([...keys.values()].every((n) => n <= WORKER_IDENTICAL_CALLS_MAX));
        const first = h.ollama.chats.length;
        // After the budget the model still calls a tool.
        script(h, [...steps, [read("f1.txt")]], false);
        const r = await submit(h, conv, "use every tool call you have");
        const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
        assertEquals(loopEnd(frames), ["run.failed", "model_tool_loop"]);
        const chats = h.ollama.chats.slice(first);
        const finalized = chats.at(-1)!.body;
        assert(!finalized.tools || finalized.tools.length === 0, "the narrowed call has no tools");
        assertEquals(finalized.messages.at(-1), { role: "system", content: FINALIZATION_MARKER });
        assertEquals(journalRow(h, r.body.run_id).operations, WORKER_TOOL_CALLS_MAX);
        const requested = frames.filter((f) => f.event === "tool.call.requested").length;
        assertEquals(requested, WORKER_TOOL_CALLS_MAX, "nothing ran after the marker");
      },
    );

    await t.step("a response that would make the 25th tool call is refused whole", async () => {
      const conv = await newConversation(h);
      const per = WORKER_CALLS_PER_RESPONSE_MAX;
      const names = Array.from({ length: 8 }, (_, i) => `f${i + 1}.txt`);
      // stat ×8, read ×8, stat ×7 (identical at most twice) = 23 calls, then 2 more in one response.
      const calls = [...names.map(stat), ...names.map(read), ...names.slice(0, 7).map(stat)];
      const steps: FakeToolCall[][] = [];
      for (let i = 0; i < calls.length; i += per) steps.push(calls.slice(i, i + per));
      assertEquals(calls.length, WORKER_TOOL_CALLS_MAX - 1);
      script(h, [...steps, [read("target.txt"), {
        name: "file__glob",
        arguments: { pattern: "*" },
      }]], false);
      const r = await submit(h, conv, "one call too many");
      const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
      assertEquals(loopEnd(frames), ["run.failed", "model_tool_loop"]);
      assertEquals(journalRow(h, r.body.run_id).operations, WORKER_TOOL_CALLS_MAX - 1);
    });

    await t.step(
      `${WORKER_CALLS_PER_RESPONSE_MAX + 1} calls in one response: nothing runs`,
      async () => {
        const conv = await newConversation(h);
        const five = Array.from(
          { length: WORKER_CALLS_PER_RESPONSE_MAX + 1 },
          (_, i) => read(`f${i + 1}.txt`),
        );
        script(h, [five], false);
        const r = await submit(h, conv, "five at once");
        const frames = await readSse(h, r.body.run_id);
        assertEquals(loopEnd(frames), ["run.failed", "model_tool_loop"]);
        assertEquals(
          frames.filter((f) => f.event === "tool.call.requested").length,
          0,
        );
        assertEquals(journalRow(h, r.body.run_id).operations, 0);
      },
    );

    await t.step(
      `the identical call a ${WORKER_IDENTICAL_CALLS_MAX + 1}th time: model_tool_loop`,
      async () => {
        const conv = await newConversation(h);
        const same = Array.from({ length: WORKER_IDENTICAL_CALLS_MAX + 1 }, () => [read("f1.txt")]);
        script(h, same, false);
        const r = await submit(h, conv, "again and again");
        const frames = await readSse(h, r.body.run_id);
        assertEquals(loopEnd(frames), ["run.failed", "model_tool_loop"]);
        assertEquals(journalRow(h, r.body.run_id).operations, WORKER_IDENTICAL_CALLS_MAX);
      },
    );

    await t.step("cancel during a model call at step 6 ends the Run cancelled", async () => {
      const conv = await newConversation(h);
      const first = h.ollama.chats.length;
      h.ollama.enqueue(
        ...[1, 2, 3, 4, 5].map((i) => scenarios.toolCall([read(`f${i}.txt`)])),
        scenarios.stall(),
      );
      const r = await submit(h, conv, "take your time");
      await readSse(h, r.body.run_id, {
        until: (f) => f.event === "assistant.block.delta",
        timeoutMs: 30_000,
      });
      assertEquals(h.ollama.chats.length - first, 6);
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`, {});
      assertEquals(c.status, 202);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(last(frames).event, "run.cancelled");
      assertEquals(journalRow(h, r.body.run_id).operations, 5);
    });

    await t.step(
      "cancel while an approval waits at step 4 ends the Run and expires it",
      async () => {
        const conv = await newConversation(h);
        script(h, [
          [read("f1.txt")],
          [read("f2.txt")],
          [read("target.txt")],
          [{ name: "file__write", arguments: { path: "target.txt", content: "never\n" } }],
        ], false);
        const r = await submit(h, conv, "write after three reads");
        await readSse(h, r.body.run_id, { until: (f) => f.event === "permission.requested" });
        const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`, {});
        assertEquals(c.status, 202);
        const frames = await readSse(h, r.body.run_id);
        assertEquals(last(frames).event, "run.cancelled");
        const decided = frames.find((f) => f.event === "permission.decided")!;
        assertEquals(decided.data.payload.decision, "expired");
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/target.txt`), "needle: new value\n");
        const pending = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(pending.body, { pending: [] });
      },
    );
  } finally {
    await h.close();
  }
});
