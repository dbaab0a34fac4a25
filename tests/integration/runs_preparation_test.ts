/**
 * Context preparation over HTTP [§13, CX-1, CX-3]: a submitted Turn first
 * runs a cancellable preparation operation (inputs → compile → admit) with an
 * id, a phase and a start time; `POST …/preparation/cancel {operation_id}`
 * stops a matching in-flight operation (202) before anything is written, is
 * 404 for unknown, malformed or foreign ids and 409 once it finished.
 *
 * The real server is started with the test-only pause
 * `AGENT_BUILDER_TEST_PREPARATION_PAUSE=compiling:<ms>` (tests/helpers/
 * test_server_entry.ts) so the otherwise instantaneous compile step can be observed.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { newConversation, readSse, type RunHarness, startRunHarness } from "../helpers/runs.ts";
import { PREPARATION_PAUSE_ENV } from "../helpers/test_server_entry.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";

const PAUSE_MS = 2500;

function prepPath(h: RunHarness, conv: string): string {
  return `/api/agents/${h.agent}/sessions/${conv}/preparation`;
}

/**
 * Polls GET …/preparation until an operation is in flight at the paused phase (`compiling`: a
 * submit reaches it over a few loop turns, [PF-2]); returns the answer.
 */
async function waitPreparing(h: RunHarness, conv: string) {
  const end = Date.now() + PAUSE_MS;
  while (Date.now() < end) {
    const r = await h.api("GET", prepPath(h, conv));
    assertEquals(r.status, 200);
    if (r.body.state === "preparing" && r.body.operation.phase === "compiling") return r.body;
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error("no preparation became visible");
}

Deno.test("context preparation is an observable, cancellable operation", async (t) => {
  const h = await startRunHarness({ env: { [PREPARATION_PAUSE_ENV]: `compiling:${PAUSE_MS}` } });
  try {
    const conv = await newConversation(h);
    const other = await newConversation(h);
    const runs = `/api/agents/${h.agent}/sessions/${conv}/runs`;

    await t.step("an idle Conversation reports no operation", async () => {
      const r = await h.api("GET", prepPath(h, conv));
      assertEquals(r.body, { state: "idle", run_id: null, operation_id: null, operation: null });
    });

    await t.step(
      "cancelling the in-flight operation is 202 and the submit ends with no Turn written",
      async () => {
        const t0 = Date.now();
        const pending = h.api("POST", runs, { message: "never sent" });
        const p = await waitPreparing(h, conv);
        assertEquals(p.operation.kind, "run");
        assertEquals(p.operation.phase, "compiling");
        assertEquals(p.operation_id, p.operation.operation_id);
        assert(p.operation.started_at >= t0 - 1000 && p.operation.started_at <= Date.now());
        assertEquals(p.run_id, null);

        const busy = await h.api("POST", runs, { message: "second" });
        assertEquals([busy.status, codeOf(busy)], [409, "conversation_busy"]);

        const foreign = await h.api("POST", `${prepPath(h, other)}/cancel`, {
          operation_id: p.operation_id,
        });
        assertEquals([foreign.status, codeOf(foreign)], [404, "preparation_not_found"]);
        const unknown = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
          operation_id: crypto.randomUUID(),
        });
        assertEquals([unknown.status, codeOf(unknown)], [404, "preparation_not_found"]);
        const malformed = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
          operation_id: "../x",
        });
        assertEquals([malformed.status, codeOf(malformed)], [404, "preparation_not_found"]);
        const extra = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
          operation_id: p.operation_id,
          force: true,
        });
        assertEquals([extra.status, codeOf(extra)], [422, "schema_violation"]);
        const noCsrf = await fetch(`${h.server.url}${prepPath(h, conv)}/cancel`, {
          method: "POST",
          headers: { cookie: h.session.cookie, "content-type": "application/json" },
          body: JSON.stringify({ operation_id: p.operation_id }),
        });
        assertEquals(noCsrf.status, 403);
        await noCsrf.body?.cancel();

        const c = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
          operation_id: p.operation_id,
        });
        assertEquals([c.status, c.body], [202, {
          operation_id: p.operation_id,
          state: "cancelling",
        }]);
        const submitted = await pending;
        assertEquals([submitted.status, codeOf(submitted)], [409, "preparation_cancelled"]);
        // The pause ends at once on cancel: no waiting out the whole phase.
        assert(Date.now() - t0 < PAUSE_MS + 1500, `took ${Date.now() - t0} ms`);

        const after = await h.api("GET", prepPath(h, conv));
        assertEquals(after.body.state, "idle");
        const again = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
          operation_id: p.operation_id,
        });
        assertEquals([again.status, codeOf(again)], [409, "preparation_finished"]);
        const detail = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
        assertEquals(detail.body.turns ?? detail.body.session?.turns, []);
        assertEquals(h.ollama.chats.length, 0);
      },
    );

    await t.step("a /compact request is a preparation of kind compact", async () => {
      const pending = h.api("POST", runs, { message: "compact me", compact: true });
      const p = await waitPreparing(h, conv);
      assertEquals(p.operation.kind, "compact");
      const c = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
        operation_id: p.operation_id,
      });
      assertEquals(c.status, 202);
      assertEquals(codeOf(await pending), "preparation_cancelled");
    });

    await t.step("an operation that committed its Run is 409 to cancel", async () => {
      h.ollama.enqueue(scenarios.text("prepared and answered"));
      const pending = h.api("POST", runs, { message: "go" });
      const p = await waitPreparing(h, conv);
      const submitted = await pending;
      assertEquals(submitted.status, 202);
      const late = await h.api("POST", `${prepPath(h, conv)}/cancel`, {
        operation_id: p.operation_id,
      });
      assertEquals([late.status, codeOf(late)], [409, "preparation_finished"]);
      const frames = await readSse(h, submitted.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(h.ollama.chats.length, 1);
    });
  } finally {
    await h.close();
  }
});

Deno.test("an upgrade fencing the Agent aborts its preparing submit: agent_busy, no Turn, no model call", async () => {
  const h = await startRunHarness({ env: { [PREPARATION_PAUSE_ENV]: `compiling:${PAUSE_MS}` } });
  try {
    const created = await h.api("POST", "/api/agents", { name: "Fenced" });
    assertEquals(created.status, 201, JSON.stringify(created.body));
    const agent = created.body.agent.id;
    const other: RunHarness = { ...h, agent };
    const conv = await newConversation(other);
    const pending = h.api("POST", `/api/agents/${agent}/sessions/${conv}/runs`, {
      message: "prepared on the old generation",
    });
    await waitPreparing(other, conv);

    const t0 = Date.now();
    const upgraded = await h.api("POST", `/api/agents/${agent}/upgrade`);
    assertEquals(upgraded.status, 200, JSON.stringify(upgraded.body));
    assertEquals(upgraded.body.agent.generation, 2);
    const submitted = await pending;
    assertEquals([submitted.status, codeOf(submitted)], [409, "agent_busy"]);
    // The drain ended the preparation rather than waiting out its pause.
    assert(Date.now() - t0 < PAUSE_MS, `upgrade took ${Date.now() - t0} ms`);

    const detail = await h.api("GET", `/api/agents/${agent}/sessions/${conv}`);
    assertEquals(detail.body.turns, []);
    assertEquals(h.ollama.chats.length, 0);
  } finally {
    await h.close();
  }
});
