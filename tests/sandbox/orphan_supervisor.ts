/**
 * A Control Plane stand-in for the parent-death test: spawns one confined
 * Worker that ignores end of input for 10 s, prints its pid, then waits to be
 * killed — so only the parent-death signal can end the Worker quickly.
 */
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { IPC_PROTOCOL_VERSION } from "../../runtime/protocol/ipc.ts";
import { anyFrame, probeCommand, recordingLogger } from "./helpers.ts";

const w = await spawnConfinedWorker({
  runRoot: Deno.args[0],
  deadlineMs: 60_000,
  log: recordingLogger(),
  parseFrame: anyFrame,
  command: probeCommand(Deno.args[1]),
});
await w.send({ v: IPC_PROTOCOL_VERSION, type: "probe.hold" });
console.log(JSON.stringify({ pid: w.pid }));
await w.exited;
