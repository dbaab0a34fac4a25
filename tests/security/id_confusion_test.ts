/**
 * Attack: id confusion across Agents [API §13, AG-2]. Agent A (the system
 * Agent) owns a Conversation with a stalled active Run that waits on a
 * pending approval; Agent B is a second Agent. Every route is called with B's
 * path and A's Conversation/Run/permission ids, and through the system-Agent
 * aliases with B's ids. Each call must be 404 with the fixed code, and none
 * may act: A's Run stays active, its approval stays pending, its Conversation
 * keeps its title and Turns, and the workspace is unchanged.
 */
import { assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

type Call = [method: string, path: string, body?: unknown];

async function expect404(h: RunHarness, calls: Call[], code: string): Promise<void> {
  for (const [method, path, body] of calls) {
    const res = await h.api(method, path, body);
    assertEquals([res.status, codeOf(res)], [404, code], `${method} ${path}`);
  }
}

function convCalls(base: string): Call[] {
  return [
    ["GET", base],
    ["GET", `${base}?limit=1`],
    ["PATCH", base, { title: "hijacked" }],
    ["POST", `${base}/continue`, { mode: "continue" }],
    ["POST", `${base}/continue`, { mode: "branch" }],
    ["POST", `${base}/runs`, { message: "run in someone else's conversation" }],
    ["GET", `${base}/context-preview`],
    ["GET", `${base}/preparation`],
    ["POST", `${base}/commands`, { input: "/cancel" }],
    ["DELETE", base],
  ];
}

function runCalls(base: string): Call[] {
  return [
    ["GET", `${base}/events`],
    ["GET", `${base}/replay`],
    ["GET", `${base}/replay?cursor=0`],
    ["GET", `${base}/context`],
    ["GET", `${base}/capability-audit`],
    ["POST", `${base}/cancel`],
  ];
}

Deno.test("another Agent's ids are 404 on every route and nothing is acted on", async () => {
  const h = await startRunHarness();
  try {
    const a = h.agent;
    const b = (await h.api("POST", "/api/agents", { name: "agent b" })).body.agent.id as string;
    const ws = `${h.server.home}/data/agents/${a}/workspace`;
    const convA = await newConversation(h);
    // A's Run asks to create a file and then waits on the approval.
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "file__write", arguments: { path: "owned.txt", content: "x" } }]),
      scenarios.text("done"),
    );
    const runA = (await submit(h, convA, "make owned.txt")).body.run_id as string;
    const asked = await readSse(h, runA, { until: (f) => f.event === "permission.requested" });
    const permA = asked.at(-1)!.data.payload.permission_id as string;

    await expect404(h, convCalls(`/api/agents/${b}/sessions/${convA}`), "conversation_not_found");
    await expect404(h, runCalls(`/api/agents/${b}/runs/${runA}`), "run_not_found");
    await expect404(h, [
      ["POST", `/api/agents/${b}/permissions/${permA}`, { decision: "approve" }],
      ["POST", `/api/agents/${b}/permissions/${permA}`, { decision: "deny" }],
    ], "permission_not_found");
    assertEquals((await h.api("GET", `/api/agents/${b}/permissions`)).body, { pending: [] });

    // B's own Conversation through the system-Agent aliases is not found either.
    const convB = (await h.api("POST", `/api/agents/${b}/sessions`, { title: "b" })).body.session
      .id as string;
    await expect404(h, convCalls(`/api/sessions/${convB}`), "conversation_not_found");

    // Nothing acted: A's Run is still waiting, its approval pending, its Conversation intact.
    const pending = await h.api("GET", `/api/agents/${a}/permissions`);
    assertEquals(pending.body.pending.map((p: { id: string }) => p.id), [permA]);
    const detail = await h.api("GET", `/api/agents/${a}/sessions/${convA}`);
    assertEquals(detail.body.session?.title ?? detail.body.title, "t");
    assertEquals(
      (await h.api("GET", `/api/agents/${a}/sessions/${convA}/preparation`)).body.run_id,
      runA,
    );
    assertEquals(Deno.readDirSync(ws).some((e) => e.name === "owned.txt"), false);
    const listB = await h.api("GET", `/api/agents/${b}/sessions`);
    assertEquals(listB.body.sessions.map((s: { id: string }) => s.id), [convB]);

    // A deny from the owner ends the Run; B's Run ids through /api/runs/… are 404 too.
    await h.api("POST", `/api/agents/${a}/permissions/${permA}`, { decision: "deny" });
    assertEquals((await waitTurn(h, convA, runA)).state, "completed");
    h.ollama.enqueue(scenarios.text("b's answer"));
    const runB = await h.api("POST", `/api/agents/${b}/sessions/${convB}/runs`, { message: "hi" });
    assertEquals(runB.status, 202, JSON.stringify(runB.body));
    await expect404(h, runCalls(`/api/runs/${runB.body.run_id}`), "run_not_found");
    await expect404(h, [["GET", `/api/sessions/${convB}`]], "conversation_not_found");
  } finally {
    await h.close();
  }
});
