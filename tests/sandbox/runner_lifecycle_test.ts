/**
 * Runner lifecycle [EX-1, EX-2]: a server killed during a command leaves no
 * runner and no process of the command behind (a setsid'd daemon included);
 * a cancelled command ends everything; the slots bound commands per Run and
 * per server with exec_busy after the wait.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { acquireCommandSlot, executeInRunner, runCommand } from "../../runtime/exec/runner.ts";
import type { CommandJob } from "../../sandbox/runner_frames.ts";
import { listNumericEntries, readProcText } from "../../sandbox/procfs.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  CGROUP_NAME_PREFIX,
  ownMemoryCgroup,
  runnerCgroupDir,
  sweepStaleRunnerCgroups,
} from "../../sandbox/memory_cgroup.ts";

function processesWith(token: string): number[] {
  return listNumericEntries("/proc").filter((pid) =>
    (readProcText(`/proc/${pid}/cmdline`) ?? "").includes(token)
  );
}

/** Polls a state with a generous bound for a loaded machine (no fixed sleeps). */
async function until(what: string, ok: () => boolean, boundMs = 30_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function dirs() {
  const base = Deno.makeTempDirSync({ prefix: "ab-runner-life-" });
  Deno.chmodSync(base, 0o700);
  Deno.mkdirSync(`${base}/scratch`);
  Deno.mkdirSync(`${base}/tmp`);
  return { base, scratch: `${base}/scratch`, tmp: `${base}/tmp` };
}

const token = () => `${200000 + Math.floor(Math.random() * 700000)}.${Date.now() % 1000}`;

Deno.test("a server killed during a command leaves no runner and no process of the command", async () => {
  const d = dirs();
  const t = token();
  try {
    const server = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        "-A",
        new URL("./runner_server_stand_in.ts", import.meta.url).pathname,
        d.scratch,
        d.tmp,
        t,
      ],
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    // Running: the command and its daemon both exist.
    await until("the command and its daemon", () => processesWith(t).length >= 2);
    // The runner's own processes carry the scratch path on their command line.
    assert(processesWith(d.scratch).length >= 2, "runner stages visible");
    server.kill("SIGKILL");
    await server.status;
    await until(
      "every runner and command process gone",
      () => processesWith(t).length === 0 && processesWith(d.scratch).length === 0,
    );
    // Its memory cgroup is left behind (nobody removed it); the next server's
    // first command sweeps it (a parallel test process may have done so already).
    const place = ownMemoryCgroup();
    if (place !== null) {
      const stale = () =>
        [...Deno.readDirSync(place.parent)].filter((e) =>
          e.name.startsWith(CGROUP_NAME_PREFIX) &&
          readProcText(`/proc/${e.name.slice(CGROUP_NAME_PREFIX.length)}/stat`) === null
        ).length;
      await sweepStaleRunnerCgroups(place);
      assertEquals(stale(), 0);
    }
  } finally {
    Deno.removeSync(d.base, { recursive: true });
  }
});

Deno.test("a runner killed before it reports is outcome_unknown, and nothing of the command is left", async () => {
  const d = dirs();
  const t = token();
  try {
    const pending = runCommand({
      argv: ["sh", "-c", `(setsid -f sleep ${t} >/dev/null 2>&1 &); sleep ${t}`],
      cwd: "",
      scratchDir: d.scratch,
      tmpDir: d.tmp,
      timeoutS: 120,
      runKey: "unknown",
    });
    await until("the command and its daemon", () => processesWith(t).length >= 2);
    // Stage 2 (the runner that would report) dies without a word. Stage 1
    // carries the scratch path; stage 2 names stage 1.
    const stage1 = processesWith(d.scratch);
    const stage2 = stage1.flatMap((p) => processesWith(`--stage1\0${p}\0`));
    if (stage2.length === 1) Deno.kill(stage2[0], "SIGKILL");
    const r = await pending;
    assertEquals([stage1.length, stage2.length], [1, 1]);
    assertEquals(r.outcome, "outcome_unknown");
    assertEquals(processesWith(t), []);
  } finally {
    Deno.removeSync(d.base, { recursive: true });
  }
});

Deno.test("an error between a runner's verification and its release ends the runner before the call does", async () => {
  const d = dirs();
  try {
    const job: CommandJob = {
      kind: "command",
      path: "/bin/true",
      argv: ["true"],
      cwd: "",
      env: { PATH: "/usr/bin:/bin" },
      timeout_ms: 10_000,
    };
    const failure = new Error("an unexpected error before the release");
    let stage1 = 0;
    let stage2 = 0;
    const err = await executeInRunner({
      job,
      scratchDir: d.scratch,
      tmpDir: d.tmp,
      // Far past the test: only the guard can end this runner in time.
      backstopMs: 600_000,
      onVerified: (pid) => {
        stage2 = pid;
        const stat = readProcText(`/proc/${pid}/stat`) ?? "";
        stage1 = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        throw failure;
      },
    }).then(() => null, (e: unknown) => e);
    assert(err === failure, `the caller gets the error itself: ${err}`);
    assert(stage1 > 0 && stage2 > 0, "the runner was verified");
    // Stage 1 was killed and reaped before the call ended; the waiting stage 2 was killed.
    assertEquals(readProcText(`/proc/${stage1}/stat`), null);
    await until("the runner's stage 2 gone", () => {
      const st = readProcText(`/proc/${stage2}/stat`);
      return st === null || st.slice(st.lastIndexOf(")") + 2).startsWith("Z");
    });
    assertEquals(processesWith(d.scratch), []);
    // Its memory cgroup went with it.
    const place = ownMemoryCgroup();
    if (place !== null) {
      assert(!existsDir(runnerCgroupDir(place, stage1)), "the runner's memory cgroup is removed");
    }
  } finally {
    Deno.removeSync(d.base, { recursive: true });
  }
});

function existsDir(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

Deno.test("a cancelled command ends with outcome cancelled and nothing left", async () => {
  const d = dirs();
  const t = token();
  try {
    const ac = new AbortController();
    let seen = "";
    const r = await runCommand({
      argv: ["sh", "-c", `echo ready; (setsid -f sleep ${t} >/dev/null 2>&1 &); sleep ${t}`],
      cwd: "",
      scratchDir: d.scratch,
      tmpDir: d.tmp,
      timeoutS: 120,
      runKey: "cancel",
      signal: ac.signal,
      onOutput: (x) => {
        seen += x.text;
        if (seen.includes("ready")) ac.abort();
      },
    });
    assertEquals([r.outcome, r.stdout.text], ["cancelled", "ready\n"]);
    assertEquals(processesWith(t), []);
  } finally {
    Deno.removeSync(d.base, { recursive: true });
  }
});

Deno.test("one command per Run and two per server: the next waits, then exec_busy", async () => {
  const code = async (p: Promise<unknown>) => {
    try {
      await p;
      return "acquired";
    } catch (e) {
      return e instanceof AppError ? e.code : String(e);
    }
  };
  const a = await acquireCommandSlot("run-a", 0);
  // The same Run: busy while its command runs.
  assertEquals(await code(acquireCommandSlot("run-a", 50)), "exec_busy");
  const b = await acquireCommandSlot("run-b", 0);
  // A third Run: the server's two slots are taken.
  assertEquals(await code(acquireCommandSlot("run-c", 50)), "exec_busy");
  // A waiter gets the slot as soon as one is released (within its wait).
  const waiting = acquireCommandSlot("run-c", 30_000);
  a();
  const c = await waiting;
  b();
  c();
  const again = await acquireCommandSlot("run-a", 0);
  again();
});
