/**
 * Test entry for the escape-probe suite: goes through EXACTLY the production
 * confinement (`workerCommand` → `runStage1` → execve → `runStage2` →
 * attestation) and then, instead of the HarnessKernel, runs real escape
 * attempts and reports the raw result of each.
 *
 * `--fault NAME` (stripped before the production parser sees argv, and carried
 * into stage 2 through the entry's args prefix) replaces ONE confinement step
 * to prove that a failing step means no Run. The production binary has no
 * such switch: faults exist only in this test module.
 */
import { workerCommand } from "../../sandbox/worker_entry.ts";
import { type ConfineSteps, PRODUCTION_STEPS } from "../../sandbox/confine.ts";
import { probeBody } from "./probe_body.ts";
import { encodeProgram, SECCOMP_RET_ALLOW } from "../../sandbox/seccomp_bpf.ts";

const FAULTS: Record<string, Partial<ConfineSteps>> = {
  // The host reports a Landlock ABI below the minimum.
  landlock_abi_5: { landlockAbi: () => 5 },
  // Landlock unavailable (landlock_create_ruleset failed).
  landlock_missing: { landlockAbi: () => 0 },
  // A filter the kernel rejects (unknown opcode).
  malformed_filter: {
    buildFilter: () => new Uint8Array([0xff, 0xff, 0, 0, 0, 0, 0, 0]),
  },
  // A filter that is not a whole number of instructions.
  truncated_filter: { buildFilter: () => new Uint8Array(12) },
  // An installer that claims success without installing anything.
  seccomp_skipped: { installSeccomp: () => ({ ok: true }) },
  // Layer test: seccomp replaced by an allow-all filter, Landlock alone holds.
  allow_all_filter: {
    buildFilter: () => encodeProgram([{ code: 0x06, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }]),
  },
  // Control for the parent-death test: never arm PDEATHSIG.
  no_pdeathsig: { parentDeathSignal: () => ({ ok: true }) },
  // Control for the fd test: leave inherited descriptors open across execve.
  keep_inherited_fds: { closeInheritedFds: () => ({ ok: true }) },
  // The production CPU limits scaled down to a 2 s soft limit, keeping the
  // production gap between soft and hard limit, so a spin test ends quickly.
  cpu_limit_2s: {
    rlimits: (plan) =>
      PRODUCTION_STEPS.rlimits(
        plan.map((s) =>
          s.name === "cpu" ? { ...s, value: 2n, hard: 2n + (s.hard ?? s.value) - s.value } : s
        ),
      ),
  },
};

const args = [...Deno.args];
let fault: string | null = null;
if (args[0] === "--fault") {
  fault = args[1];
  args.splice(0, 2);
  if (!Object.hasOwn(FAULTS, fault)) throw new Error(`unknown fault ${fault}`);
}
const code = await workerCommand(args, {
  body: probeBody,
  stage2: {
    module: new URL(import.meta.url),
    argsPrefix: fault === null ? [] : ["--fault", fault],
    // SECURITY (test only): Deno-level permissions so every attempt reaches the
    // kernel; the OS confinement must deny them on its own.
    denoFlags: ["--allow-read", "--allow-write", "--allow-net"],
  },
  steps: fault === null ? PRODUCTION_STEPS : { ...PRODUCTION_STEPS, ...FAULTS[fault] },
});
Deno.exit(code);
