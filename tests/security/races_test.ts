/**
 * Attack: racing the admission and approval boundaries with concurrent
 * requests on the real server [CV-2, TL-2]. Eight simultaneous submits to one
 * Conversation start exactly one Run; eight to eight Conversations start at
 * most ACTIVE_RUNS_TOTAL_MAX; six simultaneous approve/deny decisions on one
 * pending approval have exactly one winner, and the workspace shows the
 * winner's effect only.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import {
  isTerminal,
  newConversation,
  readSse,
  startRunHarness,
  submit,
  waitTurn,
} from "../helpers/runs.ts";
import { ACTIVE_RUNS_TOTAL_MAX } from "../../runtime/limits.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

Deno.test("concurrent submits and decisions cannot pass the admission or approval bounds", async () => {
  const h = await startRunHarness();
  try {
    h.ollama.setDefault(scenarios.stall());
    const conv = await newConversation(h);
    const same = await Promise.all(Array.from({ length: 8 }, (_, i) => submit(h, conv, `m${i}`)));
    assertEquals(same.filter((r) => r.status === 202).length, 1);
    assert(same.every((r) => r.status === 202 || codeOf(r) === "conversation_busy"));

    const convs = await Promise.all(Array.from({ length: 8 }, () => newConversation(h)));
    const many = await Promise.all(convs.map((c, i) => submit(h, c, `n${i}`)));
    assertEquals(many.filter((r) => r.status === 202).length, ACTIVE_RUNS_TOTAL_MAX - 1);
    assert(many.every((r) => r.status === 202 || codeOf(r) === "runs_busy"));
    const started = [
      ...same.map((r) => ({ r, conv })),
      ...many.map((r, i) => ({ r, conv: convs[i] })),
    ].filter((x) => x.r.status === 202);
    for (const { r } of started) {
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      assertEquals(c.status, 202);
    }
    for (const { r, conv: c } of started) {
      assertEquals((await waitTurn(h, c, r.body.run_id)).state, "cancelled");
    }
    h.ollama.setDefault(scenarios.text("done"));

    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    const target = await newConversation(h);
    h.ollama.enqueue(
      scenarios.toolCall([{ name: "file__write", arguments: { path: "race.txt", content: "x" } }]),
      scenarios.text("done"),
    );
    const run = (await submit(h, target, "race")).body.run_id as string;
    const asked = await readSse(h, run, { until: (f) => f.event === "permission.requested" });
    const id = asked.at(-1)!.data.payload.permission_id as string;
    const decisions = ["approve", "deny", "approve", "deny", "approve", "deny"];
    const results = await Promise.all(
      decisions.map((decision) =>
        h.api("POST", `/api/agents/${h.agent}/permissions/${id}`, { decision })
      ),
    );
    const winners = results.filter((r) => r.status === 200);
    assertEquals(winners.length, 1);
    assert(results.every((r) => r.status === 200 || codeOf(r) === "permission_not_found"));
    assertEquals((await waitTurn(h, target, run)).state, "completed");
    let exists = true;
    try {
      Deno.statSync(`${ws}/race.txt`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      exists = false;
    }
    assertEquals(exists, winners[0].body.state === "approved");
  } finally {
    await h.close();
  }
});

Deno.test("two deletes racing on an Agent with a live Run: one deletes it, the other is 404, never a 500", async () => {
  const base = await startRunHarness();
  try {
    base.ollama.setDefault(scenarios.stall());
    const agent = (await base.api("POST", "/api/agents", { name: "doomed" })).body.agent.id;
    const h = { ...base, agent };
    const conv = await newConversation(h);
    const run = (await submit(h, conv, "keep going")).body.run_id as string;
    // The Run is streaming (its Worker holds the admission) before the deletes race.
    const seen = await readSse(h, run, {
      until: (f) => f.event === "assistant.block.delta" || isTerminal(f),
    });
    assertEquals(seen.at(-1)?.event, "assistant.block.delta");
    const results = await Promise.all([
      base.api("DELETE", `/api/agents/${agent}`),
      base.api("DELETE", `/api/agents/${agent}`),
    ]);
    const outcome = results.map((r) => r.status === 200 ? "deleted" : codeOf(r)).sort();
    assertEquals(outcome, ["agent_not_found", "deleted"]);
    assertEquals(codeOf(await base.api("GET", `/api/agents/${agent}`)), "agent_not_found");
  } finally {
    await base.close();
  }
});
