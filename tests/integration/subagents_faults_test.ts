/**
 * Subagents under faults [LC-2]: the wall (`subagent_timeout`, child
 * cancelled), the parent's cancel cascading to the child, two delegations at
 * once (the server-wide bound), and a server killed with a child running
 * (both Runs and the delegation `interrupted`, nothing re-run). The wall is
 * shortened only through the test entry (AGENT_BUILDER_TEST_SUBAGENT_WALL_MS).
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  waitTurn,
} from "../helpers/runs.ts";
import {
  approveDelegation,
  conversationOf,
  createAgent,
  delegateCall,
  delegateResult,
  slowAnswer,
  sseOf,
  statuses,
  submitIn,
} from "../helpers/subagents.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { SUBAGENTS_ACTIVE_MAX } from "../../runtime/limits.ts";

// deno-lint-ignore no-explicit-any
async function delegations(h: RunHarness): Promise<any[]> {
  return (await h.api("GET", `/api/agents/${h.agent}/delegations`)).body.delegations;
}

/** Starts a delegation whose child is busy streaming its answer; returns both Run ids. */
async function busyChild(
  h: RunHarness,
  helper: string,
  conv: string,
): Promise<{ run: string; child: string }> {
  h.ollama.enqueue(delegateCall(helper, "take your time"), slowAnswer());
  const run = await submitIn(h, h.agent, conv, "delegate and wait");
  await approveDelegation(h, run);
  const started = await readSse(h, run, {
    until: (f) => f.event === "subagent.status" && f.data.payload.state === "running",
  });
  const child = statuses(started)[0].run_id as string;
  await sseOf(h, helper, child, { until: (f) => f.event === "assistant.block.delta" });
  return { run, child };
}

Deno.test("a child past the wall is cancelled and the parent gets subagent_timeout", async () => {
  // 8 s: margin for the child's Worker to reach its (slow) answer on a loaded machine.
  const h = await startRunHarness({ env: { AGENT_BUILDER_TEST_SUBAGENT_WALL_MS: "8000" } });
  try {
    const helper = await createAgent(h, "Slow helper");
    const conv = await newConversation(h);
    const { run, child } = await busyChild(h, helper, conv);
    h.ollama.enqueue(scenarios.text("The helper timed out."));
    const frames = await readSse(h, run);
    assertEquals(frames.at(-1)!.event, "run.completed");
    const result = delegateResult(frames);
    assertEquals([result.outcome, result.code], ["error", "subagent_timeout"]);
    assertEquals(statuses(frames).at(-1).state, "timeout");
    const childEnd = (await sseOf(h, helper, child)).at(-1)!;
    assertEquals([childEnd.event, childEnd.data.payload.reason], ["run.cancelled", "user"]);
    const [row] = await delegations(h);
    assertEquals([row.state, row.code], ["timeout", "subagent_timeout"]);
    assertEquals(row.mailbox.length, 1, "no answer reached the mailbox");
  } finally {
    await h.close();
  }
});

Deno.test("cancelling the parent cancels its child, and two delegations may run at once", async (t) => {
  const h = await startRunHarness();
  try {
    const helper = await createAgent(h, "Helper");
    const second = await createAgent(h, "Second");

    await t.step("the parent's cancel cascades to the child", async () => {
      const conv = await newConversation(h);
      const { run, child } = await busyChild(h, helper, conv);
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${run}/cancel`);
      assertEquals(c.status, 202);
      assertEquals((await readSse(h, run)).at(-1)!.event, "run.cancelled");
      assertEquals((await sseOf(h, helper, child)).at(-1)!.event, "run.cancelled");
      const [row] = await delegations(h);
      assertEquals([row.state, row.code], ["cancelled", "run_cancelled"]);
      // Both Turns ended; the child Conversation takes new work again.
      assertEquals((await waitTurn(h, conv, run)).state, "cancelled");
    });

    await t.step(
      "the operator cancelling the child ends the delegation, the parent goes on",
      async () => {
        const conv = await newConversation(h);
        const { run, child } = await busyChild(h, helper, conv);
        h.ollama.enqueue(scenarios.text("The helper was stopped."));
        assertEquals(
          (await h.api("POST", `/api/agents/${helper}/runs/${child}/cancel`)).status,
          202,
        );
        const frames = await readSse(h, run);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(delegateResult(frames).code, "subagent_cancelled");
      },
    );

    await t.step(
      "a child the Run service does not admit (runs_busy) leaves no Conversation and no row",
      async () => {
        // Three Runs waiting on an approval (active, no model call) and the parent take every
        // Run slot: the child finds none.
        const busy: string[] = [];
        for (let i = 0; i < 3; i++) {
          const conv = await conversationOf(h, second);
          h.ollama.enqueue(scenarios.toolCall([{
            name: "file__write",
            arguments: { path: `f${i}.txt`, content: "x" },
          }]));
          const run = await submitIn(h, second, conv, `keep busy ${i}`);
          await sseOf(h, second, run, { until: (f) => f.event === "permission.requested" });
          busy.push(run);
        }
        const sessions = async () =>
          (await h.api("GET", `/api/agents/${helper}/sessions`)).body.sessions.length;
        const sessionsBefore = await sessions();
        const rowsBefore = (await delegations(h)).length;
        const conv = await newConversation(h);
        h.ollama.enqueue(delegateCall(helper, "no room"), scenarios.text("No room for it."));
        const run = await submitIn(h, h.agent, conv, "delegate with every slot taken");
        await approveDelegation(h, run);
        const frames = await readSse(h, run);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(delegateResult(frames).code, "runs_busy");
        assertEquals(statuses(frames), []);
        assertEquals(await sessions(), sessionsBefore);
        assertEquals((await delegations(h)).length, rowsBefore);
        for (const r of busy) {
          await h.api("POST", `/api/agents/${second}/runs/${r}/cancel`);
          assertEquals((await sseOf(h, second, r)).at(-1)!.event, "run.cancelled");
        }
      },
    );

    await t.step(
      `${SUBAGENTS_ACTIVE_MAX} delegations run at once; no further Run fits`,
      async () => {
        const a = await busyChild(h, helper, await newConversation(h));
        const b = await busyChild(h, second, await newConversation(h));
        assertEquals((await delegations(h)).filter((d) => d.state === "running").length, 2);
        // Two parents and two children take every Run slot: a third parent cannot even start.
        const third = await h.api(
          "POST",
          `/api/agents/${h.agent}/sessions/${await newConversation(h)}/runs`,
          { message: "one more" },
        );
        assertEquals(codeOf(third), "runs_busy");
        for (const r of [a, b]) {
          await h.api("POST", `/api/agents/${h.agent}/runs/${r.run}/cancel`);
          assertEquals((await readSse(h, r.run)).at(-1)!.event, "run.cancelled");
        }
        const helperChild = await sseOf(h, helper, a.child);
        const secondChild = await sseOf(h, second, b.child);
        assertEquals([helperChild.at(-1)!.event, secondChild.at(-1)!.event], [
          "run.cancelled",
          "run.cancelled",
        ]);
      },
    );
  } finally {
    await h.close();
  }
});

Deno.test("a server killed with a child running interrupts both Runs and re-runs nothing; an unavailable delegate is refused", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    const helper = await createAgent(h, "Helper");
    const broken = await createAgent(h, "Broken");
    const conv = await conversationOf(h, h.agent);
    const { run, child } = await busyChild(h, helper, conv);
    await h.server.kill();
    const chatsBefore = ollama.chats.length;
    // An Agent whose database is damaged while the server is down starts `unavailable`.
    const db = `${h.server.home}/data/agents/${broken}/state.sqlite`;
    for (const x of ["-wal", "-shm"]) {
      try {
        Deno.removeSync(`${db}${x}`);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
    }
    Deno.writeFileSync(db, crypto.getRandomValues(new Uint8Array(8192)));

    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const parentTurn = await waitTurn(h2, conv, run);
      assertEquals([parentTurn.state, parentTurn.terminal.code], [
        "interrupted",
        "run_interrupted",
      ]);
      const childEnd = (await sseOf(h2, helper, child)).find((f) => f.event === "run.failed")!;
      assertEquals(childEnd.data.payload.code, "run_interrupted");
      const [row] = await delegations(h2);
      assertEquals([row.state, row.code], ["interrupted", "run_interrupted"]);
      // Nothing was re-run: no model request since the restart.
      assertEquals(ollama.chats.length, chatsBefore);
      assert(row.finished_at !== null);

      // A delegation to the unavailable Agent is refused before anything is asked or created.
      const agents = (await h2.api("GET", "/api/agents")).body.agents;
      assertEquals(agents.find((a: { id: string }) => a.id === broken).state, "unavailable");
      ollama.enqueue(delegateCall(broken, "hello?"), scenarios.text("It is unavailable."));
      const conv2 = await conversationOf(h2, h2.agent);
      const run2 = await submitIn(h2, h2.agent, conv2, "delegate to the broken one");
      const frames = await readSse(h2, run2);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(delegateResult(frames).code, "subagent_target_unavailable");
      assertEquals(frames.filter((f) => f.event === "permission.requested").length, 0);
      assertEquals((await delegations(h2)).length, 1);
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});
