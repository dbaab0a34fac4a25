/**
 * The Worker's seccomp program, evaluated instruction by instruction for both
 * architectures [SB-3]: arch check first, x32 rejected, clone only as a
 * thread, clone3 ENOSYS, prctl/prlimit/kill argument checks, every denied
 * syscall EPERM, unknown future syscalls ENOSYS, ordinary syscalls allowed.
 */
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import {
  buildWorkerFilter,
  encodeProgram,
  evaluate,
  PRCTL_ALLOWED,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  SECCOMP_RET_KILL_PROCESS,
  workerFilterProgram,
} from "../../sandbox/seccomp_bpf.ts";
import {
  type Arch,
  ARG_CHECKED,
  AUDIT_ARCH,
  DENY_EPERM,
  HIGHEST_KNOWN_NR,
  nr,
} from "../../sandbox/seccomp_tables.ts";

const SELF = 4242;
const EPERM = SECCOMP_RET_ERRNO | 1;
const ENOSYS = SECCOMP_RET_ERRNO | 38;
const READ: Record<Arch, number> = { x86_64: 0, aarch64: 63 };

for (const arch of ["x86_64", "aarch64"] as const) {
  const prog = workerFilterProgram({ arch, selfPid: SELF });
  const run = (n: number, args: number[] = []) =>
    evaluate(prog, { arch: AUDIT_ARCH[arch], nr: n, args });
  const named = (name: string, args: number[] = []) => run(nr(ARG_CHECKED[name], arch), args);

  Deno.test(`${arch}: a syscall from a foreign architecture kills the process`, () => {
    const other = arch === "x86_64" ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64;
    assertEquals(evaluate(prog, { arch: other, nr: READ[arch] }), SECCOMP_RET_KILL_PROCESS);
    assertEquals(evaluate(prog, { arch: 0x40000003, nr: 3 }), SECCOMP_RET_KILL_PROCESS); // i386
  });

  Deno.test(`${arch}: ordinary syscalls are allowed`, () => {
    assertEquals(run(READ[arch]), SECCOMP_RET_ALLOW);
  });

  Deno.test(`${arch}: shared anonymous mmap is EPERM, private and file-backed mappings are allowed`, () => {
    const SHARED = 0x01, PRIVATE = 0x02, VALIDATE = 0x03, ANON = 0x20, FIXED = 0x10;
    assertEquals(named("mmap", [0, 1 << 30, 3, SHARED | ANON, -1, 0]), EPERM);
    assertEquals(named("mmap", [0, 1 << 30, 3, VALIDATE | ANON, -1, 0]), EPERM);
    assertEquals(named("mmap", [0, 4096, 3, SHARED | ANON | FIXED, -1, 0]), EPERM);
    assertEquals(named("mmap", [0, 1 << 30, 3, PRIVATE | ANON, -1, 0]), SECCOMP_RET_ALLOW);
    assertEquals(named("mmap", [0, 4096, 1, SHARED, 5, 0]), SECCOMP_RET_ALLOW);
    assertEquals(named("mmap", [0, 4096, 1, PRIVATE, 5, 0]), SECCOMP_RET_ALLOW);
  });

  Deno.test(`${arch}: every syscall in the deny table is EPERM`, () => {
    let checked = 0;
    for (const group of Object.values(DENY_EPERM)) {
      for (const [name, pair] of Object.entries(group)) {
        const n = nr(pair, arch);
        if (n < 0) continue;
        assertEquals(run(n), EPERM, name);
        checked++;
      }
    }
    assert(checked > 100);
  });

  Deno.test(`${arch}: syscall numbers above the known table fail closed with ENOSYS`, () => {
    assertEquals(run(HIGHEST_KNOWN_NR + 1), ENOSYS);
    assertEquals(run(1000), ENOSYS);
  });

  Deno.test(`${arch}: clone is allowed only as a thread without namespace flags`, () => {
    const THREAD = 0x10000 | 0x800 | 0x100 | 0x200 | 0x400; // THREAD|SIGHAND|VM|FS|FILES
    assertEquals(named("clone", [THREAD | 0x3d0000]), SECCOMP_RET_ALLOW);
    assertEquals(named("clone", [17]), EPERM); // SIGCHLD: fork()
    assertEquals(named("clone", [0x4000 | 0x100 | 17]), EPERM); // vfork
    assertEquals(named("clone", [THREAD | 0x10000000]), EPERM); // CLONE_NEWUSER
    assertEquals(named("clone", [THREAD | 0x40000000]), EPERM); // CLONE_NEWNET
  });

  Deno.test(`${arch}: clone3 is ENOSYS so libraries fall back to the inspected clone`, () => {
    assertEquals(named("clone3"), ENOSYS);
  });

  Deno.test(`${arch}: prctl allows only the listed harmless options`, () => {
    for (const opt of PRCTL_ALLOWED) assertEquals(named("prctl", [opt]), SECCOMP_RET_ALLOW);
    for (const opt of [1, 4, 22, 24, 28, 35, 47, 59]) assertEquals(named("prctl", [opt]), EPERM);
  });

  Deno.test(`${arch}: signals and prlimit may target only the Worker itself`, () => {
    assertEquals(named("kill", [SELF]), SECCOMP_RET_ALLOW);
    assertEquals(named("kill", [1]), EPERM);
    assertEquals(named("kill", [0]), EPERM);
    assertEquals(named("kill", [0xffffffff]), EPERM); // -1: every process
    assertEquals(named("tgkill", [SELF]), SECCOMP_RET_ALLOW);
    assertEquals(named("tgkill", [SELF + 1]), EPERM);
    assertEquals(named("rt_sigqueueinfo", [1]), EPERM);
    assertEquals(named("rt_tgsigqueueinfo", [1]), EPERM);
    assertEquals(named("prlimit64", [0]), SECCOMP_RET_ALLOW);
    assertEquals(named("prlimit64", [SELF]), SECCOMP_RET_ALLOW);
    assertEquals(named("prlimit64", [1]), EPERM);
  });

  Deno.test(`${arch}: scheduling and I/O priority may be changed only for the Worker itself`, () => {
    for (
      const name of ["sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr"]
    ) {
      assertEquals(named(name, [0]), SECCOMP_RET_ALLOW, name);
      assertEquals(named(name, [SELF]), SECCOMP_RET_ALLOW, name);
      assertEquals(named(name, [1]), EPERM, name);
    }
    assertEquals(named("setpriority", [0, 0]), SECCOMP_RET_ALLOW);
    assertEquals(named("setpriority", [0, SELF]), SECCOMP_RET_ALLOW);
    assertEquals(named("setpriority", [0, 1]), EPERM); // another process
    assertEquals(named("setpriority", [1, 0]), EPERM); // PRIO_PGRP
    assertEquals(named("setpriority", [2, 0]), EPERM); // PRIO_USER: every process of the uid
    assertEquals(named("ioprio_set", [1, 0]), SECCOMP_RET_ALLOW);
    assertEquals(named("ioprio_set", [1, 1]), EPERM);
    assertEquals(named("ioprio_set", [3, 0]), EPERM); // IOPRIO_WHO_USER
  });
}

/**
 * Every syscall SPEC [SB-3] names, with its number copied from the kernel UAPI
 * headers (asm/unistd_64.h; asm-generic/unistd.h for aarch64) independently of
 * seccomp_tables.ts: a syscall dropped from the deny table, or a wrong number
 * there, fails here. -1: the architecture has no such syscall.
 */
const SB3_DENIED: Record<string, [number, number]> = {
  socket: [41, 198],
  socketpair: [53, 199],
  fork: [57, -1],
  vfork: [58, -1],
  execve: [59, 221],
  execveat: [322, 281],
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  pidfd_getfd: [438, 438],
  pidfd_send_signal: [424, 424],
  mount: [165, 40],
  umount2: [166, 39],
  unshare: [272, 97],
  setns: [308, 268],
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  keyctl: [250, 219],
  memfd_create: [319, 279],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  chmod: [90, -1],
  fchmod: [91, 52],
  fchmodat: [268, 53],
  fchmodat2: [452, 452],
  chown: [92, -1],
  fchown: [93, 55],
  lchown: [94, -1],
  fchownat: [260, 54],
  utime: [132, -1],
  utimes: [235, -1],
  futimesat: [261, -1],
  utimensat: [280, 88],
  sync: [162, 81],
  syncfs: [306, 267],
  fsync: [74, 82],
  fdatasync: [75, 83],
  sync_file_range: [277, 84],
  shmget: [29, 194],
  msgget: [68, 186],
  semget: [64, 190],
  mq_open: [240, 180],
};

for (const arch of ["x86_64", "aarch64"] as const) {
  Deno.test(`${arch}: every syscall SPEC [SB-3] names is EPERM, by its kernel number`, () => {
    const prog = workerFilterProgram({ arch, selfPid: SELF });
    for (const [name, pair] of Object.entries(SB3_DENIED)) {
      const n = pair[arch === "x86_64" ? 0 : 1];
      if (n < 0) continue;
      assertEquals(evaluate(prog, { arch: AUDIT_ARCH[arch], nr: n }), EPERM, `${arch} ${name}`);
    }
  });
}

Deno.test("x86_64: x32 syscall numbers are EPERM", () => {
  const prog = workerFilterProgram({ arch: "x86_64", selfPid: SELF });
  for (const n of [0, 39, 59, 512]) {
    assertEquals(evaluate(prog, { arch: AUDIT_ARCH.x86_64, nr: 0x40000000 + n }), EPERM);
  }
});

Deno.test("the filter checks the architecture before anything else", () => {
  const prog = workerFilterProgram({ arch: "x86_64", selfPid: SELF });
  assertEquals(prog[0], { code: 0x20, jt: 0, jf: 0, k: 4 });
  assertEquals(prog[1].k, AUDIT_ARCH.x86_64);
});

Deno.test("the encoded program is 8 bytes per instruction and fits BPF_MAXINSNS", () => {
  const prog = workerFilterProgram({ arch: "aarch64", selfPid: SELF });
  const bytes = buildWorkerFilter({ arch: "aarch64", selfPid: SELF });
  assertEquals(bytes.length, prog.length * 8);
  assert(prog.length <= 4096);
  assertEquals(
    encodeProgram([{ code: 6, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }]),
    new Uint8Array([6, 0, 0, 0, 0, 0, 0xff, 0x7f]),
  );
});

Deno.test("a filter cannot be built without a real pid to pin signals to", () => {
  assertThrows(() => workerFilterProgram({ arch: "x86_64", selfPid: 0 }));
  assertThrows(() => workerFilterProgram({ arch: "x86_64", selfPid: 1.5 }));
});
