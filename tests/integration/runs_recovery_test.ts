/**
 * Runs under failure [CV-6, EV-3, EV-4, SB-1, SB-2, CX-3]: the server killed
 * mid-Run and restarted; the Worker's /proc while streaming; a tampered journal
 * row refused by replay; deterministic collapse of old history at 80 %.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { openAgentState, tamperEvent } from "../helpers/agent_state.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";

/** Direct children of `pid` (all threads), read from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    const c = readProcText(`/proc/${pid}/task/${t.name}/children`) ?? "";
    for (const x of c.trim().split(/\s+/)) if (x) out.push(Number(x));
  }
  return out;
}

function statusField(text: string, name: string): string {
  return new RegExp(`^${name}:\\s*(.*)$`, "m").exec(text)?.[1].trim() ?? "";
}

Deno.test("a streaming Worker shows NoNewPrivs 1 and Seccomp 2 on every thread", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.stall());
    const r = await submit(h, conv, "stream and stall");
    await readSse(h, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
    const workers = childrenOf(h.server.child.pid);
    assertEquals(workers.length, 1, `children: ${workers}`);
    const threads = [...Deno.readDirSync(`/proc/${workers[0]}/task`)].map((t) => t.name);
    assert(threads.length > 1, "a Deno Worker runs several threads");
    for (const tid of threads) {
      const st = readProcText(`/proc/${workers[0]}/task/${tid}/status`) ?? "";
      assertEquals(
        [statusField(st, "NoNewPrivs"), statusField(st, "Seccomp")],
        ["1", "2"],
        `thread ${tid}`,
      );
    }
    const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
    assertEquals(c.status, 202);
    const frames = await readSse(h, r.body.run_id);
    assertEquals(frames.at(-1)!.event, "run.cancelled");
  } finally {
    await h.close();
  }
});

Deno.test("a server killed mid-Run restarts with the Turn interrupted and the durable fallback", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    const conv = await newConversation(h);
    ollama.enqueue(scenarios.stall());
    const r = await submit(h, conv, "never finishes");
    const live = await readSse(h, r.body.run_id, {
      until: (f) => f.event === "assistant.block.delta",
    });
    assertEquals(live[0].event, "run.started");
    const runsDir = `${h.server.home}/.runtime/agents/${h.agent}/runs`;
    assertEquals([...Deno.readDirSync(runsDir)].length, 1);
    // An operation the dead process had dispatched: its outcome cannot be known.
    const opId = crypto.randomUUID();
    const db = openAgentState(h.server.home, h.agent);
    try {
      db.prepare(
        `INSERT INTO operations (id, run_id, call_id, tool_id, state, executor, args_digest,
           created_at, updated_at) VALUES (?, ?, 'call-1', 'file/stat', 'dispatched', 'x', 'd', 0, 0)`,
      ).run(opId, r.body.run_id);
    } finally {
      db.close();
    }
    await h.server.kill();

    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const turn = await waitTurn(h2, conv, r.body.run_id);
      assertEquals([turn.state, turn.assistant_message, turn.terminal.code], [
        "interrupted",
        null,
        "run_interrupted",
      ]);
      let leftover = 0;
      try {
        leftover = [...Deno.readDirSync(runsDir)].length;
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err;
      }
      assertEquals(leftover, 0, "Run roots removed at restart");
      const frames = await readSse(h2, r.body.run_id);
      const kinds = frames.map((f) => f.event);
      assertEquals(kinds[0], "stream.gap");
      assertEquals(kinds.at(-1), "stream.snapshot");
      assert(!kinds.includes("assistant.block.delta"), "lost deltas are never faked");
      const terminal = frames.find((f) => f.event === "run.failed")!;
      assertEquals(terminal.data.payload.code, "run_interrupted");
      assertEquals(frames.at(-1)!.data.payload.state, "interrupted");
      const audit = await h2.api(
        "GET",
        `/api/agents/${h2.agent}/runs/${r.body.run_id}/capability-audit`,
      );
      assertEquals(audit.body.entries.map((e: { id: string; state: string }) => [e.id, e.state]), [
        [opId, "outcome_unknown"],
      ]);
      const ctx = await h2.api("GET", `/api/agents/${h2.agent}/runs/${r.body.run_id}/context`);
      assertEquals([ctx.status, ctx.body.source], [200, "run_started"]);
      ollama.enqueue(scenarios.text("Back again."));
      const r2 = await submit(h2, conv, "are you back?");
      assertEquals(r2.status, 202);
      const after = await readSse(h2, r2.body.run_id);
      assertEquals(after.at(-1)!.event, "run.completed");
      const sent = ollama.chats.at(-1)!.body.messages.map((m: { content: string }) => m.content);
      assert(!sent.includes("never finishes"), "an interrupted Turn never reaches the model");
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});

Deno.test("replay validates the whole journal and refuses a tampered row without a prefix", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.text("An answer to replay."));
    const r = await submit(h, conv, "replay me");
    await readSse(h, r.body.run_id);
    await waitTurn(h, conv, r.body.run_id);
    const path = `/api/agents/${h.agent}/runs/${r.body.run_id}/replay`;
    const ok = await h.api("GET", path);
    assertEquals(ok.status, 200);
    const kinds = ok.body.events.map((e: { kind: string }) => e.kind);
    assertEquals(kinds[0], "run.started");
    assertEquals(kinds.at(-1), "run.completed");
    assert(!kinds.includes("assistant.block.delta"), "deltas are never journaled");
    assertEquals(ok.body.next_cursor, null);
    assertEquals(codeOf(await h.api("GET", `${path}?cursor=1000001`)), "schema_violation");
    assertEquals(codeOf(await h.api("GET", `${path}?cursor=x`)), "schema_violation");
    const page = await h.api("GET", `${path}?cursor=2`);
    assertEquals(page.body.events[0].seq, 3);

    const db = openAgentState(h.server.home, h.agent);
    try {
      const seq = ok.body.events.length - 1;
      assert(tamperEvent(db, r.body.run_id, seq, (b) => b.replace("replay", "REPLAY")));
    } finally {
      db.close();
    }
    const bad = await h.api("GET", path);
    assertEquals([bad.status, codeOf(bad)], [500, "journal_corrupt"]);
    assertEquals(bad.body.events, undefined);
  } finally {
    await h.close();
  }
});

Deno.test("history past 80 % of the budget collapses the oldest Turn; the transcript is unchanged", async () => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    const big = (tag: string) => `${tag} ` + "x".repeat(7900);
    for (const tag of ["FIRST", "SECOND"]) {
      h.ollama.enqueue(scenarios.text(`${tag}-ANSWER ` + "y ".repeat(2500)));
      const r = await submit(h, conv, big(tag));
      assertEquals(r.status, 202);
      await readSse(h, r.body.run_id);
    }
    h.ollama.enqueue(scenarios.text("Third answer."));
    const r = await submit(h, conv, "THIRD short question");
    const frames = await readSse(h, r.body.run_id);
    assertEquals(frames.at(-1)!.event, "run.completed");
    const req = frames.find((f) => f.event === "model.request.started")!;
    assertEquals(req.data.payload.collapsed_bundles, 1);
    const sent = h.ollama.chats.at(-1)!.body.messages as { role: string; content: string }[];
    const all = sent.map((m) => m.content).join("\n");
    assert(!all.includes("FIRST"), "the collapsed Turn's text is not sent");
    assert(all.includes("SECOND-ANSWER"), "the latest complete bundle is kept");
    assert(/1 earlier completed turn\(s\) were collapsed/.test(sent[0].content));
    const detail = await h.api("GET", `/api/agents/${h.agent}/sessions/${conv}`);
    const turns = detail.body.turns as { user_message: string; assistant_message: string }[];
    assertEquals(turns.length, 3);
    assertEquals(turns[0].user_message, big("FIRST"));
    assert(turns[0].assistant_message.startsWith("FIRST-ANSWER"));
  } finally {
    await h.close();
  }
});

Deno.test("SIGTERM during a streaming Run cancels it durably and its attached SSE client gets the terminal", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    const conv = await newConversation(h);
    ollama.enqueue(scenarios.stall());
    const r = await submit(h, conv, "stall until shutdown");
    await readSse(h, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
    let attached!: () => void;
    const opened = new Promise<void>((res) => (attached = res));
    // A live client stays attached: graceful shutdown delivers the Run's last live bytes —
    // the terminal — before the process exits [OP-2], and the durable terminal below holds too.
    const stream = readSse(h, r.body.run_id, { opened: attached });
    await opened;
    const t0 = Date.now();
    assertEquals(await h.server.stop(), 0);
    assert(Date.now() - t0 < 10_000, `shutdown took ${Date.now() - t0} ms`);
    const live = await stream;
    assertEquals(live.at(-1)!.event, "run.cancelled");
    assertEquals(live.at(-1)!.data.payload.reason, "shutdown");
    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const turn = await waitTurn(h2, conv, r.body.run_id);
      assertEquals([turn.state, turn.terminal.code], ["cancelled", "run_cancelled"]);
      const frames = await readSse(h2, r.body.run_id);
      const terminal = frames.find((f) => f.event === "run.cancelled")!;
      assertEquals(terminal.data.payload.reason, "shutdown");
      assertEquals(frames.at(-1)!.event, "stream.snapshot");
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});
