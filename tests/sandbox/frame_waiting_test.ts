/**
 * A confined Worker tells whether its Run's first frame is already waiting
 * (`WorkerPort.frameWaiting`, ppoll on stdin) [PF-1]: false while nothing was
 * sent, true once a frame is in the pipe, and the frame is then read whole —
 * the check consumes nothing. The harness body uses it to skip or stop its
 * warm-up Turn on the cold path.
 */
import { assertEquals } from "../helpers/assert.ts";
import type { WorkerCommandSpec } from "../../runtime/worker/supervisor.ts";
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";
import { anyFrame, makeSandboxDirs, recordingLogger } from "./helpers.ts";

function waitingCommand(runRoot: string, parentPid: number, denoDir: string | null) {
  const spec: WorkerCommandSpec = {
    executable: Deno.execPath(),
    args: [
      ...denoRunFlags(),
      new URL("./waiting_worker.ts", import.meta.url).pathname,
      "--run-root",
      runRoot,
      "--parent",
      String(parentPid),
      ...(denoDir ? ["--deno-dir", denoDir] : []),
    ],
  };
  return spec;
}

Deno.test("a confined Worker sees a frame waiting on its input without consuming it", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawnConfinedWorker({
      runRoot: sb.runRoot,
      deadlineMs: 60_000,
      log: recordingLogger(),
      parseFrame: anyFrame,
      command: waitingCommand,
      removeRunRoot: false,
    });
    try {
      assertEquals(await w.receive(30_000), { v: 2, type: "probe.ready", waiting: false });
      const ping = { v: 2, type: "probe.ping", n: 7, text: "x".repeat(1000) };
      await w.send(ping);
      assertEquals(await w.receive(30_000), { v: 2, type: "probe.seen" });
      assertEquals(await w.receive(30_000), { v: 2, type: "probe.echo", frame: ping });
      assertEquals((await w.exited).code, 0);
    } finally {
      await w.kill("killed");
    }
  } finally {
    sb.cleanup();
  }
});
