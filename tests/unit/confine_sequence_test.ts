/**
 * The confinement sequence [SB-1, SB-2, SB-7] with recording steps: the
 * order is exactly the SPEC's, and a failing step stops everything after it —
 * in particular nothing execs into stage 2 and nothing attests unconfined.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { WORKER_RLIMIT_NPROC } from "../../runtime/limits.ts";
import { countTasksOfRealUid, workerRlimitPlan } from "../../sandbox/rlimits.ts";
import { syscall } from "../../sandbox/libc.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import { type ConfineSteps, runStage1, runStage2, type StepResult } from "../../sandbox/confine.ts";

const OK: StepResult = { ok: true };

function recorder(failAt?: string, abi = 7, uid = 0) {
  const calls: string[] = [];
  const step = (name: string) => (): StepResult => {
    calls.push(name);
    return name === failAt ? { ok: false, step: name, errno: 1 } : OK;
  };
  const steps: ConfineSteps = {
    newSession: step("setsid"),
    closeInheritedFds: step("close_fds"),
    umask: step("umask"),
    lowerPriority: step("nice"),
    uidTaskCount: () => 0,
    currentUid: () => uid,
    rlimits: step("rlimits"),
    parentDeathSignal: step("pdeathsig"),
    dropCapabilities: step("drop_caps"),
    noNewPrivs: step("no_new_privs"),
    landlockAbi: () => abi,
    applyLandlock: step("landlock"),
    execve: step("execve"),
    nonDumpable: step("non_dumpable"),
    warmUpSignals: step("warm_up_signals"),
    buildFilter: () => new Uint8Array(8),
    installSeccomp: step("seccomp"),
    verifySelf: step("verify"),
  };
  return { calls, steps };
}

const inputs = {
  executable: "/usr/bin/agent-builder",
  expectedParent: 1234,
  runRoot: "/home/op/.runtime/agents/a/runs/r",
  systemRoots: ["/lib"],
  codeRoots: [],
  stage2Argv: ["/usr/bin/agent-builder", "worker", "--stage2"],
  stage2Env: { DENO_NO_UPDATE_CHECK: "1" },
  identity: { uid: 65534, gid: 65534 },
};

const STAGE1 = [
  "setsid",
  "close_fds",
  "umask",
  "nice",
  "rlimits",
  "no_new_privs",
  "landlock",
  "drop_caps",
  "pdeathsig",
  "execve",
];

Deno.test("stage 1 runs its steps in the SPEC order and ends in execve", () => {
  const r = recorder();
  const res = runStage1(inputs, r.steps);
  assertEquals(r.calls, STAGE1);
  // execve "returned": that is itself a failure.
  assertEquals(res, { ok: false, step: "execve_returned", errno: 0 });
});

Deno.test("a failing stage-1 step stops the sequence before execve", () => {
  for (const failAt of STAGE1.slice(0, -1)) {
    const r = recorder(failAt);
    const res = runStage1(inputs, r.steps);
    assertEquals(res.ok, false, failAt);
    assertEquals(r.calls, STAGE1.slice(0, STAGE1.indexOf(failAt) + 1), failAt);
  }
});

Deno.test("a Landlock ABI below 6 stops stage 1 before any ruleset or execve", () => {
  const r = recorder(undefined, 5);
  assertEquals(runStage1(inputs, r.steps), { ok: false, step: "landlock_abi", errno: 0 });
  assertEquals(r.calls.includes("landlock") || r.calls.includes("execve"), false);
});

Deno.test("stage 1 started by root never runs without an unprivileged identity to switch to", () => {
  const r = recorder();
  assertEquals(runStage1({ ...inputs, identity: null }, r.steps), {
    ok: false,
    step: "no_sandbox_identity",
    errno: 0,
  });
  assertEquals(r.calls, []);
  const u = recorder(undefined, 7, 1000);
  assertEquals(runStage1(inputs, u.steps).ok, false);
  assertEquals(u.calls, []);
});

Deno.test("stage 2 makes the process non-dumpable, warms up signals, then installs seccomp", () => {
  const r = recorder();
  assertEquals(runStage2(r.steps), OK);
  assertEquals(r.calls, ["non_dumpable", "warm_up_signals", "seccomp", "verify"]);
});

Deno.test("a failing seccomp install fails stage 2 before verification", () => {
  const r = recorder("seccomp");
  assertEquals(runStage2(r.steps), { ok: false, step: "seccomp", errno: 1 });
  assertEquals(r.calls, ["non_dumpable", "warm_up_signals", "seccomp"]);
});

Deno.test("RLIMIT_NPROC is the uid's current task count plus the Worker's allowance", () => {
  const nproc = (tasks: number) => workerRlimitPlan(tasks).find((s) => s.name === "nproc")?.value;
  assertEquals(nproc(0), BigInt(WORKER_RLIMIT_NPROC));
  assertEquals(nproc(900), BigInt(WORKER_RLIMIT_NPROC + 900));
  assertEquals(workerRlimitPlan().find((s) => s.name === "core")?.value, 0n);
});

Deno.test("countTasksOfRealUid() counts this process's threads for its uid", () => {
  const uid = Number(syscall("getuid").ret);
  const mine = Number(/\nThreads:\s+(\d+)/.exec(readProcText("/proc/self/status") ?? "")?.[1]);
  assert(countTasksOfRealUid(uid) >= mine);
  assertEquals(countTasksOfRealUid(4_000_000_000), 0);
});
