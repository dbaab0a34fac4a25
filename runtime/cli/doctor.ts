/** `agent-builder doctor`: what this host supports; non-zero when Runs could not be sandboxed. */
import { probeHost } from "../../sandbox/probe.ts";
import { parseArgs } from "./args.ts";

export function doctorCommand(argv: string[]): number {
  const a = parseArgs(argv, { flags: ["home"], switches: ["json"] });
  const r = probeHost();
  if (a.switches.has("json")) {
    console.log(JSON.stringify(r, null, 2));
  } else {
    const ok = (b: boolean) => (b ? "ok " : "NO ");
    console.log(`host        ${r.os}/${r.arch}, kernel ${r.kernel}`);
    console.log(
      `${ok(r.landlockAbi !== null && !r.landlockReason)} landlock  ${
        r.landlockAbi === null ? "unavailable" : `ABI ${r.landlockAbi}`
      }${r.landlockReason ? ` — ${r.landlockReason}` : ""}`,
    );
    console.log(`${ok(r.seccomp)} seccomp   ${r.seccomp ? "filter mode" : r.seccompReason}`);
    console.log(`${ok(r.proc)} /proc     ${r.proc ? "mounted" : "missing"}`);
    console.log(
      r.sandboxable ? "Runs can be sandboxed." : `Runs would be REFUSED: ${r.problems.join("; ")}`,
    );
  }
  return r.sandboxable ? 0 : 1;
}
