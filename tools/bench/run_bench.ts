/**
 * Runs benchmark [SB-5, EV-2, OP-3]: the whole main path — real server child
 * process, real confined Worker per Run, scripted Ollama — measured from the
 * browser's side.
 *
 * 1. Harness overhead per Turn: submit → first `assistant.block.delta` at the
 *    SSE client, minus the scripted model's own time to first frame (measured
 *    directly against the scripted server in the same process). Also splits
 *    out submit → `model.request.started` (admission, Worker, attestation).
 *    Measured twice [PF-1]: with the production pool of pre-warmed Workers
 *    (each Turn starts once the pool is full again, as after any pause) and
 *    with no pool (the cold path: every Run spawns its Worker).
 * 2. Disk bytes written per Turn (/proc/<server>/io `write_bytes`, the bytes
 *    the server sent to storage) for a short and a long answer: the journal
 *    writes at semantic boundaries only, so the difference should be about the
 *    committed answer text (Turn row, completed block, search index), not per
 *    token. Median (the goal) and fewest of DISK_TURNS (see there).
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/run_bench.ts
 */
import { readProcText } from "../../sandbox/procfs.ts";
import { wordsAnswer } from "../fake_ollama/scenarios.ts";
import { startFakeOllama } from "../fake_ollama/server.ts";
import {
  newConversation,
  readSse,
  type RunHarness,
  startRunHarness,
  submit,
} from "../../tests/helpers/runs.ts";
import { childrenOf, waitFor } from "../../tests/helpers/worker_procs.ts";
import { WORKER_POOL_DEFAULT } from "../../runtime/limits.ts";
import { atMost, measure } from "./report.ts";
import { bareDenoStartMs } from "./bare_start.ts";

const TURNS = 10;
/**
 * Turns per answer length for the disk bytes [PF-4]. `write_bytes` also counts the
 * re-dirtying of a page that writeback cleaned between two of a Turn's commits (the WAL's
 * partly filled tail page and the WAL index); when writeback runs often (another process's
 * sync, a busy disk) most Turns pay that, so both the median and the fewest are reported.
 */
const DISK_TURNS = 9;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function writeBytes(pid: number): number {
  const io = readProcText(`/proc/${pid}/io`) ?? "";
  const m = /^write_bytes:\s*(\d+)$/m.exec(io);
  if (!m) throw new Error("no /proc/<pid>/io write_bytes");
  return Number(m[1]);
}

/**
 * How many frames the Agent database's WAL holds (the WAL index header's mxFrame, read from
 * its -shm): deterministic, unlike write_bytes. It restarts from 0 after a checkpoint, so a
 * Turn whose count went down is left out of the frames per Turn.
 */
function walFrames(h: RunHarness): number {
  const f = Deno.openSync(`${h.server.home}/data/agents/${h.agent}/state.sqlite-shm`);
  try {
    const head = new Uint8Array(48);
    f.readSync(head);
    return new DataView(head.buffer).getUint32(16, true);
  } finally {
    f.close();
  }
}

/** The scripted server's own time to first frame for the same script. */
async function modelTtfb(url: string, ollama: RunHarness["ollama"]): Promise<number> {
  ollama.enqueue(wordsAnswer(20));
  const t0 = performance.now();
  const res = await fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "qwen3.5:2b", messages: [], stream: true }),
  });
  const reader = res.body!.getReader();
  await reader.read();
  const ttfb = performance.now() - t0;
  await reader.cancel();
  return ttfb;
}

async function turn(h: RunHarness, conv: string, words: number) {
  h.ollama.enqueue(wordsAnswer(words));
  const t0 = performance.now();
  const r = await submit(h, conv, "benchmark question");
  if (r.status !== 202) throw new Error(`submit ${r.status}`);
  let first = 0;
  let request = 0;
  const frames = await readSse(h, r.body.run_id, {
    until: (f) => {
      if (f.event === "model.request.started" && request === 0) request = performance.now() - t0;
      if (f.event === "assistant.block.delta" && first === 0) first = performance.now() - t0;
      return f.event === "run.completed" || f.event === "run.failed";
    },
  });
  if (frames.at(-1)!.event !== "run.completed") throw new Error("turn failed");
  return { first, request };
}

/** Pooled Workers of the server that finished starting (their threads run under seccomp). */
function readyPooledWorkers(h: RunHarness): number {
  let n = 0;
  for (const pid of childrenOf(h.server.child.pid)) {
    try {
      if (!Deno.readLinkSync(`/proc/${pid}/cwd`).includes("/.runtime/workers/")) continue;
      if (/^Seccomp:\s+2$/m.test(readProcText(`/proc/${pid}/status`) ?? "")) n++;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return n;
}

/** Median harness overhead and submit → request over TURNS Turns, each in a new Conversation. */
async function overheadOf(
  h: RunHarness,
  ollama: RunHarness["ollama"],
  before: () => Promise<void>,
): Promise<{ overhead: number; request: number }> {
  await before();
  await turn(h, await newConversation(h), 5); // warm-up: module caches, SQLite pages
  const firsts: number[] = [];
  const requests: number[] = [];
  const ttfbs: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    ttfbs.push(await modelTtfb(ollama.url, ollama));
    const c = await newConversation(h);
    await before();
    const s = await turn(h, c, 20);
    firsts.push(s.first);
    requests.push(s.request);
  }
  return { overhead: median(firsts) - median(ttfbs), request: median(requests) };
}

async function coldPath(ollama: RunHarness["ollama"], bare: number): Promise<void> {
  const h = await startRunHarness({ ollama, args: ["--worker-pool", "0"] });
  try {
    const { overhead, request } = await overheadOf(h, ollama, () => Promise.resolve());
    console.log(`cold path (no pool): overhead ${overhead.toFixed(1)} ms, request ${request} ms`);
    measure("run", "submit → model.request.started, no pool, median", request, "ms");
    measure(
      "run",
      "harness overhead per Turn, cold path (no pool)",
      overhead,
      "ms",
      atMost(1.5 * 2 * bare, `≤ 1.5 × 2 bare Deno start-ups (${(2 * bare).toFixed(0)} ms) [PF-1]`),
    );
  } finally {
    await h.close();
  }
}

async function main(): Promise<void> {
  const ollama = await startFakeOllama();
  // [PF-1] The bound is measured in the same run: two bare Deno start-ups.
  const bare = await bareDenoStartMs();
  console.log(`bare \`deno run\` of an empty script: ${bare.toFixed(1)} ms (median)`);
  await coldPath(ollama, bare);
  const h = await startRunHarness({
    ollama,
    args: ["--worker-pool", String(WORKER_POOL_DEFAULT)],
  });
  const poolFull = () =>
    waitFor("the Worker pool is full", () => readyPooledWorkers(h) === WORKER_POOL_DEFAULT);
  try {
    const pid = h.server.child.pid;
    // [PF-5] The server's resident memory once started and qualified, before any Run.
    const idleRss = Number(
      /^VmRSS:\s*(\d+) kB$/m.exec(readProcText(`/proc/${pid}/status`) ?? "")?.[1],
    );
    console.log(`server idle RSS:                    ${(idleRss / 1024).toFixed(1)} MiB`);
    measure("run", "server idle RSS", idleRss / 1024, "MiB", atMost(100, "≤ 100 MiB [PF-5]"));
    const { overhead, request } = await overheadOf(h, ollama, poolFull);
    console.log(`turns measured:                     ${TURNS}`);
    console.log(`submit → model.request.started:     ${request.toFixed(1)} ms (median)`);
    console.log(`harness overhead per Turn (pooled): ${overhead.toFixed(1)} ms`);
    measure("run", "submit → model.request.started, pooled Worker, median", request, "ms");
    measure(
      "run",
      "harness overhead per Turn, pooled Worker (submit → first delta − model)",
      overhead,
      "ms",
      atMost(0.2 * 2 * bare, `≤ 0.2 × 2 bare Deno start-ups (${(2 * bare).toFixed(0)} ms) [PF-1]`),
    );

    for (
      const [label, words] of [["short answer (20 words)", 20], [
        "long answer (2000 words)",
        2000,
      ]] as const
    ) {
      const c = await newConversation(h);
      const per: number[] = [];
      const frames: number[] = [];
      for (let i = 0; i < DISK_TURNS; i++) {
        const before = writeBytes(pid);
        const framesBefore = walFrames(h);
        await turn(h, c, words);
        // Let the WAL write of the terminal transaction reach the block layer accounting.
        await new Promise((r) => setTimeout(r, 50));
        per.push(writeBytes(pid) - before);
        const framesAfter = walFrames(h);
        if (framesAfter >= framesBefore) frames.push(framesAfter - framesBefore);
      }
      const text = words * 4;
      measure(
        "run",
        `disk bytes per Turn, ${label}`,
        median(per),
        "B",
        atMost(65536, "≤ 64 KiB [PF-4]"),
      );
      measure(
        "run",
        `disk bytes per Turn, ${label}, fewest of ${DISK_TURNS}`,
        Math.min(...per),
        "B",
      );
      if (frames.length > 0) {
        measure("run", `WAL frames per Turn, ${label}, median`, median(frames), "frames");
      }
      console.log(
        `WAL frames per Turn, ${label}: ${frames.join(" ")} (page writes of the Turn's commits)`,
      );
      console.log(
        `disk bytes per Turn, ${label}: ${median(per)} median, ${Math.min(...per)} fewest ` +
          `(answer text ≈ ${text} bytes, ${words} deltas streamed)`,
      );
    }
  } finally {
    await h.close();
    await ollama.close();
  }
}

await main();
