/**
 * Subagents end to end [LC-2]: the parent's model calls `agent/delegate`, the
 * operator approves it, a child Run of the delegate Agent answers in a new
 * Conversation titled by its parent, and the answer is the parent's tool
 * result. Real server, real Workers, the scripted Ollama for both models.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { newConversation, readSse, type RunHarness, startRunHarness } from "../helpers/runs.ts";
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
import { SUBAGENT_ANSWER_MAX_BYTES, SUBAGENT_MESSAGE_MAX_BYTES } from "../../runtime/limits.ts";

// deno-lint-ignore no-explicit-any
async function delegations(h: RunHarness, agent = h.agent): Promise<any[]> {
  const r = await h.api("GET", `/api/agents/${agent}/delegations`);
  assertEquals(r.status, 200);
  return r.body.delegations;
}

async function sessionsOf(h: RunHarness, agent: string): Promise<{ id: string; title: string }[]> {
  return (await h.api("GET", `/api/agents/${agent}/sessions`)).body.sessions;
}

/** A delegation whose call is refused: no approval, no Conversation, no row; the parent goes on. */
async function refused(
  h: RunHarness,
  agentId: string,
  message: string,
  watch: string[],
): Promise<string> {
  const conv = await newConversation(h);
  const before = await Promise.all(watch.map((a) => sessionsOf(h, a)));
  const rowsBefore = (await delegations(h)).length;
  h.ollama.enqueue(delegateCall(agentId, message), scenarios.text("Understood."));
  const run = await submitIn(h, h.agent, conv, "please delegate");
  const frames = await readSse(h, run);
  assertEquals(frames.at(-1)!.event, "run.completed");
  assertEquals(frames.filter((f) => f.event === "permission.requested").length, 0);
  assertEquals(statuses(frames), []);
  const after = await Promise.all(watch.map((a) => sessionsOf(h, a)));
  assertEquals(after.map((s) => s.length), before.map((s) => s.length));
  assertEquals((await delegations(h)).length, rowsBefore);
  const result = delegateResult(frames);
  assertEquals(result.outcome, "error");
  return result.code;
}

Deno.test("agent/delegate runs a child Run in another Agent and returns its answer", async (t) => {
  const h = await startRunHarness();
  try {
    const helper = await createAgent(h, "Helper");
    const other = await createAgent(h, "Other");

    await t.step(
      "the child answers in a Conversation of the delegate titled by its parent, seeing only the message",
      async () => {
        const conv = await conversationOf(h, h.agent, "Planning");
        h.ollama.enqueue(
          scenarios.text("PARENT-HISTORY-MARKER earlier answer."),
        );
        const first = await submitIn(h, h.agent, conv, "PARENT-SECRET first question");
        assertEquals((await readSse(h, first)).at(-1)!.event, "run.completed");
        const chatsBefore = h.ollama.chats.length;
        h.ollama.enqueue(
          delegateCall(helper, "Summarise the word banana in one line."),
          scenarios.text("Banana: a yellow fruit."),
          scenarios.text("The helper says: a yellow fruit."),
        );
        const run = await submitIn(h, h.agent, conv, "ask the helper");
        const permission = await approveDelegation(h, run);
        const frames = await readSse(h, run);
        assertEquals(frames.at(-1)!.event, "run.completed");
        const result = delegateResult(frames);
        assertEquals(result.outcome, "ok");
        const answer = JSON.parse(result.result);
        assertEquals(answer.answer, "Banana: a yellow fruit.");
        assertEquals(answer.truncated, false);
        // Status streamed on the parent's Run: running, then completed with the answer.
        const st = statuses(frames);
        assertEquals(st.map((s) => s.state), ["running", "completed"]);
        assertEquals(st[1].answer, "Banana: a yellow fruit.");
        assertEquals([st[0].agent_id, st[0].agent_name], [helper, "Helper"]);
        // The child's Conversation: in the delegate Agent, titled by the parent.
        const child = (await sessionsOf(h, helper)).find((s) => s.id === st[0].conversation_id)!;
        assertEquals(child.title, "↳ System Agent · Planning");
        const childFrames = await sseOf(h, helper, st[0].run_id);
        assertEquals(childFrames.at(-1)!.event, "run.completed");
        // The child's model request carried only the message: no parent history.
        const childChat = h.ollama.chats[chatsBefore + 1];
        const sent = JSON.stringify(childChat.body.messages);
        assert(sent.includes("Summarise the word banana"), sent);
        assert(!sent.includes("PARENT-SECRET"), sent);
        assert(!sent.includes("PARENT-HISTORY-MARKER"), sent);
        // The delegation row and its two-message mailbox.
        const [row] = await delegations(h);
        assertEquals(row.state, "completed");
        assertEquals(row.child_run_id, st[0].run_id);
        assertEquals(row.child_agent_name, "Helper");
        assertEquals(row.mailbox.map((m: { direction: string }) => m.direction), [
          "parent_to_child",
          "child_to_parent",
        ]);
        assertEquals(row.mailbox[1].body, "Banana: a yellow fruit.");
        // The operator approved the delegation itself once; it is on the parent's audit.
        const audit = await h.api("GET", `/api/agents/${h.agent}/runs/${run}/capability-audit`);
        assert(
          audit.body.entries.some((e: { id?: string; tool_id: string; state: string }) =>
            e.tool_id === "agent/delegate" && e.state === "approved"
          ),
          JSON.stringify(audit.body.entries),
        );
        assert(permission.length === 36);
      },
    );

    await t.step(
      "the child's approval surfaces on the parent's Run and is decided from there",
      async () => {
        const conv = await newConversation(h);
        h.ollama.enqueue(
          delegateCall(helper, "Write hello.txt\u202e"),
          scenarios.toolCall([{
            name: "file__write",
            arguments: { path: "hello.txt", content: "hello\n" },
          }]),
          scenarios.text("Wrote it."),
          scenarios.text("Done by the helper."),
        );
        const run = await submitIn(h, h.agent, conv, "delegate a write");
        // The approval shows the message with its hidden character made visible.
        const asking = await readSse(h, run, {
          until: (f) => f.event === "permission.requested",
        });
        const shown = asking.at(-1)!.data.payload.preview as string;
        assert(shown.includes("Delegate to Agent: Helper"), shown);
        assert(shown.includes("Write hello.txt\\u{202E}"), shown);
        await approveDelegation(h, run);
        const asked = await readSse(h, run, {
          until: (f) =>
            f.event === "subagent.status" && f.data.payload.state === "awaiting_approval",
        });
        const ask = statuses(asked).at(-1);
        assertEquals(ask.tool_id, "file/write");
        assert(ask.preview.includes("+hello"), ask.preview);
        // The operator decides the child's call from the parent's chat (its id and Agent).
        const d = await h.api(
          "POST",
          `/api/agents/${ask.agent_id}/permissions/${ask.permission_id}`,
          {
            decision: "approve",
          },
        );
        assertEquals(d.body.state, "approved");
        const frames = await readSse(h, run);
        assertEquals(frames.at(-1)!.event, "run.completed");
        assertEquals(statuses(frames).map((s) => s.state), [
          "running",
          "tool",
          "awaiting_approval",
          "approval_decided",
          "completed",
        ]);
        assertEquals(
          Deno.readTextFileSync(`${h.server.home}/data/agents/${helper}/workspace/hello.txt`),
          "hello\n",
        );
      },
    );

    await t.step("an answer over 8 KiB is cut to 8 KiB on a code point and says so", async () => {
      const conv = await newConversation(h);
      const long = "é".repeat(5000); // 2 bytes each: 10,000 bytes
      h.ollama.enqueue(
        delegateCall(helper, "Say a lot."),
        scenarios.text(long),
        scenarios.text("ok"),
      );
      const run = await submitIn(h, h.agent, conv, "delegate long");
      await approveDelegation(h, run);
      const frames = await readSse(h, run);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const st = statuses(frames).at(-1);
      assertEquals(st.truncated, true);
      assertEquals(new TextEncoder().encode(st.answer).length, SUBAGENT_ANSWER_MAX_BYTES);
      const [row] = await delegations(h);
      assertEquals(row.mailbox[1].bytes, 10_000);
      assertEquals(row.mailbox[1].truncated, true);
    });

    await t.step("a message of exactly 4096 bytes is delegated; 4097 is refused", async () => {
      const conv = await newConversation(h);
      const exact = "m".repeat(SUBAGENT_MESSAGE_MAX_BYTES);
      h.ollama.enqueue(delegateCall(helper, exact), scenarios.text("got it"), scenarios.text("ok"));
      const run = await submitIn(h, h.agent, conv, "delegate at the bound");
      await approveDelegation(h, run);
      const frames = await readSse(h, run);
      assertEquals(delegateResult(frames).outcome, "ok");
      const [row] = await delegations(h);
      assertEquals(row.mailbox[0].bytes, SUBAGENT_MESSAGE_MAX_BYTES);
      assertEquals(
        await refused(h, helper, exact + "m", [helper]),
        "subagent_message_too_large",
      );
    });

    await t.step("delegating to itself (the system Agent as parent) is refused", async () => {
      assertEquals(await refused(h, h.agent, "hi", [h.agent, helper]), "subagent_self");
    });

    await t.step("an unknown or deleted Agent is refused", async () => {
      assertEquals(
        await refused(h, crypto.randomUUID(), "hi", [helper]),
        "subagent_target_unavailable",
      );
      assertEquals(await refused(h, "not-an-id", "hi", [helper]), "subagent_target_unavailable");
      const gone = await createAgent(h, "Gone");
      assertEquals((await h.api("DELETE", `/api/agents/${gone}`)).status, 200);
      assertEquals(await refused(h, gone, "hi", [helper]), "subagent_target_unavailable");
    });

    await t.step("an Agent with an active Run is busy", async () => {
      const busyConv = await conversationOf(h, other);
      h.ollama.enqueue(slowAnswer());
      const busyRun = await submitIn(h, other, busyConv, "keep busy");
      await sseOf(h, other, busyRun, { until: (f) => f.event === "model.request.started" });
      assertEquals(await refused(h, other, "hi", [other]), "subagent_busy");
      await h.api("POST", `/api/agents/${other}/runs/${busyRun}/cancel`);
      assertEquals((await sseOf(h, other, busyRun)).at(-1)!.event, "run.cancelled");
    });

    await t.step("a second delegation in the same parent Run is refused", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        delegateCall(helper, "first"),
        scenarios.text("first answer"),
        delegateCall(other, "second"),
        scenarios.text("done"),
      );
      const run = await submitIn(h, h.agent, conv, "delegate twice");
      await approveDelegation(h, run);
      const frames = await readSse(h, run);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const results = frames.filter((f) =>
        f.event === "tool.call.completed" && f.data.payload.tool_id === "agent/delegate"
      ).map((f) => f.data.payload.code);
      assertEquals(results, [null, "subagent_parent_limit"]);
      assertEquals(frames.filter((f) => f.event === "permission.requested").length, 1);
    });

    await t.step("a child Run cannot delegate (depth 1)", async () => {
      const conv = await newConversation(h);
      h.ollama.enqueue(
        delegateCall(helper, "go deeper"),
        delegateCall(other, "third level"),
        scenarios.text("I could not delegate."),
        scenarios.text("ok"),
      );
      const run = await submitIn(h, h.agent, conv, "delegate deep");
      await approveDelegation(h, run);
      const frames = await readSse(h, run);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const st = statuses(frames);
      const childFrames = await sseOf(h, helper, st[0].run_id);
      const childCall = delegateResult(childFrames);
      assertEquals(childCall.code, "subagent_depth");
      assertEquals(childFrames.filter((f) => f.event === "permission.requested").length, 0);
      assertEquals(JSON.parse(delegateResult(frames).result).answer, "I could not delegate.");
      // Nothing was created in the third Agent.
      assertEquals((await delegations(h, helper)).length, 0);
    });

    await t.step("the delegation list refuses a query and an unknown Agent", async () => {
      const q = await h.api("GET", `/api/agents/${h.agent}/delegations?x=1`);
      assertEquals(q.status, 422);
      const u = await h.api("GET", `/api/agents/${crypto.randomUUID()}/delegations`);
      assertEquals(codeOf(u), "agent_not_found");
    });
  } finally {
    await h.close();
  }
});
