/** `agent-builder doctor`: what this host supports; non-zero when Runs could not be sandboxed. */
import { probeHost } from "../../sandbox/probe.ts";
import { resolveHome } from "../home.ts";
import { probeConfinedWorker, type WorkerProbeReport } from "../worker/worker_probe.ts";
import { parseArgs } from "./args.ts";

export async function doctorCommand(argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ["home"], switches: ["json"] });
  const r = probeHost();
  // A real confined Worker, only when the host features are there [PK-5].
  const worker: WorkerProbeReport | null = r.sandboxable
    ? await probeConfinedWorker(resolveHome(a.flags.home ?? "."))
    : null;
  const ok = r.sandboxable && worker?.ok === true;
  if (a.switches.has("json")) {
    console.log(JSON.stringify({ ...r, worker, sandboxable: ok }, null, 2));
  } else {
    const mark = (b: boolean) => (b ? "ok " : "NO ");
    console.log(`host        ${r.os}/${r.arch}, kernel ${r.kernel}`);
    console.log(
      `${mark(r.landlockAbi !== null && !r.landlockReason)} landlock  ${
        r.landlockAbi === null ? "unavailable" : `ABI ${r.landlockAbi}`
      }${r.landlockReason ? ` — ${r.landlockReason}` : ""}`,
    );
    console.log(`${mark(r.seccomp)} seccomp   ${r.seccomp ? "filter mode" : r.seccompReason}`);
    console.log(`${mark(r.proc)} /proc     ${r.proc ? "mounted" : "missing"}`);
    console.log(`${mark(worker?.ok === true)} worker    ${describeWorker(worker)}`);
    const problems = [...r.problems];
    if (worker && !worker.ok) problems.push(`confined Worker refused (${worker.code})`);
    console.log(ok ? "Runs can be sandboxed." : `Runs would be REFUSED: ${problems.join("; ")}`);
  }
  return ok ? 0 : 1;
}

function describeWorker(w: WorkerProbeReport | null): string {
  if (w === null) return "not tried (host lacks a required feature)";
  if (!w.ok) return `refused: ${w.code} — ${w.detail}`;
  return `confined and attested in ${w.attestedMs} ms (${w.threads} threads verified, ` +
    `Landlock ABI ${w.landlockAbi}, seccomp TSYNC, no capabilities)`;
}
