/**
 * Event-loop lag [PF-2]: through the real server, real confined Workers and
 * the scripted model, 4 Runs at once (4 Conversations) each run `file/grep`
 * twice with no match over a 1,000-file workspace (every file read) and then
 * stream their answer. The goal's measure is the server's own loop: the test
 * entry's lag monitor (tests/helpers/loop_lag.ts, a 2 ms timer inside the
 * server) logs every stall, and the bench reports the longest one that
 * overlapped the Runs, first on the fresh server with nothing else going on
 * (the goal's scenario). A second round of 4 Runs then runs while a probe
 * client (its own process, tools/bench/health_probe.ts) requests `/health`
 * back to back: the client's view, in which each stall counts once per loop
 * turn a request crosses (the connection guard, then the server); that round's
 * server stall is reported too (the probe's thousand requests a second are a
 * load of their own). The server runs with its default pool.
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/event_loop_bench.ts
 */
import type { FakeToolCall } from "../fake_ollama/frames.ts";
import { scriptedTools } from "../fake_ollama/scenarios.ts";
import { newConversation, readSse, startRunHarness, submit } from "../../tests/helpers/runs.ts";
import { atMost, measure } from "./report.ts";
import { maxLagBetween } from "../../tests/helpers/loop_lag.ts";
import { LOOP_LAG_LOG_ENV } from "../../tests/helpers/test_server_entry.ts";

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

/** The /health probe in its own process, requesting back to back until stopped. */
async function startProbe(url: string): Promise<{ stop(): Promise<number[]> }> {
  const probe = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      `--allow-net=127.0.0.1`,
      new URL("./health_probe.ts", import.meta.url).pathname,
      url,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = probe.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await out.read();
    if (done) throw new Error("the /health probe ended before it was ready");
    text += value;
  }
  if (!text.startsWith("ready\n")) throw new Error(`the /health probe said ${text}`);
  text = text.slice("ready\n".length);
  return {
    async stop() {
      await probe.stdin.close();
      for (;;) {
        const { value, done } = await out.read();
        if (done) break;
        text += value;
      }
      if (!(await probe.status).success) throw new Error("the /health probe failed");
      return JSON.parse(text) as number[];
    },
  };
}

async function main(): Promise<void> {
  const lagLog = Deno.makeTempFileSync({ prefix: "ab-loop-lag-" });
  const h = await startRunHarness({
    args: ["--worker-pool", "2"],
    env: { [LOOP_LAG_LOG_ENV]: lagLog },
  });
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

    /** 4 Runs at once (new Conversations); the longest server stall while they ran. */
    const round = async (probeUrl: string | null) => {
      h.ollama.enqueue(...Array.from({ length: RUNS * (steps.length + 1) }, () => src));
      const convs = await Promise.all(Array.from({ length: RUNS }, () => newConversation(h)));
      const probe = probeUrl === null ? null : await startProbe(probeUrl);
      const runsFrom = Date.now();
      const ends = await Promise.all(convs.map(async (c) => {
        const r = await submit(h, c, "grep the workspace twice");
        if (r.status !== 202) throw new Error(`submit ${r.status}`);
        const frames = await readSse(h, r.body.run_id, { timeoutMs: 120_000 });
        return frames.at(-1)!;
      }));
      // The Runs stream until the last one's terminal event (the server's clock): a stall that
      // starts after it (the heap trim that waits for no Run to be active) is not "while 4 Runs".
      const runsTo = Math.max(...ends.map((f) => Number((f.data as { ts: number }).ts)));
      if (!Number.isFinite(runsTo)) throw new Error("a terminal event without its ts");
      const latencies = probe === null ? null : await probe.stop();
      const failed = ends.filter((f) => f.event !== "run.completed");
      if (failed.length > 0) throw new Error(`runs ended ${JSON.stringify(failed[0].data)}`);
      return { stall: maxLagBetween(lagLog, runsFrom, runsTo), latencies };
    };

    // [PF-2]'s scenario first, on the fresh server: 4 Runs stream and grep, nothing else.
    const alone = await round(null);
    // Then the client's view: the same again while a probe requests /health back to back
    // (its own load on the loop: about a thousand requests a second).
    const probed = await round(h.server.url);
    const busy = probed.latencies!;
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
    console.log(
      `server event-loop stall while ${RUNS} Runs grep: max ${alone.stall.toFixed(1)} ms`,
    );
    console.log(
      `server event-loop stall while ${RUNS} Runs grep and /health is polled: max ${
        probed.stall.toFixed(1)
      } ms`,
    );
    measure(
      "event_loop",
      `server event-loop stall while ${RUNS} Runs grep, max`,
      alone.stall,
      "ms",
      atMost(20, "≤ 20 ms stall [PF-2]"),
    );
    measure(
      "event_loop",
      `server event-loop stall while ${RUNS} Runs grep and /health is polled, max`,
      probed.stall,
      "ms",
    );
    measure("event_loop", "/health latency idle, max", Math.max(...idle), "ms");
    // The client's view: a request crosses the connection guard and the server, several turns
    // of the same loop, so each of its stalls counts once per turn it holds up.
    measure("event_loop", `/health latency while ${RUNS} Runs grep, max`, Math.max(...busy), "ms");
    measure(
      "event_loop",
      `/health latency while ${RUNS} Runs grep, p99`,
      quantile(busy, 0.99),
      "ms",
    );
  } finally {
    await h.close();
    Deno.removeSync(lagLog);
  }
}

await main();
