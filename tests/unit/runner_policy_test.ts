/**
 * The runner's own policy [EX-1, EX-2]: its seccomp program allows what a
 * command needs (fork, exec, AF_UNIX sockets) and refuses what the SPEC
 * names; its Landlock plan writes only to the scratch and tmp; its rlimits
 * are the SPEC's.
 */
import { assertEquals } from "../helpers/assert.ts";
import { evaluate, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO } from "../../sandbox/seccomp_bpf.ts";
import { AUDIT_ARCH, DENY_EPERM, nr } from "../../sandbox/seccomp_tables.ts";
import {
  planRunnerLandlock,
  READ_WRITE_TREE,
  runnerFilterProgram,
  runnerRlimitPlan,
} from "../../sandbox/runner_policy.ts";
import { COMMAND_RLIMIT_NPROC } from "../../runtime/limits.ts";

const EPERM = SECCOMP_RET_ERRNO | 1;
const ENOSYS = SECCOMP_RET_ERRNO | 38;
const ALLOW = SECCOMP_RET_ALLOW;

for (const arch of ["x86_64", "aarch64"] as const) {
  const prog = runnerFilterProgram(arch);
  const X = arch === "x86_64";
  const call = (n: number, args: number[] = []) =>
    evaluate(prog, { arch: AUDIT_ARCH[arch], nr: n, args });

  Deno.test(`${arch}: the runner filter lets a command fork and exec, never make namespaces`, () => {
    const clone = X ? 56 : 220;
    assertEquals(call(clone, [17]), ALLOW); // SIGCHLD: a process
    assertEquals(call(clone, [0x00010000 | 0x100]), ALLOW); // a thread
    assertEquals(call(clone, [0x20000000 | 17]), EPERM); // CLONE_NEWPID
    assertEquals(call(clone, [0x10000000 | 17]), EPERM); // CLONE_NEWUSER
    assertEquals(call(435), ENOSYS); // clone3: flags out of reach
    assertEquals(call(X ? 59 : 221), ALLOW); // execve
    if (X) assertEquals(call(57), ALLOW); // fork
  });

  Deno.test(`${arch}: the runner filter allows only AF_UNIX sockets`, () => {
    const socket = nr(DENY_EPERM.network.socket, arch);
    const socketpair = nr(DENY_EPERM.network.socketpair, arch);
    assertEquals(call(socket, [1, 1, 0]), ALLOW);
    assertEquals(call(socket, [2, 1, 0]), EPERM); // AF_INET
    assertEquals(call(socket, [10, 2, 0]), EPERM); // AF_INET6
    assertEquals(call(socket, [16, 3, 0]), EPERM); // AF_NETLINK
    assertEquals(call(socketpair, [1, 1, 0]), ALLOW);
    assertEquals(call(nr(DENY_EPERM.network.connect, arch)), ALLOW); // only unix sockets exist
  });

  Deno.test(`${arch}: the runner filter refuses the SPEC's deny list and shared anonymous memory`, () => {
    for (
      const [group, name] of [
        ["crossProcess", "ptrace"],
        ["crossProcess", "process_vm_readv"],
        ["crossProcess", "process_vm_writev"],
        ["crossProcess", "pidfd_getfd"],
        ["namespaces", "mount"],
        ["namespaces", "unshare"],
        ["namespaces", "setns"],
        ["kernelSurface", "bpf"],
        ["kernelSurface", "perf_event_open"],
        ["kernelSurface", "keyctl"],
        ["kernelSurface", "userfaultfd"],
        ["kernelSurface", "io_uring_setup"],
        ["kernelSurface", "memfd_create"],
        ["privileged", "kexec_load"],
        ["privileged", "init_module"],
        ["privileged", "reboot"],
        ["privileged", "swapon"],
      ]
    ) {
      assertEquals(call(nr(DENY_EPERM[group][name], arch)), EPERM, name);
    }
    const mmap = X ? 9 : 222;
    assertEquals(call(mmap, [0, 1 << 30, 3, 0x21, -1, 0]), EPERM);
    assertEquals(call(mmap, [0, 1 << 30, 3, 0x22, -1, 0]), ALLOW);
    // Job control stays possible: setsid, setpgid.
    assertEquals(call(nr(DENY_EPERM.crossProcess.setsid, arch)), ALLOW);
    assertEquals(call(nr(DENY_EPERM.crossProcess.setpgid, arch)), ALLOW);
    // prlimit and priority only on the caller.
    assertEquals(call(X ? 302 : 261, [0, 7]), ALLOW);
    assertEquals(call(X ? 302 : 261, [4242, 7]), EPERM);
    assertEquals(call(X ? 141 : 140, [2, 0, 19]), EPERM); // PRIO_USER
    assertEquals(call(X ? 141 : 140, [0, 0, 19]), ALLOW);
  });
}

Deno.test("the runner's Landlock plan writes only to the scratch and the tmp", () => {
  const r = planRunnerLandlock({
    abi: 7,
    executable: "/usr/bin/agent-builder",
    codeRoots: [],
    scratch: "/tmp/scratch",
    tmp: "/tmp/tmp",
  });
  if (!r.ok) throw new Error(r.reason);
  const writable = r.plan.rules.filter((x) => (x.access & 2) !== 0).map((x) => x.path);
  assertEquals(writable, ["/dev/null", "/tmp/scratch", "/tmp/tmp"]);
  assertEquals(r.plan.rules.find((x) => x.path === "/tmp/scratch")?.access, READ_WRITE_TREE);
  assertEquals(r.plan.rules.some((x) => x.path === "/dev/zero"), false);
  for (const bad of ["/", "/usr", "/etc"]) {
    const p = planRunnerLandlock({
      abi: 7,
      executable: "/x",
      codeRoots: [],
      scratch: bad,
      tmp: "/tmp/tmp",
    });
    assertEquals(p.ok, false, bad);
  }
  assertEquals(
    planRunnerLandlock({ abi: 5, executable: "/x", codeRoots: [], scratch: "/a", tmp: "/b" }).ok,
    false,
  );
});

Deno.test("the runner's rlimits are the SPEC's, NPROC above the sandbox uid's tasks", () => {
  const plan = Object.fromEntries(runnerRlimitPlan(10).map((s) => [s.name, [s.value, s.hard]]));
  assertEquals(plan, {
    cpu: [60n, 61n],
    as: [64n * 1024n ** 3n, undefined],
    data: [4n * 1024n ** 3n, undefined],
    fsize: [64n * 1024n ** 2n, undefined],
    nofile: [256n, undefined],
    nproc: [BigInt(COMMAND_RLIMIT_NPROC + 10), undefined],
    core: [0n, undefined],
  });
});
