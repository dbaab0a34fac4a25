/**
 * An Agent's own agent-loop bounds [SB-8] through the real server and a real
 * confined Worker: PATCH sets max_model_calls, max_tool_calls and
 * run_deadline_s (each at its bounds and refused one past them with nothing
 * written, null restores the product's), and a Run of that Agent obeys them —
 * its tool budget narrows the ToolSet sooner and a further call ends
 * `model_tool_loop` with nothing executed; its deadline ends a Run that waits
 * on an approval with `model_turn_deadline` and the approval expired.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import { FINALIZATION_MARKER } from "../../runtime/context/plan.ts";
import {
  AGENT_RUN_DEADLINE_MIN_S,
  RUN_DEADLINE_MS,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../../runtime/limits.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

Deno.test("an Agent's own loop bounds: set by PATCH within the product's, obeyed by its Runs", async (t) => {
  const h = await startRunHarness();
  try {
    const path = `/api/agents/${h.agent}`;

    await t.step("each bound is accepted at its limits and refused one past them", async () => {
      const cases: [string, number, number][] = [
        ["max_model_calls", 1, WORKER_MODEL_CALLS_MAX],
        ["max_tool_calls", 0, WORKER_TOOL_CALLS_MAX],
        ["run_deadline_s", AGENT_RUN_DEADLINE_MIN_S, RUN_DEADLINE_MS / 1000],
      ];
      for (const [field, low, high] of cases) {
        for (const v of [low, high]) {
          const r = await h.api("PATCH", path, { [field]: v });
          assertEquals([r.status, r.body.agent[field]], [200, v], `${field}=${v}`);
        }
        for (const v of [low - 1, high + 1, 1.5, "3"]) {
          const r = await h.api("PATCH", path, { [field]: v, reasoning: false });
          assertEquals([r.status, codeOf(r)], [422, "schema_violation"], `${field}=${v}`);
        }
        const kept = await h.api("GET", path);
        assertEquals(kept.body.agent[field], high, "a refused PATCH writes nothing");
        assertEquals(kept.body.agent.reasoning, true);
        const reset = await h.api("PATCH", path, { [field]: null });
        assertEquals([reset.status, reset.body.agent[field]], [200, null]);
      }
    });

    await t.step(
      "max_tool_calls 1: the second call is narrowed and a tool there loops",
      async () => {
        const r0 = await h.api("PATCH", path, { max_tool_calls: 1 });
        assertEquals(r0.status, 200);
        const conv = await newConversation(h);
        const first = h.ollama.chats.length;
        h.ollama.enqueue(
          scenarios.toolCall([{ name: "file__glob", arguments: { pattern: "*" } }]),
          scenarios.toolCall([{ name: "file__glob", arguments: { pattern: "*.md" } }]),
        );
        const r = await submit(h, conv, "list twice");
        const frames = await readSse(h, r.body.run_id);
        const end = frames.at(-1)!;
        assertEquals([end.event, end.data.payload.code], ["run.failed", "model_tool_loop"]);
        assertEquals(frames.filter((f) => f.event === "tool.call.requested").length, 1);
        const second = h.ollama.chats[first + 1].body;
        assert(!second.tools || second.tools.length === 0, "the narrowed call has no tools");
        assertEquals(second.messages.at(-1), { role: "system", content: FINALIZATION_MARKER });
        await h.api("PATCH", path, { max_tool_calls: null });
      },
    );

    await t.step(
      "run_deadline_s: an approval wait past it ends model_turn_deadline, expired",
      async () => {
        await h.api("PATCH", path, { run_deadline_s: AGENT_RUN_DEADLINE_MIN_S });
        const conv = await newConversation(h);
        h.ollama.enqueue(
          scenarios.toolCall([{
            name: "file__write",
            arguments: { path: "late.txt", content: "never\n" },
          }]),
        );
        const t0 = Date.now();
        const r = await submit(h, conv, "write late.txt");
        const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
        const elapsed = Date.now() - t0;
        assert(frames.some((f) => f.event === "permission.requested"));
        const decided = frames.find((f) => f.event === "permission.decided")!;
        assertEquals(decided.data.payload.decision, "expired");
        const end = frames.at(-1)!;
        assertEquals([end.event, end.data.payload.code], ["run.failed", "model_turn_deadline"]);
        assert(elapsed >= AGENT_RUN_DEADLINE_MIN_S * 1000, `ended after ${elapsed} ms`);
        const pending = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(pending.body, { pending: [] });
        await h.api("PATCH", path, { run_deadline_s: null });
      },
    );
  } finally {
    await h.close();
  }
});
