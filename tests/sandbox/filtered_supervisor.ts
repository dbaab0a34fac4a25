/**
 * A Control Plane stand-in that already runs under a seccomp filter (as in a
 * container): installs an allow-all filter on itself, spawns a confined
 * Worker through the real supervisor and prints the verified attestation.
 */
import { installSeccompAllThreads } from "../../sandbox/seccomp.ts";
import { encodeProgram, SECCOMP_RET_ALLOW } from "../../sandbox/seccomp_bpf.ts";
import { syscall } from "../../sandbox/libc.ts";
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { parseStatus } from "../../sandbox/attestation.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { anyFrame, makeSandboxDirs, probeCommand, recordingLogger } from "./helpers.ts";

if (syscall("prctl", 38, 1, 0, 0, 0).ret !== 0n) Deno.exit(10);
const allowAll = encodeProgram([{ code: 0x06, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }]);
if (!installSeccompAllThreads(allowAll).ok) Deno.exit(11);
const sb = makeSandboxDirs();
try {
  const w = await spawnConfinedWorker({
    runRoot: sb.runRoot,
    deadlineMs: 30_000,
    log: recordingLogger(),
    parseFrame: anyFrame,
    command: probeCommand(),
  });
  const s = parseStatus(readProcText(`/proc/${w.pid}/status`) ?? "");
  console.log(JSON.stringify({ attested: w.attestation.type, filters: s.get("Seccomp_filters") }));
  await w.kill("killed");
} finally {
  sb.cleanup();
}
