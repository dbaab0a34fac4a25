/**
 * Agent-loop step benchmark [SB-8, CX-10, OP-3]: the per-step overhead of a
 * long Turn — one model call to the next — through the real server, a real
 * confined Worker and an instant scripted model (every response is ready at
 * once), so what is measured is the harness: the Worker's frames, admission
 * (with in-Turn collapse), the tool call in the Control Plane, the journal
 * transactions and the IPC round trips.
 *
 * Each Turn is STEPS tool steps (a `file/read_text` of a ~2.5 KB file, so
 * collapse kicks in after a few steps) and the final answer. Reported: the
 * time between consecutive `model.request.started` events (server-side event
 * timestamps and arrival at the SSE client), the disk bytes written per step
 * (/proc/<server>/io) and the journal size of a Turn.
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/loop_step_bench.ts
 */
import { DatabaseSync } from "node:sqlite";
import { readProcText } from "../../sandbox/procfs.ts";
import type { FakeToolCall } from "../fake_ollama/frames.ts";
import { scriptedTools } from "../fake_ollama/scenarios.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
} from "../../tests/helpers/runs.ts";
import { measure } from "./report.ts";

const STEPS = 20;
const TURNS = 5;

function writeBytes(pid: number): number {
  const io = readProcText(`/proc/${pid}/io`) ?? "";
  const m = /^write_bytes:\s*(\d+)$/m.exec(io);
  if (!m) throw new Error("no /proc/<pid>/io write_bytes");
  return Number(m[1]);
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))];
}

async function longTurn(h: RunHarness) {
  const steps: FakeToolCall[][] = Array.from({ length: STEPS }, (_, i) => [{
    name: "file__read_text",
    arguments: { path: `bench${i % 10}.txt`, ...(i >= 10 ? { offset: 1 } : {}) },
  }]);
  const src = scriptedTools(steps);
  h.ollama.enqueue(...Array.from({ length: STEPS + 1 }, () => src));
  const conv = await newConversation(h);
  const before = writeBytes(h.server.child.pid);
  const arrivals: number[] = [];
  const r = await submit(h, conv, "read the bench files one by one");
  if (r.status !== 202) throw new Error(`submit ${r.status}`);
  const frames = await readSse(h, r.body.run_id, {
    timeoutMs: 120_000,
    until: (f) => {
      if (f.event === "model.request.started") arrivals.push(performance.now());
      return f.event === "run.completed" || f.event === "run.failed";
    },
  });
  const end = frames.at(-1)!;
  if (end.event !== "run.completed") throw new Error(`turn ended ${JSON.stringify(end.data)}`);
  await new Promise((res) => setTimeout(res, 50));
  const bytes = writeBytes(h.server.child.pid) - before;
  const serverTs = frames.filter((f) => f.event === "model.request.started")
    .map((f) => Number(f.data.ts));
  const gaps = (xs: number[]) => xs.slice(1).map((x, i) => x - xs[i]);
  return { runId: r.body.run_id as string, client: gaps(arrivals), server: gaps(serverTs), bytes };
}

async function main(): Promise<void> {
  const h = await startRunHarness();
  try {
    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    for (let i = 0; i < 10; i++) {
      const line = `bench${i}: ${"lorem ipsum dolor sit amet ".repeat(3)}\n`;
      Deno.writeTextFileSync(`${ws}/bench${i}.txt`, line.repeat(28), { mode: 0o600 });
    }
    await longTurn(h); // warm-up
    const client: number[] = [];
    const server: number[] = [];
    const bytes: number[] = [];
    let last = "";
    for (let i = 0; i < TURNS; i++) {
      const t = await longTurn(h);
      client.push(...t.client);
      server.push(...t.server);
      bytes.push(t.bytes);
      last = t.runId;
    }
    const db = new DatabaseSync(`${h.server.home}/data/agents/${h.agent}/state.sqlite`, {
      readOnly: true,
    });
    const row = db.prepare("SELECT event_count, durable_bytes FROM runs WHERE id = ?").get(
      last,
    ) as { event_count: number; durable_bytes: number };
    db.close();
    const f = (n: number) => `${n.toFixed(1)} ms`;
    console.log(`turns measured:                       ${TURNS} × ${STEPS} tool steps + answer`);
    console.log(
      `model call → next model call (server): median ${f(quantile(server, 0.5))}, ` +
        `p90 ${f(quantile(server, 0.9))}`,
    );
    console.log(
      `model call → next model call (client): median ${f(quantile(client, 0.5))}, ` +
        `p90 ${f(quantile(client, 0.9))}`,
    );
    const perStep = quantile(bytes, 0.5) / (STEPS + 1);
    console.log(`disk bytes per step (median Turn):    ${Math.round(perStep)}`);
    measure(
      "loop_step",
      "model call → next model call (server), median",
      quantile(server, 0.5),
      "ms",
    );
    measure("loop_step", "model call → next model call (client), p90", quantile(client, 0.9), "ms");
    measure("loop_step", "disk bytes per step", Math.round(perStep), "B");
    measure("loop_step", "durable journal bytes of one Turn", row.durable_bytes, "B");
    console.log(
      `journal of one Turn:                  ${row.event_count} events, ` +
        `${row.durable_bytes} durable bytes`,
    );
  } finally {
    await h.close();
  }
}

await main();
