/**
 * Worker lifecycle guarantees that need a second process [SB-1, PK-1]: a
 * Worker dies with its Control Plane (parent-death SIGKILL, re-checked after
 * it is armed), and `doctor` reports a real confined Worker.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";
import { parseStatus } from "../../sandbox/attestation.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { syscall } from "../../sandbox/libc.ts";
import { makeSandboxDirs } from "./helpers.ts";

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const r = await reader.read();
    if (r.done) break;
    text += new TextDecoder().decode(r.value);
  }
  reader.releaseLock();
  return text.split("\n")[0];
}

/** Starts a stand-in Control Plane with one held Worker, kills it, returns the Worker's fate. */
async function workerStateAfterParentDies(
  waitMs: number,
  fault?: string,
): Promise<string | undefined> {
  const sb = makeSandboxDirs();
  const cp = new Deno.Command(Deno.execPath(), {
    args: [
      ...denoRunFlags(),
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      new URL("./orphan_supervisor.ts", import.meta.url).pathname,
      sb.runRoot,
      ...(fault ? [fault] : []),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  let pid = 0;
  try {
    pid = JSON.parse(await firstLine(cp.stdout)).pid;
    assert(readProcText(`/proc/${pid}/status`) !== null);
    cp.kill("SIGKILL");
    await cp.status;
    let state: string | undefined = "alive";
    // Waits for the expected death (ends early), or watches the control case for waitMs.
    const until = Date.now() + waitMs;
    while (Date.now() < until && state !== undefined && !state.startsWith("Z")) {
      await new Promise((r) => setTimeout(r, 20));
      const text = readProcText(`/proc/${pid}/status`);
      state = text === null ? undefined : parseStatus(text).get("State");
    }
    return state;
  } finally {
    if (pid > 0) syscall("kill", pid, 9); // the control case leaves it running
    await cp.stdout.cancel();
    sb.cleanup();
  }
}

Deno.test("a Worker is killed when its Control Plane dies", async () => {
  // Generous for a loaded machine: the loop ends as soon as the Worker is gone.
  const state = await workerStateAfterParentDies(10_000);
  // Gone, or dead and waiting for its new parent to reap it.
  assert(state === undefined || state.startsWith("Z"), `worker state ${state}`);
});

Deno.test("without the parent-death step the held Worker would outlive its Control Plane (control)", async () => {
  const state = await workerStateAfterParentDies(1000, "no_pdeathsig");
  assert(state !== undefined && !state.startsWith("Z"), `worker state ${state}`);
});

Deno.test("doctor spawns a confined Worker and reports it verified", async () => {
  const home = Deno.makeTempDirSync({ prefix: "ab-doctor-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        "-A",
        new URL("../../main.ts", import.meta.url).pathname,
        "doctor",
        "--json",
        "--home",
        home,
      ],
      stderr: "inherit",
    }).output();
    assertEquals(out.code, 0);
    const report = JSON.parse(new TextDecoder().decode(out.stdout));
    assertEquals(report.sandboxable, true);
    assertEquals(report.worker.ok, true);
    assertEquals(report.worker.landlockAbi, report.landlockAbi);
    assert(report.worker.threads > 1);
    // The probe Run root is gone again.
    assertEquals([...Deno.readDirSync(`${home}/.runtime/doctor`)].length, 0);
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});
