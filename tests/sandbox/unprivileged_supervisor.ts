/**
 * A Control Plane stand-in run as an unprivileged uid (by the test, through
 * setpriv): spawns one production Worker and prints what /proc shows of it.
 */
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { parseStatus } from "../../sandbox/attestation.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { anyFrame, recordingLogger } from "./helpers.ts";

const runRoot = Deno.makeTempDirSync({ dir: Deno.args[0], prefix: "run-" });
const log = recordingLogger();
try {
  const w = await spawnConfinedWorker({ runRoot, deadlineMs: 30_000, log, parseFrame: anyFrame });
  const s = parseStatus(readProcText(`/proc/${w.pid}/status`) ?? "");
  const limits = readProcText(`/proc/${w.pid}/limits`) ?? "";
  const nproc = /Max processes\s+(\d+)/.exec(limits)?.[1];
  await w.kill("killed");
  console.log(JSON.stringify({
    uid: s.get("Uid")?.split(/\s+/)[0],
    capEff: s.get("CapEff"),
    capPrm: s.get("CapPrm"),
    noNewPrivs: s.get("NoNewPrivs"),
    seccomp: s.get("Seccomp"),
    nproc: Number(nproc),
  }));
} catch (err) {
  console.log(JSON.stringify({ error: String(err), events: log.events }));
}
