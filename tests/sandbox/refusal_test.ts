/**
 * The Control Plane refuses Workers it cannot prove confined [SB-1, PK-5]:
 * impostors with a well-formed attestation, a missing/old Landlock ABI, a
 * malformed or skipped seccomp filter, and a stage 2 entered without stage 1.
 * Every refusal rejects `spawnConfinedWorker` (no handle, so no Run) and the
 * refused process is already dead.
 */
import { assert, assertEquals, assertMatch, assertRejects } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import { spawnConfinedWorker, type WorkerCommandSpec } from "../../runtime/worker/supervisor.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { syscall } from "../../sandbox/libc.ts";
import { denoRunFlags } from "../../sandbox/worker_entry.ts";
import { productionStage2Entry } from "../../runtime/worker/bundle.ts";
import {
  anyFrame,
  makeSandboxDirs,
  probeCommand,
  recordingLogger,
  scriptCommand,
} from "./helpers.ts";

// libc is loaded once per test module; load it before the first resource
// snapshot so the sanitizer below reports only what a refusal leaves open.
syscall("getpid");

/**
 * A refusal test that also fails when the refused Worker's stdin/stdout pipes
 * stay open in the Control Plane (one leaked fd per refused Run otherwise).
 */
function refusalTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, sanitizeResources: true, fn });
}

async function expectRefusal(
  command: (runRoot: string, parent: number, denoDir: string | null) => WorkerCommandSpec,
  code: AppError["code"],
  detail: RegExp,
): Promise<void> {
  const sb = makeSandboxDirs();
  const log = recordingLogger();
  try {
    let error: unknown = null;
    await spawnConfinedWorker({
      runRoot: sb.runRoot,
      deadlineMs: 30_000,
      log,
      parseFrame: anyFrame,
      command,
    }).then((w) => w.kill("killed"), (e) => error = e);
    assert(error instanceof AppError, `expected a refusal, got ${error}`);
    assertEquals(error.code, code);
    assertMatch(error.detail ?? "", detail);
    const refused = log.events.find((e) => e.event === "worker_refused");
    const pid = Number(refused?.fields?.pid);
    assert(pid > 0);
    // The refused process is gone (reaped), not left running unconfined.
    assertEquals(readProcText(`/proc/${pid}/status`), null);
  } finally {
    sb.cleanup();
  }
}

refusalTest("an unconfined impostor with a well-formed attestation frame is refused", async () => {
  await expectRefusal(
    scriptCommand("./impostor_worker.ts", "plain"),
    "sandbox_attestation_failed",
    /NoNewPrivs 0.*Seccomp 0/,
  );
});

refusalTest(
  "an impostor that filtered only its main thread is refused by the per-thread check",
  async () => {
    await expectRefusal(
      scriptCommand("./impostor_worker.ts", "main_thread_only"),
      "sandbox_attestation_failed",
      /task \d+: Seccomp 0/,
    );
  },
);

for (
  const [fault, step] of [
    ["landlock_abi_5", "landlock_abi"],
    ["landlock_missing", "landlock_abi"],
    ["malformed_filter", "seccomp"],
    ["truncated_filter", "seccomp_malformed"],
    ["seccomp_skipped", "seccomp_mode"],
  ]
) {
  refusalTest(
    `a Worker whose ${fault.replaceAll("_", " ")} is refused before any work`,
    async () => {
      await expectRefusal(
        probeCommand(fault),
        "sandbox_unavailable",
        new RegExp(`^step ${step} errno \\d+$`),
      );
    },
  );
}

refusalTest("stage 2 started directly, without stage 1, refuses to run", async () => {
  const command = (runRoot: string, parent: number): WorkerCommandSpec => ({
    executable: Deno.execPath(),
    args: [
      ...denoRunFlags(),
      productionStage2Entry().module.pathname,
      ...productionStage2Entry().argsPrefix,
      "--stage2",
      "--run-root",
      runRoot,
      "--parent",
      String(parent),
    ],
  });
  await expectRefusal(command, "sandbox_unavailable", /^step not_from_stage1 errno 0$/);
});

refusalTest(
  "stage 2 under no_new_privs but without the Landlock domain refuses to run",
  async () => {
    // setpriv sets no_new_privs and execs stage 2 directly: the one stage-1
    // effect stage 2 checks first is present, the Landlock domain is not.
    const command = (runRoot: string, parent: number): WorkerCommandSpec => ({
      executable: "setpriv",
      args: [
        "--no-new-privs",
        Deno.execPath(),
        ...denoRunFlags(),
        productionStage2Entry().module.pathname,
        ...productionStage2Entry().argsPrefix,
        "--stage2",
        "--run-root",
        runRoot,
        "--parent",
        String(parent),
      ],
    });
    await expectRefusal(command, "sandbox_unavailable", /^step landlock_inherited errno 0$/);
  },
);

refusalTest("a Worker that never attests is refused after the attestation timeout", async () => {
  const sb = makeSandboxDirs();
  try {
    let error: unknown = null;
    await spawnConfinedWorker({
      runRoot: sb.runRoot,
      deadlineMs: 30_000,
      log: recordingLogger(),
      parseFrame: anyFrame,
      command: scriptCommand("./silent_worker.ts"),
      attestationTimeoutMs: 300,
    }).then((w) => w.kill("killed"), (e) => error = e);
    assert(error instanceof AppError);
    assertEquals(error.code, "sandbox_unavailable");
    assertMatch(error.detail ?? "", /read timeout/);
  } finally {
    sb.cleanup();
  }
});

Deno.test("a Control Plane already under a seccomp filter still verifies its Workers", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      ...denoRunFlags(),
      "--allow-read",
      "--allow-write",
      "--allow-run",
      "--allow-env",
      new URL("./filtered_supervisor.ts", import.meta.url).pathname,
    ],
    stderr: "inherit",
  }).output();
  assertEquals(out.code, 0);
  const report = JSON.parse(new TextDecoder().decode(out.stdout));
  assertEquals(report, { attested: "sandbox.attestation", filters: "2" });
});

Deno.test("a Run root that does not exist means no Worker at all", async () => {
  const err = await assertRejects(() =>
    spawnConfinedWorker({
      runRoot: `/nonexistent-${crypto.randomUUID()}`,
      deadlineMs: 30_000,
      log: recordingLogger(),
      parseFrame: anyFrame,
    })
  );
  assert(err instanceof AppError);
  assertEquals(err.code, "sandbox_unavailable");
});
