/**
 * Faults of external ACP runners [LC-6]: a runner that will not start, exits
 * before `initialize`, crashes mid-prompt, floods notifications, writes a line
 * that is not JSON-RPC, never answers, or is cancelled. Each Turn ends with
 * its fixed code (or `run.cancelled`), the runner process is reaped (its
 * /proc entry gone), and the next Turn of the Conversation gets a fresh
 * process and completes.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, submit, waitTurn } from "../helpers/runs.ts";
import { ACP_AGENT_ARGV, type AcpHarness, startAcpHarness } from "../helpers/acp.ts";
import { ACP_UPDATES_PER_RUN_MAX } from "../../runtime/limits.ts";

/** The pid of the runner process that served `runId` (from its gateway grant record). */
function pidOf(h: AcpHarness, runId: string): number {
  for (const e of Deno.readDirSync(h.out)) {
    if (!e.name.startsWith("gateway-")) continue;
    const g = JSON.parse(Deno.readTextFileSync(`${h.out}/${e.name}`)) as { url: string };
    if (g.url.endsWith(`/${runId}`)) return Number(e.name.split("-")[1]);
  }
  throw new Error(`no runner recorded for ${runId}`);
}

function alive(pid: number): boolean {
  try {
    return !Deno.readTextFileSync(`/proc/${pid}/stat`).includes(") Z ");
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

/** The reap happens before the terminal is written: the process is gone by then. */
function assertReaped(pid: number): void {
  assert(!alive(pid), `runner ${pid} still alive after the terminal`);
}

async function failedWith(h: AcpHarness, conv: string, message: string, code: string) {
  const r = await submit(h, conv, message);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
  const last = frames.at(-1)!;
  assertEquals([last.event, last.data.payload.code], ["run.failed", code]);
  const turn = await waitTurn(h, conv, r.body.run_id);
  assertEquals(turn.state, "failed");
  return r.body.run_id as string;
}

async function completes(h: AcpHarness, conv: string): Promise<void> {
  const r = await submit(h, conv, "stream");
  const frames = await readSse(h, r.body.run_id);
  assertEquals(frames.at(-1)!.event, "run.completed");
}

Deno.test("ACP runner faults end the Turn with a fixed code and reap the process", async (t) => {
  const h = await startAcpHarness([
    "--acp-runner",
    "missing=/nonexistent/acp-runner --stdio",
    "--acp-runner",
    "quits=/bin/true",
    "--acp-runner",
    `mute=${[...ACP_AGENT_ARGV, "--never-initialize"].join(" ")}`,
  ]);
  const bind = async (runner: string) => {
    const r = await h.api("PATCH", `/api/agents/${h.agent}`, { runner });
    assertEquals(r.status, 200);
  };
  try {
    await t.step("a command that does not exist: runner_start_failed", async () => {
      await bind("missing");
      await failedWith(h, await newConversation(h), "stream", "runner_start_failed");
    });

    await t.step(
      "a command that exits before answering initialize: runner_start_failed",
      async () => {
        await bind("quits");
        await failedWith(h, await newConversation(h), "stream", "runner_start_failed");
      },
    );

    await t.step(
      "cancel while the runner has not answered initialize: cancelled at once",
      async () => {
        await bind("mute");
        const conv = await newConversation(h);
        const r = await submit(h, conv, "stream");
        const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
        assertEquals(c.status, 202);
        const frames = await readSse(h, r.body.run_id);
        assertEquals(frames.at(-1)!.event, "run.cancelled");
      },
    );

    await bind("scripted");
    const conv = await newConversation(h);

    await t.step("a crash mid-prompt: runner_crashed, streamed text kept as partial", async () => {
      const run = await failedWith(h, conv, "crash", "runner_crashed");
      assertReaped(pidOf(h, run));
      const turn = await waitTurn(h, conv, run);
      assertEquals(turn.partial_text, "about to crash");
      await completes(h, conv);
    });

    await t.step("ACP_UPDATES_PER_RUN_MAX updates complete; one more is runner_flood", async () => {
      const ok = await submit(h, conv, `burst ${ACP_UPDATES_PER_RUN_MAX}`);
      const frames = await readSse(h, ok.body.run_id, { timeoutMs: 60_000 });
      assertEquals(frames.at(-1)!.event, "run.completed");
      const turn = await waitTurn(h, conv, ok.body.run_id);
      assertEquals(turn.assistant_message, ".".repeat(ACP_UPDATES_PER_RUN_MAX));
      const run = await failedWith(h, conv, `burst ${ACP_UPDATES_PER_RUN_MAX + 1}`, "runner_flood");
      assertReaped(pidOf(h, run));
      await completes(h, conv);
    });

    await t.step("a line that is not JSON-RPC: runner_protocol_error", async () => {
      const run = await failedWith(h, conv, "malformed", "runner_protocol_error");
      assertReaped(pidOf(h, run));
      await completes(h, conv);
    });

    await t.step("cancel: session/cancel, run.cancelled, the process reaped", async () => {
      const r = await submit(h, conv, "hold");
      await readSse(h, r.body.run_id, { until: (f) => f.event === "assistant.block.delta" });
      const pid = pidOf(h, r.body.run_id);
      assert(alive(pid));
      const c = await h.api("POST", `/api/agents/${h.agent}/runs/${r.body.run_id}/cancel`);
      assertEquals(c.status, 202);
      const frames = await readSse(h, r.body.run_id);
      assertEquals(frames.at(-1)!.event, "run.cancelled");
      assertReaped(pid);
      await completes(h, conv);
    });

    await t.step(
      "a runner that never answers: the Run deadline ends it, process reaped",
      async () => {
        const lim = await h.api("PATCH", `/api/agents/${h.agent}`, { run_deadline_s: 10 });
        assertEquals(lim.status, 200);
        const run = await failedWith(h, conv, "silent", "model_turn_deadline");
        assertReaped(pidOf(h, run));
      },
    );

    await t.step(
      "a permission nobody answers before the Run deadline expires, audited, process reaped",
      async () => {
        const r = await submit(h, conv, "permission");
        const frames = await readSse(h, r.body.run_id, { timeoutMs: 60_000 });
        assertEquals(frames.at(-1)!.data.payload.code, "model_turn_deadline");
        const decided = frames.find((f) => f.event === "permission.decided")!.data.payload;
        assertEquals(decided.decision, "expired");
        const pending = await h.api("GET", `/api/agents/${h.agent}/permissions`);
        assertEquals(pending.body.pending, []);
        const a = await h.api(
          "GET",
          `/api/agents/${h.agent}/runs/${r.body.run_id}/capability-audit`,
        );
        assertEquals(
          a.body.runner_access.map((x: { method: string; decision: string }) => [
            x.method,
            x.decision,
          ]),
          [["session/request_permission", "expired"]],
        );
        assertEquals(
          a.body.entries.map((e: { kind: string; state: string }) => `${e.kind}:${e.state}`),
          ["permission:expired"],
        );
        assertReaped(pidOf(h, r.body.run_id));
        await h.api("PATCH", `/api/agents/${h.agent}`, { run_deadline_s: null });
        // A healthy Turn leaves its process idle in the pool for the shutdown below.
        await completes(h, conv);
      },
    );

    await t.step("shutdown reaps the idle runner process too: none is left", async () => {
      const pids = [...Deno.readDirSync(h.out)].filter((e) => e.name.startsWith("env-")).map((e) =>
        Number(e.name.slice(4, -5))
      );
      assert(pids.length >= 6, `${pids.length} runner processes recorded`);
      assertEquals(await h.server.stop(), 0);
      assertEquals(pids.filter(alive), []);
    });
  } finally {
    await h.close();
  }
});
