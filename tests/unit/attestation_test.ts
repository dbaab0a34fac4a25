/**
 * Attestation verdicts over /proc text [SB-1, SB-7]: a correct snapshot
 * passes; each wrong field on the process or on ANY thread is named.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  attestationProblems,
  parseStat,
  pinProcess,
  processStartTime,
  type ProcSnapshot,
} from "../../sandbox/attestation.ts";
import { closeFd, syscall } from "../../sandbox/libc.ts";
import { exitCodeFor } from "../../runtime/worker/supervisor.ts";
import { type AttestationFrame, IPC_PROTOCOL_VERSION } from "../../runtime/protocol/ipc.ts";

const PID = 500;
const CP = 100;
const Z = "0000000000000000";

function status(over: Record<string, string> = {}): string {
  const f: Record<string, string> = {
    Tgid: String(PID),
    Pid: String(PID),
    PPid: String(CP),
    CapInh: Z,
    CapPrm: Z,
    CapEff: Z,
    CapBnd: Z,
    CapAmb: Z,
    NoNewPrivs: "1",
    Seccomp: "2",
    Seccomp_filters: "1",
    Uid: "65534\t65534\t65534\t65534",
    Gid: "65534\t65534\t65534\t65534",
    ...over,
  };
  return Object.entries(f).map(([k, v]) => `${k}:\t${v}`).join("\n") + "\n";
}

const stat = (pgrp = PID, session = PID) =>
  `${PID} (deno worker) S ${CP} ${pgrp} ${session} 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 21 0 98765 0`;

const frame: AttestationFrame = {
  v: IPC_PROTOCOL_VERSION,
  type: "sandbox.attestation",
  pid: PID,
  ppid: CP,
  landlock_abi: 7,
  seccomp_mode: 2,
  no_new_privs: true,
  capabilities_zero: true,
};
const exp = { pid: PID, supervisorPid: CP, seccompFilters: 1, requireEmptyBounding: true };

function snap(
  tasks: Array<[number, string]> = [[PID, status()], [PID + 1, status()]],
): ProcSnapshot {
  return { status: status(), stat: stat(), tasks: new Map(tasks) };
}

Deno.test("a confined process with every thread confined is verified", () => {
  assertEquals(attestationProblems(frame, snap(), exp), []);
});

Deno.test("one unconfined thread is enough to refuse", () => {
  const s = snap([[PID, status()], [PID + 7, status({ Seccomp: "0", NoNewPrivs: "0" })]]);
  assertEquals(attestationProblems(frame, s, exp), [
    `task ${PID + 7}: NoNewPrivs 0`,
    `task ${PID + 7}: Seccomp 0`,
  ]);
});

Deno.test("wrong identity, parent, session and filter count are each named", () => {
  const s: ProcSnapshot = {
    status: status({ PPid: "1", Seccomp_filters: "2" }),
    stat: stat(77, 78),
    tasks: new Map([[PID, status()]]),
  };
  assertEquals(attestationProblems({ ...frame, pid: 9, ppid: 1, landlock_abi: 5 }, s, exp), [
    "frame pid 9 != child 500",
    "frame ppid 1",
    "frame landlock_abi 5",
    "PPid 1",
    "pgrp 77",
    "session 78",
    "process: Seccomp_filters 2",
  ]);
});

Deno.test("any capability left in eff/prm/inh/amb (and bnd when required) is refused", () => {
  for (const f of ["CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"]) {
    const s = snap([[PID, status({ [f]: "0000000000200000" })]]);
    assertEquals(attestationProblems(frame, s, exp), [`task ${PID}: ${f} 0000000000200000`]);
  }
  const unprivileged = { ...exp, requireEmptyBounding: false };
  const s = snap([[PID, status({ CapBnd: "000001ffffffffff" })]]);
  assertEquals(attestationProblems(frame, s, unprivileged), []);
});

Deno.test("a root Control Plane refuses a sandbox with any uid or gid still 0", () => {
  const root = { ...exp, requireUnprivileged: true };
  assertEquals(attestationProblems(frame, snap(), root), []);
  for (const [f, v] of [["Uid", "65534\t0\t65534\t65534"], ["Gid", "0\t0\t0\t0"]]) {
    const s = snap([[PID, status({ [f]: v })]]);
    assertEquals(attestationProblems(frame, s, root), [`task ${PID}: ${f} ${v}`]);
    assertEquals(attestationProblems(frame, s, exp), []);
  }
});

Deno.test("a snapshot without tasks is not verified", () => {
  assertEquals(attestationProblems(frame, snap([]), exp), ["no tasks inspected"]);
});

Deno.test("parseStat() reads pgrp, session, nice and start time after a comm with spaces and parens", () => {
  const s = `${PID} (a) b) c) S 1 42 43 0 -1 0 0 0 0 0 0 0 0 0 30 10 1 0 123456 0`;
  assertEquals(parseStat(s), { pgrp: 42, session: 43, nice: 10, startTime: 123456n });
});

Deno.test("every Worker ending maps to one fixed code", () => {
  const table: Array<[Parameters<typeof exitCodeFor>, string | null]> = [
    [["exited", 0, null], null],
    [["exited", 3, null], "worker_crashed"],
    [["exited", null, "SIGSYS"], "worker_crashed"],
    [["exited", null, "SIGXCPU"], "worker_resource_limit"],
    [["exited", null, "SIGXFSZ"], "worker_resource_limit"],
    [["deadline", null, "SIGKILL"], "model_turn_deadline"],
    [["tree_limit", null, "SIGKILL"], "worker_resource_limit"],
    [["protocol", null, "SIGKILL"], "worker_protocol_error"],
    [["cancelled", 0, null], "run_cancelled"],
    [["killed", null, "SIGKILL"], "worker_crashed"],
  ];
  for (const [args, code] of table) assertEquals(exitCodeFor(...args), code, args.join(","));
});

Deno.test("pinProcess returns a pidfd for a living process and its start time, and null for a pid no process has", async () => {
  const child = new Deno.Command("sleep", { args: ["30"], stdin: "null" }).spawn();
  try {
    const pinned = pinProcess(child.pid);
    assert(pinned !== null);
    assertEquals(pinned.startTime, processStartTime(child.pid));
    // The pidfd names the child: signal 0 through it succeeds.
    assertEquals(syscall("pidfd_send_signal", pinned.pidfd, 0, null, 0).ret, 0n);
    closeFd(pinned.pidfd);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
  // No process has a pid at pid_max (pids stay below it).
  const pidMax = Number(Deno.readTextFileSync("/proc/sys/kernel/pid_max").trim());
  assertEquals(pinProcess(pidMax), null);
});
