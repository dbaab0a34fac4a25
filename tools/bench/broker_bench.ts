/**
 * Broker overhead [MB]: time-to-first-delta and throughput of a streamed
 * answer read through the Model Broker (pinned HTTP/1.1, NDJSON bounds,
 * schema checks, repetition guard, coalescing, ledger/observer callbacks)
 * versus the same scripted stream read directly from the scripted Ollama
 * server with `fetch` + line splitting + JSON.parse — in one run, as ratios.
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/broker_bench.ts
 */
import { createBroker } from "../../runtime/model/broker.ts";
import { createCatalog } from "../../runtime/model/catalog.ts";
import type { Logger } from "../../runtime/log.ts";
import { contentFrame, doneFrame } from "../fake_ollama/frames.ts";
import type { ScriptSource } from "../fake_ollama/server.ts";
import { startFakeOllama } from "../fake_ollama/server.ts";
import { atMost, measure } from "./report.ts";

const RUNS = 15;
const FRAMES = 1500; // ≈ 6 KiB of visible text: under the 12 KiB ceiling
const silent: Logger = { info() {}, warn() {}, error() {}, flush() {}, close() {} };

function words(): string[] {
  return Array.from({ length: FRAMES }, (_, i) => ` w${i.toString(36)}`);
}

function script(): ScriptSource {
  const ws = words();
  return (c) => ({
    kind: "stream",
    steps: (function* () {
      for (const w of ws) yield { frame: contentFrame(c.model, w) };
      yield { frame: doneFrame(c.model, { evalCount: FRAMES }) };
    })(),
  });
}

interface Sample {
  firstMs: number;
  totalMs: number;
  bytes: number;
}

async function direct(url: string): Promise<Sample> {
  const t0 = performance.now();
  const res = await fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "qwen3.5:2b",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    }),
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let first = -1;
  let bytes = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const f = JSON.parse(line);
      const c = f.message?.content ?? "";
      if (c && first < 0) first = performance.now() - t0;
      bytes += c.length;
    }
  }
  return { firstMs: first, totalMs: performance.now() - t0, bytes };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const ollama = await startFakeOllama();
const broker = createBroker({
  catalog: createCatalog({ ollamaUrl: ollama.url }),
  log: silent,
  qualifyNow: false,
});
await broker.requalify();
if (!broker.status().available) throw new Error("scripted Ollama did not qualify");

const viaDirect: Sample[] = [];
const viaBroker: Sample[] = [];
let deltaCount = 0;
for (let run = 0; run < RUNS + 2; run++) {
  ollama.enqueue(script());
  const d = await direct(ollama.url);
  ollama.enqueue(script());
  const t0 = performance.now();
  let first = -1;
  let deltas = 0;
  const out = await broker.chat({
    modelId: "qwen3.5:2b",
    phase: "plain",
    messages: [{ role: "user", content: "hi" }],
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    ledger: { started() {}, finished() {} },
    observer: { attemptStarted() {}, attemptFinished() {} },
    onDelta: () => {
      if (first < 0) first = performance.now() - t0;
      deltas++;
    },
  });
  const totalMs = performance.now() - t0;
  if (out.kind !== "completed" || out.reason !== "stop") {
    throw new Error(`broker run failed: ${JSON.stringify(out)}`);
  }
  if (run < 2) continue; // warm-up
  viaDirect.push(d);
  viaBroker.push({ firstMs: first, totalMs, bytes: out.content.length });
  deltaCount = deltas;
}
await broker.close();
await ollama.close();

const dFirst = median(viaDirect.map((s) => s.firstMs));
const bFirst = median(viaBroker.map((s) => s.firstMs));
const dTput = median(viaDirect.map((s) => FRAMES / (s.totalMs / 1000)));
const bTput = median(viaBroker.map((s) => FRAMES / (s.totalMs / 1000)));
console.log(
  `broker_bench: ${RUNS} runs of ${FRAMES} frames (${viaBroker[0].bytes} visible bytes), medians`,
);
console.log(
  `  time to first content  direct ${dFirst.toFixed(2)} ms   broker ${
    bFirst.toFixed(2)
  } ms   ratio ${(bFirst / dFirst).toFixed(2)}`,
);
console.log(
  `  throughput (frames/s)  direct ${dTput.toFixed(0)}   broker ${bTput.toFixed(0)}   ratio ${
    (bTput / dTput).toFixed(2)
  }`,
);
console.log(`  deltas delivered by the broker per answer: ${deltaCount} (≤ 128)`);
measure("broker", "time to first content, broker ÷ direct", bFirst / dFirst, "×");
measure("broker", "throughput, broker ÷ direct", bTput / dTput, "×");
measure("broker", "deltas per answer", deltaCount, "", atMost(128, "≤ 128"));
