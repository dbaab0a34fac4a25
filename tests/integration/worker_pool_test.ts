/**
 * [PF-1] The pre-warmed Worker pool against the real server, real confined
 * Workers and the scripted model: pooled Workers are confined on every thread
 * (seccomp, no_new_privs, no capabilities, the sandbox uid) before any Run
 * takes one and hold nothing of an Agent; a Run takes a pooled Worker, which
 * is never used again; the pool refills after a take and after a crash; a
 * stopped server leaves no Worker behind. The refill after a take waits until
 * the taker says so (its Run's first model call ended) or the bound passed.
 */
import { setImmediate } from "node:timers";
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit, waitTurn } from "../helpers/runs.ts";
import { childrenOf, exited, waitFor, workerOfRun } from "../helpers/worker_procs.ts";
import { parseStatus, readProcSnapshot } from "../../sandbox/attestation.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { makeTempHome } from "../helpers/home.ts";
import { silentLogger } from "../../runtime/log.ts";
import { parseWorkerFrame, type WorkerToControl } from "../../runtime/protocol/worker_frames.ts";
import { WorkerPool } from "../../runtime/worker/pool.ts";
import { spawnConfinedWorker, type WorkerHandle } from "../../runtime/worker/supervisor.ts";

/** The server's pooled (not yet taken) Workers: children whose cwd is a pool root. */
function pooledWorkers(serverPid: number, home: string): number[] {
  const out: number[] = [];
  for (const pid of childrenOf(serverPid)) {
    try {
      if (Deno.readLinkSync(`/proc/${pid}/cwd`).startsWith(`${home}/.runtime/workers/`)) {
        out.push(pid);
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
  return out.sort();
}

/** What keeps `pid` from being confined on every thread (empty when it is). */
function confinementProblems(pid: number): string[] {
  const snap = readProcSnapshot(pid);
  if (snap === null) return [`Worker ${pid} does not exist`];
  const problems: string[] = [];
  for (const [tid, text] of snap.tasks) {
    const st = parseStatus(text);
    const where = `Worker ${pid} thread ${tid}`;
    if (st.get("Seccomp") !== "2") problems.push(`${where}: Seccomp ${st.get("Seccomp")}`);
    if (st.get("NoNewPrivs") !== "1") problems.push(`${where}: NoNewPrivs ${st.get("NoNewPrivs")}`);
    for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
      if (st.get(cap) !== "0000000000000000") problems.push(`${where}: ${cap} ${st.get(cap)}`);
    }
    if (st.get("Uid")!.split(/\s+/).includes("0")) problems.push(`${where}: uid 0`);
  }
  return problems;
}

function assertConfinedOnAllThreads(pid: number): void {
  assertEquals(confinementProblems(pid), [], `Worker ${pid} is confined on every thread`);
}

/**
 * Two pooled Workers that finished starting. A pooled Worker is still starting
 * (stage 1, not yet confined) for a moment after it appears; the pool hands out
 * only attested ones, so the test waits for that state before it looks.
 */
async function waitForReadyPool(serverPid: number, home: string): Promise<number[]> {
  let pool: number[] = [];
  await waitFor("two confined pooled Workers", () => {
    pool = pooledWorkers(serverPid, home);
    return pool.length === 2 && pool.every((pid) => confinementProblems(pid).length === 0);
  });
  return pool;
}

Deno.test("pooled Workers are confined before use, each serves one Run, and the pool refills after takes and crashes", async () => {
  const h = await startRunHarness({ args: ["--worker-pool", "2"] });
  const serverPid = h.server.child.pid;
  const home = h.server.home;
  try {
    let pool = await waitForReadyPool(serverPid, home);
    for (const pid of pool) {
      // Its root is empty and belongs to no Agent.
      const cwd = Deno.readLinkSync(`/proc/${pid}/cwd`);
      assertEquals([...Deno.readDirSync(cwd)], [], "a pooled Worker's root is empty");
    }

    // A Run takes a pooled Worker: one that never answers holds it while we look.
    const conv = await newConversation(h);
    h.ollama.enqueue({ kind: "stream", steps: [{ hang: true }] });
    const held = await submit(h, conv, "held while the test looks at its Worker");
    assertEquals(held.status, 202);
    let w: number | null = null;
    await waitFor(
      "the Run's Worker",
      () => (w = workerOfRun(serverPid, held.body.run_id)) !== null,
    );
    assert(pool.includes(w!), `the Run's Worker ${w} is one that waited in the pool (${pool})`);
    assertConfinedOnAllThreads(w!);
    // Its model call is under way (so the held script is consumed) before the cancel.
    await h.ollama.waitForChat(0);
    const c = await h.api("POST", `/api/agents/${h.agent}/runs/${held.body.run_id}/cancel`);
    assert(c.status < 300, `cancel: ${c.status}`);
    assertEquals((await readSse(h, held.body.run_id)).at(-1)!.event, "run.cancelled");
    await waitFor("the Run's Worker is gone", () => exited(w!));
    // A replacement was started; the used Worker is never pooled again.
    pool = await waitForReadyPool(serverPid, home);
    assert(!pool.includes(w!), "the used Worker is not in the pool");

    // A pooled Worker serves a whole Turn to completion.
    h.ollama.enqueue(scenarios.text("answered by a pre-warmed Worker"));
    const r = await submit(h, conv, "answer normally");
    assertEquals(r.status, 202);
    assertEquals((await readSse(h, r.body.run_id)).at(-1)!.event, "run.completed");
    const turn = await waitTurn(h, conv, r.body.run_id);
    assertEquals(turn.state, "completed");
    pool = await waitForReadyPool(serverPid, home);

    // A pooled Worker that dies is replaced by a new one.
    const victim = pool[0];
    Deno.kill(victim, "SIGKILL");
    await waitFor("the dead Worker is gone", () => exited(victim));
    pool = await waitForReadyPool(serverPid, home);
    assert(!pool.includes(victim), "the dead Worker was replaced");

    // Shutdown shrinks the pool to zero: no Worker outlives the server.
    const last = [...pool];
    assertEquals(await h.server.stop(), 0);
    for (const pid of last) assert(exited(pid), `pooled Worker ${pid} is gone after shutdown`);
  } finally {
    await h.close();
  }
});

Deno.test("with an empty pool a Run spawns its own Worker (the cold path) and nothing waits pooled", async () => {
  const h = await startRunHarness({ args: ["--worker-pool", "0"] });
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(scenarios.text("cold"));
    const r = await submit(h, conv, "cold start");
    assertEquals(r.status, 202);
    const frames = await readSse(h, r.body.run_id);
    assertEquals(frames.at(-1)!.event, "run.completed");
    assertEquals(pooledWorkers(h.server.child.pid, h.server.home), []);
  } finally {
    await h.close();
  }
});

/** A pool of one real confined Worker whose spawns are counted. */
function countedPool(root: string, refillDeferMaxMs: number) {
  const counted = { spawns: 0 };
  const pool = new WorkerPool<WorkerToControl>({
    root,
    size: 1,
    log: silentLogger,
    refillDeferMaxMs,
    spawn: (workerRoot) => {
      counted.spawns++;
      return spawnConfinedWorker({
        runRoot: workerRoot,
        log: silentLogger,
        parseFrame: parseWorkerFrame,
      });
    },
  });
  return { pool, counted };
}

Deno.test("a take starts the pool's replacement only once the taker says so, or once the bound passed", async () => {
  const root = makeTempHome();
  Deno.mkdirSync(`${root}/.runtime`, { mode: 0o700 });
  Deno.mkdirSync(`${root}/runs`, { mode: 0o700 });
  const taken: WorkerHandle<WorkerToControl>[] = [];
  // A bound far beyond the test: only the taker's word refills this pool.
  const held = countedPool(root, 3_600_000);
  try {
    held.pool.start();
    await waitFor("one pooled Worker", () => held.pool.ready === 1);
    assertEquals(held.counted.spawns, 1);
    let firstCallEnded!: () => void;
    taken.push(
      await held.pool.take(
        `${root}/runs/a`,
        60_000,
        new Promise<void>((r) => (firstCallEnded = r)),
      ),
    );
    assertEquals(held.counted.spawns, 1, "no replacement while the Run is on its way to its model");
    assertEquals(held.pool.ready, 0);
    firstCallEnded();
    await waitFor("the replacement is ready", () => held.pool.ready === 1);
    assertEquals(held.counted.spawns, 2);
  } finally {
    await Promise.all(taken.splice(0).map((w) => w.kill("cancelled")));
    await held.pool.shutdown();
  }
  // A taker that never says so: the bound (here the next turn of the event loop) refills.
  const bounded = countedPool(root, 0);
  try {
    bounded.pool.start();
    await waitFor("one pooled Worker", () => bounded.pool.ready === 1);
    taken.push(await bounded.pool.take(`${root}/runs/b`, 60_000, new Promise(() => {})));
    assertEquals(bounded.counted.spawns, 1, "the refill waits for the bound");
    await waitFor("the replacement is ready", () => bounded.pool.ready === 1);
    assertEquals(bounded.counted.spawns, 2);
  } finally {
    await Promise.all(taken.map((w) => w.kill("cancelled")));
    await bounded.pool.shutdown();
  }
});

Deno.test("a pool's spawns run on loop turns of their own, never in the section that asked for them", async () => {
  const root = makeTempHome();
  Deno.mkdirSync(`${root}/.runtime`, { mode: 0o700 });
  // [PF-2] A spawn's synchronous part (fork, exec, checks) must not lengthen the caller's section:
  // a submit's (the cold path's take) or the one that ends a Run's first model call (a refill).
  const refused = new Error("no Worker in this test");
  const counted = { spawns: 0 };
  const pool = new WorkerPool<WorkerToControl>({
    root,
    size: 0,
    log: silentLogger,
    spawn: () => {
      counted.spawns++;
      return Promise.reject(refused);
    },
  });
  const turn = () => new Promise<void>((r) => setImmediate(r));
  try {
    pool.start();
    const taking = pool.take(`${root}/runs/a`, 60_000).catch((e) => e);
    assertEquals(counted.spawns, 0, "the take spawned in its caller's section");
    await turn();
    assertEquals(counted.spawns, 1);
    assertEquals(await taking, refused);
  } finally {
    await pool.shutdown();
  }
  const filling = new WorkerPool<WorkerToControl>({
    root,
    size: 2,
    log: silentLogger,
    spawn: () => {
      counted.spawns++;
      return Promise.reject(refused);
    },
  });
  try {
    counted.spawns = 0;
    filling.start();
    assertEquals(counted.spawns, 0, "the fill spawned in its caller's section");
    await turn();
    assertEquals(counted.spawns, 1, "two spawns in one loop turn");
    await turn();
    assertEquals(counted.spawns, 2);
  } finally {
    await filling.shutdown();
  }
});

Deno.test("--worker-pool outside 0..4 is a usage error", async () => {
  for (const bad of ["5", "-1", "two"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        new URL("../../main.ts", import.meta.url).pathname,
        "serve",
        "--worker-pool",
        bad,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(out.code, 2, `--worker-pool ${bad}`);
    assert(new TextDecoder().decode(out.stderr).includes("--worker-pool must be 0..4"));
  }
});
