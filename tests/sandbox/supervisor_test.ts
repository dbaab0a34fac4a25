/**
 * Supervisor behaviour with real confined Workers [SB-1, SB-4, SB-6]: the
 * production `worker` command attests and talks NDJSON; the deadline, IPC
 * bounds (line size, non-JSON, rounds, timeouts) and the Run tree watch kill
 * the Worker with fixed codes; the Run root is removed at terminal.
 */
import { assert, assertEquals, assertRejects } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  IPC_LINE_MAX_BYTES,
  IPC_ROUNDS_MAX,
  RUN_TREE_ENTRIES_MAX,
  RUN_TREE_LOGICAL_BYTES_MAX,
} from "../../runtime/limits.ts";
import { IPC_PROTOCOL_VERSION } from "../../runtime/protocol/ipc.ts";
import { spawnConfinedWorker } from "../../runtime/worker/supervisor.ts";
import { syscall } from "../../sandbox/libc.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { anyFrame, makeSandboxDirs, probeCommand, recordingLogger } from "./helpers.ts";

// libc is loaded once per test module; load it before the first resource
// snapshot so the sanitizer reports only what a Worker's ending leaves open.
syscall("getpid");

/**
 * Every ending (exit, deadline, protocol, tree limit, kill, cancel) must
 * release the Worker's stdin/stdout pipes in the Control Plane: the resource
 * sanitizer fails the test otherwise (one leaked fd per Run).
 */
function supervisedTest(name: string, fn: () => Promise<void>): void {
  Deno.test({ name, sanitizeResources: true, fn });
}

const ping = { v: IPC_PROTOCOL_VERSION, type: "ping" };
const exists = (p: string) => Deno.stat(p).then(() => true, () => false);

function spawn(runRoot: string, deadlineMs = 30_000, production = false) {
  return spawnConfinedWorker({
    runRoot,
    deadlineMs,
    log: recordingLogger(),
    parseFrame: anyFrame,
    command: production ? undefined : probeCommand(),
  });
}

supervisedTest(
  "the production worker command attests and hands the IPC port to the HarnessKernel",
  async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawn(sb.runRoot, 30_000, true);
      assertEquals(w.attestation.pid, w.pid);
      assertEquals(w.attestation.ppid, Deno.pid);
      // Not a work frame: the kernel answers with its terminal frame and exits 0.
      await w.send(ping);
      assertEquals((await w.receive(5_000))?.type, "turn.finish");
      await w.endInput();
      const exit = await w.exited;
      assertEquals(exit, { code: 0, signal: null, reason: "exited", errorCode: null });
      assertEquals(await exists(sb.runRoot), false);
    } finally {
      sb.cleanup();
    }
  },
);

supervisedTest("a Worker past its deadline is killed with model_turn_deadline", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawn(sb.runRoot, 400);
    const exit = await w.exited;
    assertEquals(exit.reason, "deadline");
    assertEquals(exit.signal, "SIGKILL");
    assertEquals(exit.errorCode, "model_turn_deadline");
    assertEquals(await exists(sb.runRoot), false);
  } finally {
    sb.cleanup();
  }
});

for (
  const [name, bytes, newline] of [
    ["a line longer than IPC_LINE_MAX_BYTES", IPC_LINE_MAX_BYTES + 1, false],
    ["a line that is not JSON", 10, true],
  ] as const
) {
  supervisedTest(`${name} from a Worker is worker_protocol_error and kills it`, async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawn(sb.runRoot);
      await w.send({ v: IPC_PROTOCOL_VERSION, type: "probe.raw", bytes, newline });
      const err = await assertRejects(() => w.receive(10_000));
      assert(err instanceof AppError);
      assertEquals(err.code, "worker_protocol_error");
      const exit = await w.exited;
      assertEquals([exit.reason, exit.errorCode], ["protocol", "worker_protocol_error"]);
    } finally {
      sb.cleanup();
    }
  });
}

supervisedTest(
  "a Worker that does not answer within the reply timeout is a protocol error",
  async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawn(sb.runRoot);
      const err = await assertRejects(() => w.receive(200));
      assert(err instanceof AppError);
      assertEquals(err.code, "worker_protocol_error");
      assertEquals((await w.exited).reason, "protocol");
    } finally {
      sb.cleanup();
    }
  },
);

supervisedTest(
  "sending more than IPC_ROUNDS_MAX frames is refused and kills the Worker",
  async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawn(sb.runRoot);
      for (let i = 0; i < IPC_ROUNDS_MAX; i++) {
        await w.send(ping);
        assertEquals((await w.receive(5_000))?.type, "pong");
      }
      const err = await assertRejects(() => w.send(ping));
      assert(err instanceof AppError);
      assertEquals(err.code, "worker_protocol_error");
      assertEquals((await w.exited).errorCode, "worker_protocol_error");
    } finally {
      sb.cleanup();
    }
  },
);

supervisedTest("a Run tree over RUN_TREE_ENTRIES_MAX entries kills the Worker", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawn(sb.runRoot);
    for (let i = 0; i <= RUN_TREE_ENTRIES_MAX; i++) {
      Deno.writeFileSync(`${sb.runRoot}/output/f${i}`, new Uint8Array(0));
    }
    const exit = await w.exited;
    assertEquals([exit.reason, exit.errorCode], ["tree_limit", "worker_resource_limit"]);
    assertEquals(await exists(sb.runRoot), false);
  } finally {
    sb.cleanup();
  }
});

supervisedTest("a Run tree over RUN_TREE_LOGICAL_BYTES_MAX kills the Worker", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawn(sb.runRoot);
    const f = await Deno.open(`${sb.runRoot}/output/big`, { write: true, create: true });
    await f.truncate(RUN_TREE_LOGICAL_BYTES_MAX + 1); // sparse: logical bound, not allocated
    f.close();
    const exit = await w.exited;
    assertEquals(exit.reason, "tree_limit");
  } finally {
    sb.cleanup();
  }
});

supervisedTest("cancel() ends the Worker with run_cancelled", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawn(sb.runRoot);
    const exit = await w.cancel(500);
    assertEquals([exit.reason, exit.errorCode], ["cancelled", "run_cancelled"]);
  } finally {
    sb.cleanup();
  }
});

supervisedTest("sending to a Worker that is gone is worker_crashed", async () => {
  const sb = makeSandboxDirs();
  try {
    const w = await spawn(sb.runRoot);
    await w.kill("killed");
    const err = await assertRejects(() => w.send(ping));
    assert(err instanceof AppError);
    assertEquals(err.code, "worker_crashed");
  } finally {
    sb.cleanup();
  }
});

supervisedTest(
  "the production Worker runs with a minimal environment and only --allow-ffi",
  async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawn(sb.runRoot, 30_000, true);
      // Read as root through the kernel's view of the stage-2 image (non-dumpable,
      // so this needs the Control Plane's privileges — the suite runs as root).
      const nul = (path: string) => (readProcText(path) ?? "").split("\0").filter((x) => x !== "");
      const environ = nul(`/proc/${w.pid}/environ`);
      const cmdline = nul(`/proc/${w.pid}/cmdline`);
      await w.kill("killed");
      // This test process has PATH, HOME and more: none of it may reach the Worker.
      assert(Deno.env.get("PATH") !== undefined);
      const names = environ.map((kv) => kv.slice(0, kv.indexOf("="))).sort();
      assertEquals(names.filter((n) => n !== "DENO_DIR"), ["DENO_NO_UPDATE_CHECK", "NO_COLOR"]);
      assert(cmdline.includes("--stage2"), cmdline.join(" "));
      const perms = cmdline.filter((a) =>
        /^--(allow|deny|unstable|v8-flags|inspect)/.test(a) || a === "-A"
      );
      assertEquals(perms, ["--allow-ffi"]);
    } finally {
      sb.cleanup();
    }
  },
);

supervisedTest(
  "a Worker that exhausts RLIMIT_CPU ends by SIGXCPU with worker_resource_limit",
  async () => {
    const sb = makeSandboxDirs();
    try {
      const w = await spawnConfinedWorker({
        runRoot: sb.runRoot,
        deadlineMs: 60_000,
        log: recordingLogger(),
        parseFrame: anyFrame,
        command: probeCommand("cpu_limit_2s"),
      });
      await w.send({ v: IPC_PROTOCOL_VERSION, type: "probe.spin" });
      const exit = await w.exited;
      // The soft limit signals SIGXCPU; were soft == hard the kernel would send
      // SIGKILL instead and the Run would be misreported as worker_crashed.
      assertEquals([exit.reason, exit.signal, exit.errorCode], [
        "exited",
        "SIGXCPU",
        "worker_resource_limit",
      ]);
    } finally {
      sb.cleanup();
    }
  },
);
