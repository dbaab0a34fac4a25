/**
 * Event-loop lag probe [PF-2]: through the real server, real confined Workers
 * and the scripted model, 4 Runs at once (4 Conversations) each run
 * `file/grep` twice with no match over a 1,000-file workspace (every file
 * read) and then stream their answer, while a probe client requests `/health`
 * back to back. A request that waits on the server's event loop shows the
 * loop's stall, so the probe reports the idle latency and the maximum (and
 * p99) latency during the Runs; the goal is that the loop never stalls more
 * than 20 ms. (The probe's own HTTP round trip on a loaded host is included.)
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/event_loop_bench.ts
 */
import type { FakeToolCall } from "../fake_ollama/frames.ts";
import { scriptedTools } from "../fake_ollama/scenarios.ts";
import { newConversation, readSse, startRunHarness, submit } from "../../tests/helpers/runs.ts";
import { atMost, measure } from "./report.ts";

const RUNS = 4;
const FILES = 1000;

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * q))];
}

async function healthOnce(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/health`);
  await res.body?.cancel();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const h = await startRunHarness();
  try {
    const ws = `${h.server.home}/data/agents/${h.agent}/workspace`;
    for (let i = 0; i < FILES; i++) {
      const sub = `${ws}/pkg${i % 20}`;
      Deno.mkdirSync(sub, { recursive: true, mode: 0o700 });
      const text = Array.from({ length: 30 }, (_, j) => `export const v_${i}_${j} = f(${j});`)
        .join("\n");
      Deno.writeTextFileSync(`${sub}/file${i}.ts`, text + "\n", { mode: 0o600 });
    }
    const idle: number[] = [];
    for (let i = 0; i < 50; i++) idle.push(await healthOnce(h.server.url));

    const steps: FakeToolCall[][] = [
      [{ name: "file__grep", arguments: { pattern: "absent-token" } }],
      [{ name: "file__grep", arguments: { pattern: "also-absent" } }],
    ];
    const src = scriptedTools(steps);
    h.ollama.enqueue(...Array.from({ length: RUNS * (steps.length + 1) }, () => src));
    const convs = await Promise.all(Array.from({ length: RUNS }, () => newConversation(h)));
    let done = false;
    const busy: number[] = [];
    const probe = (async () => {
      while (!done) busy.push(await healthOnce(h.server.url));
    })();
    const ends = await Promise.all(convs.map(async (c) => {
      const r = await submit(h, c, "grep the workspace twice");
      if (r.status !== 202) throw new Error(`submit ${r.status}`);
      const frames = await readSse(h, r.body.run_id, { timeoutMs: 120_000 });
      return frames.at(-1)!;
    }));
    done = true;
    await probe;
    const failed = ends.filter((f) => f.event !== "run.completed");
    if (failed.length > 0) throw new Error(`runs ended ${JSON.stringify(failed[0].data)}`);
    console.log(
      `/health idle: median ${quantile(idle, 0.5).toFixed(1)} ms, max ${
        Math.max(...idle).toFixed(1)
      } ms`,
    );
    console.log(
      `/health while ${RUNS} Runs grep ${FILES} files twice: ${busy.length} probes, median ${
        quantile(busy, 0.5).toFixed(1)
      } ms, p99 ${quantile(busy, 0.99).toFixed(1)} ms, max ${Math.max(...busy).toFixed(1)} ms`,
    );
    measure("event_loop", "/health latency idle, max", Math.max(...idle), "ms");
    measure(
      "event_loop",
      `/health latency while ${RUNS} Runs grep, max`,
      Math.max(...busy),
      "ms",
      atMost(20, "≤ 20 ms stall [PF-2]"),
    );
    measure(
      "event_loop",
      `/health latency while ${RUNS} Runs grep, p99`,
      quantile(busy, 0.99),
      "ms",
    );
  } finally {
    await h.close();
  }
}

await main();
