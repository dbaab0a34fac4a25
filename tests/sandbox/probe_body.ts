/**
 * The escape attempts a confined probe Worker runs, each reported as the raw
 * errno (0 = the attempt succeeded). A breach is any attempt whose errno
 * differs from the one the test table expects — in particular a 0.
 */
import { z } from "zod";
import {
  addressOf,
  cstr,
  hostArch,
  O_CLOEXEC,
  O_CREAT,
  O_RDONLY,
  O_WRONLY,
  syscall,
  syscallByNumber,
} from "../../sandbox/libc.ts";
import type { WorkerBody } from "../../sandbox/worker_entry.ts";
import { DENY_EPERM, nr } from "../../sandbox/seccomp_tables.ts";
import { IPC_PROTOCOL_VERSION } from "../../runtime/protocol/ipc.ts";

export const ProbeRequestSchema = z.object({
  v: z.literal(IPC_PROTOCOL_VERSION),
  type: z.literal("probe.run"),
  outside_file: z.string(),
  outside_dir: z.string(),
  inside_file: z.string(),
  dotdot_path: z.string(),
  symlink_path: z.string(),
  tcp_port: z.number().int(),
  unix_path: z.string(),
  abstract_name: z.string(),
}).strict();
export type ProbeRequest = z.infer<typeof ProbeRequestSchema>;

const AF_UNIX = 1;
const AF_INET = 2;
const SOCK_STREAM = 1;
const SOCK_DGRAM = 2;
const SIGCHLD = 17;
const CLONE_VM = 0x100;
const CLONE_VFORK = 0x4000;
const PTRACE_ATTACH = 16;
const PR_SET_DUMPABLE = 4;
const X32_BIT = 0x40000000;
const CLONE_NEWUSER = 0x10000000;

const errnoOf = (r: { ret: bigint; errno: number }) => (r.ret < 0n ? r.errno : 0);

function openProbe(path: string, flags: number): number {
  const r = syscall("openat", -100, cstr(path), flags | O_CLOEXEC, 0o600);
  if (r.ret >= 0n) syscall("close", Number(r.ret));
  return errnoOf(r);
}

function sockaddrIn(port: number): Uint8Array {
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setUint16(0, AF_INET, true);
  v.setUint16(2, port, false);
  b.set([127, 0, 0, 1], 4);
  return b;
}

function sockaddrUn(path: string, abstract: boolean): Uint8Array {
  const b = new Uint8Array(110);
  new DataView(b.buffer).setUint16(0, AF_UNIX, true);
  const enc = new TextEncoder().encode(path);
  b.set(enc, abstract ? 3 : 2); // abstract: sun_path[0] = 0
  return b;
}

/** socket() then bind() to 127.0.0.1:0; reports the first failing errno. */
function bindProbe(): number {
  const s = syscall("socket", AF_INET, SOCK_STREAM | O_CLOEXEC, 0);
  if (s.ret < 0n) return s.errno;
  const b = syscall("bind", Number(s.ret), sockaddrIn(0), 16);
  syscall("close", Number(s.ret));
  return errnoOf(b);
}

/** socket() then connect(); reports the first failing errno. */
function connectProbe(domain: number, type: number, addr: Uint8Array, len: number): number {
  const s = syscall("socket", domain, type | O_CLOEXEC, 0);
  if (s.ret < 0n) return s.errno;
  const c = syscall("connect", Number(s.ret), addr, len);
  syscall("close", Number(s.ret));
  return errnoOf(c);
}

async function denoErrno(op: () => Promise<unknown>): Promise<number | string> {
  try {
    await op();
    return 0;
  } catch (err) {
    const m = /os error (\d+)/.exec(String(err));
    return m ? Number(m[1]) : `${(err as Error).name}`;
  }
}

/** Opens `path` from a thread created after confinement (a Web Worker). */
function threadOpen(path: string): Promise<number> {
  const w = new Worker(new URL("./probe_thread.ts", import.meta.url), { type: "module" });
  return new Promise((resolve, reject) => {
    w.onmessage = (e) => {
      w.terminate();
      resolve(e.data as number);
    };
    w.onerror = (e) => {
      w.terminate();
      reject(new Error(e.message));
    };
    w.postMessage(path);
  });
}

/** Runs every probe; keys are stable probe names, values errno (0 = succeeded). */
export async function runProbes(req: ProbeRequest): Promise<Record<string, number | string>> {
  const parent = Number(syscall("getppid").ret);
  const r: Record<string, number | string> = {};
  r.read_inside_run_root = openProbe(req.inside_file, O_RDONLY);
  r.read_outside_absolute = openProbe(req.outside_file, O_RDONLY);
  r.read_outside_dotdot = openProbe(req.dotdot_path, O_RDONLY);
  r.read_outside_symlink = openProbe(req.symlink_path, O_RDONLY);
  r.write_inside_run_root = openProbe(`${req.inside_file}.new`, O_WRONLY | O_CREAT);
  r.write_outside = openProbe(`${req.outside_dir}/created`, O_WRONLY | O_CREAT);
  r.read_etc_passwd = openProbe("/etc/passwd", O_RDONLY);
  r.read_own_proc_maps = openProbe("/proc/self/maps", O_RDONLY);
  r.read_own_proc_status = openProbe("/proc/self/status", O_RDONLY);
  r.read_proc_net_tcp = openProbe("/proc/self/net/tcp", O_RDONLY);
  r.read_own_proc_mountinfo = openProbe("/proc/self/mountinfo", O_RDONLY);
  r.read_parent_proc_status = openProbe(`/proc/${parent}/status`, O_RDONLY);
  r.read_init_proc_environ = openProbe("/proc/1/environ", O_RDONLY);
  r.read_via_proc_self_root = openProbe("/proc/self/root/etc/passwd", O_RDONLY);
  r.read_via_proc_self_cwd = openProbe("/proc/self/cwd/../outside/secret.txt", O_RDONLY);
  r.write_own_proc_maps = openProbe("/proc/self/maps", O_WRONLY);
  r.async_read_outside_runtime_thread = await denoErrno(() => Deno.readFile(req.outside_file));
  r.async_read_inside_runtime_thread = await denoErrno(() => Deno.readFile(req.inside_file));
  r.thread_created_after_confinement_read_outside = await threadOpen(req.outside_file);
  r.tcp_connect_loopback = connectProbe(AF_INET, SOCK_STREAM, sockaddrIn(req.tcp_port), 16);
  r.tcp_bind_loopback = bindProbe();
  r.deno_tcp_connect_loopback = await denoErrno(() =>
    Deno.connect({ hostname: "127.0.0.1", port: req.tcp_port })
  );
  const udp = syscall("socket", AF_INET, SOCK_DGRAM | O_CLOEXEC, 0);
  r.udp_socket = errnoOf(udp);
  r.udp_sendto = udp.ret < 0n
    ? udp.errno
    : errnoOf(syscall("sendto", Number(udp.ret), new Uint8Array(1), 1, 0, sockaddrIn(53), 16));
  r.unix_connect = connectProbe(AF_UNIX, SOCK_STREAM, sockaddrUn(req.unix_path, false), 110);
  r.abstract_unix_connect = connectProbe(
    AF_UNIX,
    SOCK_STREAM,
    sockaddrUn(req.abstract_name, true),
    3 + req.abstract_name.length,
  );
  r.socketpair = errnoOf(syscall("socketpair", AF_UNIX, SOCK_STREAM, 0, new Uint8Array(8)));
  r.io_uring_setup = errnoOf(syscall("io_uring_setup", 1, new Uint8Array(120)));
  r.fork = hostArch() === "x86_64" ? errnoOf(syscall("fork")) : 1;
  r.clone3 = errnoOf(syscall("clone3", new Uint8Array(88), 88));
  r.clone_process = errnoOf(syscall("clone", SIGCHLD, 0, 0, 0, 0));
  r.clone_vm_vfork = errnoOf(syscall("clone", CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0));
  r.clone_newuser = errnoOf(syscall("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
  r.unshare_user = errnoOf(syscall("unshare", CLONE_NEWUSER));
  r.execve_self = execProbe(Deno.execPath());
  r.execve_bin_sh = execProbe("/bin/sh");
  r.ptrace_parent = errnoOf(syscall("ptrace", PTRACE_ATTACH, parent, 0, 0));
  r.process_vm_readv_parent = processVmReadv(parent);
  r.kill_parent = errnoOf(syscall("kill", parent, 0));
  r.prctl_set_dumpable = errnoOf(syscall("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0));
  r.memfd_create = errnoOf(syscall("memfd_create", cstr("x"), 0));
  r.x32_getpid = hostArch() === "x86_64" ? errnoOf(syscallByNumber(X32_BIT + 39)) : 1;
  // Harmless even on a breach: the kernel checks the capability first, so an
  // unconfined process gets EINVAL/ENOENT here, never a changed host.
  r.sethostname = errnoOf(syscall("sethostname", new Uint8Array(65), 65));
  r.reboot = errnoOf(syscall("reboot", 0, 0, 0, 0));
  r.mount = errnoOf(
    syscall("mount", cstr("none"), cstr("/nonexistent-ab-probe"), cstr("tmpfs"), 0, null),
  );
  r.fchmod_stdout = errnoOf(syscall("fchmod", 1, 0o777));
  r.setsid = errnoOf(syscall("setsid"));
  // Not an errno: the securebits value itself (locked NOROOT etc. survive execve).
  r.securebits = Number(syscall("prctl", 27, 0, 0, 0, 0).ret);
  r.setpriority_parent = errnoOf(syscall("setpriority", 0, parent, 19));
  r.setpriority_user = errnoOf(syscall("setpriority", 2, 0, 19));
  r.prlimit_parent = errnoOf(syscall("prlimit64", parent, 7, null, new Uint8Array(16)));
  r.nofile_exhausted = exhaustFds(req.inside_file);
  for (const [k, v] of Object.entries(runKernelDenyProbes())) r[`sb3_${k}`] = v;
  // Block the event loop past Deno's lazy signal-machinery threshold (~0.5 s):
  // without the warm-up this would create a socketpair and panic the process.
  const until = Date.now() + 700;
  while (Date.now() < until) { /* bounded busy wait */ }
  r.survived_event_loop_block = 0;
  // Memory [SB-1]: shared anonymous memory is not counted by RLIMIT_DATA, so
  // the filter refuses it; private memory is, so 3 GiB exceeds the 2 GiB bound.
  r.mmap_shared_anonymous_3gib = mmapErrno(3 * GiB, MAP_SHARED | MAP_ANONYMOUS);
  r.mmap_shared_validate_anonymous_3gib = mmapErrno(3 * GiB, MAP_SHARED_VALIDATE | MAP_ANONYMOUS);
  r.mmap_private_anonymous_3gib = mmapErrno(3 * GiB, MAP_PRIVATE | MAP_ANONYMOUS);
  r.open_dev_zero_for_shared_mapping = openProbe("/dev/zero", O_RDONLY);
  // Threads [SB-1, SB-7]: RLIMIT_NPROC binds the unprivileged uid. Last, so
  // the threads the flood holds do not starve the probes above.
  const flood = threadFlood(THREAD_FLOOD_ATTEMPTS);
  r.thread_flood = flood.errno;
  r.thread_flood_created = flood.created;
  return r;
}

const GiB = 1024 * 1024 * 1024;
const PROT_READ_WRITE = 0x3;
const MAP_SHARED = 0x01;
const MAP_PRIVATE = 0x02;
const MAP_SHARED_VALIDATE = 0x03;
const MAP_ANONYMOUS = 0x20;
/** The attack pass created this many threads against an RLIMIT_NPROC of 256 (as root). */
export const THREAD_FLOOD_ATTEMPTS = 1024;

/** errno of an anonymous mmap of `bytes` (the mapping, if any, is released). */
function mmapErrno(bytes: number, flags: number): number {
  const r = syscall("mmap", 0, bytes, PROT_READ_WRITE, flags, -1, 0);
  if (r.ret === -1n) return r.errno;
  syscall("munmap", r.ret, bytes);
  return 0;
}

/**
 * Creates up to `attempts` real threads (pthread_create, 64 KiB stacks so the
 * data limit is not what stops them), each blocked on one semaphore, until a
 * creation fails; then releases and joins them all. Reports the failing errno (0 = none failed) and how
 * many were created.
 */
function threadFlood(attempts: number): { errno: number; created: number } {
  const lib = Deno.dlopen(
    "libc.so.6",
    {
      pthread_create: { parameters: ["buffer", "buffer", "pointer", "pointer"], result: "i32" },
      pthread_join: { parameters: ["u64", "pointer"], result: "i32" },
      pthread_attr_init: { parameters: ["buffer"], result: "i32" },
      pthread_attr_setstacksize: { parameters: ["buffer", "usize"], result: "i32" },
      dlsym: { parameters: ["pointer", "buffer"], result: "pointer" },
      sem_init: { parameters: ["buffer", "i32", "u32"], result: "i32" },
      sem_post: { parameters: ["buffer"], result: "i32" },
    } as const,
  );
  try {
    const semWait = lib.symbols.dlsym(null, cstr("sem_wait"));
    const sem = new Uint8Array(32); // sem_t
    if (lib.symbols.sem_init(sem, 0, 0) !== 0) throw new Error("sem_init");
    const semPtr = Deno.UnsafePointer.of(sem);
    const attr = new Uint8Array(64); // pthread_attr_t is 56 (x86_64) / 64 (aarch64) bytes
    if (lib.symbols.pthread_attr_init(attr) !== 0) throw new Error("pthread_attr_init");
    if (lib.symbols.pthread_attr_setstacksize(attr, 64n * 1024n) !== 0) {
      throw new Error("pthread_attr_setstacksize");
    }
    const tids: bigint[] = [];
    let errno = 0;
    for (let i = 0; i < attempts; i++) {
      const tid = new Uint8Array(8);
      // Each thread blocks in sem_wait(&sem) until released below.
      const rc = lib.symbols.pthread_create(tid, attr, semWait, semPtr);
      if (rc !== 0) {
        errno = rc;
        break;
      }
      tids.push(new DataView(tid.buffer).getBigUint64(0, true));
    }
    for (let i = 0; i < tids.length; i++) lib.symbols.sem_post(sem);
    for (const t of tids) lib.symbols.pthread_join(t, null);
    void sem.byteLength;
    return { errno, created: tids.length };
  } finally {
    lib.close();
  }
}

/**
 * The subset of probes Landlock alone must stop (run with seccomp replaced by
 * an allow-all filter): files, TCP connect, abstract unix sockets, signals.
 * UDP is included to show what Landlock does NOT cover.
 */
export function runLandlockProbes(req: ProbeRequest): Record<string, number> {
  const parent = Number(syscall("getppid").ret);
  const udp = syscall("socket", AF_INET, SOCK_DGRAM | O_CLOEXEC, 0);
  if (udp.ret >= 0n) syscall("close", Number(udp.ret));
  return {
    read_inside_run_root: openProbe(req.inside_file, O_RDONLY),
    read_outside_absolute: openProbe(req.outside_file, O_RDONLY),
    read_outside_symlink: openProbe(req.symlink_path, O_RDONLY),
    write_inside_run_root: openProbe(`${req.inside_file}.new`, O_WRONLY | O_CREAT),
    tcp_connect_loopback: connectProbe(AF_INET, SOCK_STREAM, sockaddrIn(req.tcp_port), 16),
    tcp_bind_loopback: bindProbe(),
    abstract_unix_connect: connectProbe(
      AF_UNIX,
      SOCK_STREAM,
      sockaddrUn(req.abstract_name, true),
      3 + req.abstract_name.length,
    ),
    kill_parent: errnoOf(syscall("kill", parent, 0)),
    udp_socket_not_covered_by_landlock: errnoOf(udp),
    ...Object.fromEntries(
      Object.entries(runKernelDenyProbes()).map(([k, v]) => [`sb3_${k}`, v]),
    ),
  };
}

/** The number of a syscall in the deny table on this architecture. */
function denied(name: string): number {
  for (const group of Object.values(DENY_EPERM)) {
    if (Object.hasOwn(group, name)) return nr(group[name], hostArch());
  }
  throw new Error(`${name} is not in the deny table`);
}

/** errno of a raw call; a returned fd is closed (0 = the call succeeded). */
function rawErrno(name: string, ...args: Array<number | bigint | Uint8Array | null>): number {
  const r = syscallByNumber(denied(name), ...args);
  if (r.ret < 0n) return r.errno;
  if (["pidfd_open", "userfaultfd", "memfd_create"].includes(name)) syscall("close", Number(r.ret));
  return 0;
}

/** Names of the kernel-discriminating [SB-3] probes (see `runKernelDenyProbes`). */
export const SB3_PROBE_NAMES: readonly string[] = [
  "fsync_stdin",
  "fdatasync_stdin",
  "sync_file_range_stdin",
  "syncfs_stdin",
  "fchown_stdout_noop",
  "utimensat_stdout",
  "fsetxattr_bad_fd",
  "mknodat_missing_dir",
  "unshare_nothing",
  "setns_bad_fd",
  "chroot_missing",
  "open_tree_missing",
  "execveat_bad_fd",
  "io_uring_enter_bad_fd",
  "io_uring_register_bad_fd",
  "ptrace_peek_parent",
  "pidfd_open_parent",
  "pidfd_getfd_bad_fd",
  "pidfd_send_signal_bad_fd",
  "process_vm_readv_self",
  "process_vm_writev_self",
  "kcmp_self",
  "tkill_self_probe",
  "keyctl_get_keyring",
  "userfaultfd_user_mode",
  "perf_event_open_null",
  "personality_query",
  "inotify_add_watch_bad_fd",
  "shmget_too_small",
  "semget_bad_count",
  "msgctl_bad_id",
  "mq_open_missing",
];

/**
 * SPEC [SB-3] denials whose arguments make the KERNEL answer something other
 * than EPERM (EBADF, EINVAL, ESPIPE, ENOENT or success, all harmless): under
 * the Worker filter each must be EPERM, and with seccomp replaced by an
 * allow-all filter none may be — so EPERM here is seccomp's doing, not a
 * missing capability's.
 */
export function runKernelDenyProbes(): Record<string, number> {
  const self = Number(syscall("getpid").ret);
  const parent = Number(syscall("getppid").ret);
  const local = new Uint8Array(8);
  const liov = new Uint8Array(new BigUint64Array([addressOf(local), 8n]).buffer);
  const other = new Uint8Array(8);
  const riov = new Uint8Array(new BigUint64Array([addressOf(other), 8n]).buffer);
  const empty = cstr("");
  const argv = new Uint8Array(new BigUint64Array([addressOf(empty), 0n]).buffer);
  const AT_EMPTY_PATH = 0x1000;
  const UFFD_USER_MODE_ONLY = 1;
  const r: Record<string, number> = {
    fsync_stdin: rawErrno("fsync", 0), // pipe: EINVAL
    fdatasync_stdin: rawErrno("fdatasync", 0), // pipe: EINVAL
    sync_file_range_stdin: rawErrno("sync_file_range", 0, 0, 0, 0), // pipe: ESPIPE
    syncfs_stdin: rawErrno("syncfs", 0),
    fchown_stdout_noop: rawErrno("fchown", 1, -1, -1),
    utimensat_stdout: rawErrno("utimensat", 1, null, null, 0),
    fsetxattr_bad_fd: rawErrno("fsetxattr", -1, cstr("user.x"), empty, 0, 0),
    mknodat_missing_dir: rawErrno("mknodat", -100, cstr("/nonexistent-ab/fifo"), 0o10600, 0),
    unshare_nothing: rawErrno("unshare", 0),
    setns_bad_fd: rawErrno("setns", -1, 0),
    chroot_missing: rawErrno("chroot", cstr("/nonexistent-ab")),
    open_tree_missing: rawErrno("open_tree", -100, cstr("/nonexistent-ab"), 0),
    execveat_bad_fd: rawErrno("execveat", -1, empty, argv, argv, AT_EMPTY_PATH),
    io_uring_enter_bad_fd: rawErrno("io_uring_enter", -1, 0, 0, 0, null, 0),
    io_uring_register_bad_fd: rawErrno("io_uring_register", -1, 0, null, 0),
    // Not our tracee: the kernel says ESRCH (ATTACH would be EPERM for want of caps).
    ptrace_peek_parent: rawErrno("ptrace", 2, /* PTRACE_PEEKDATA */ parent, 0, 0),
    pidfd_open_parent: rawErrno("pidfd_open", parent, 0),
    pidfd_getfd_bad_fd: rawErrno("pidfd_getfd", -1, 0, 0),
    pidfd_send_signal_bad_fd: rawErrno("pidfd_send_signal", -1, 0, null, 0),
    process_vm_readv_self: rawErrno("process_vm_readv", self, liov, 1, riov, 1, 0),
    process_vm_writev_self: rawErrno("process_vm_writev", self, liov, 1, riov, 1, 0),
    kcmp_self: rawErrno("kcmp", self, self, 1, /* KCMP_VM */ 0, 0),
    tkill_self_probe: rawErrno("tkill", self, 0),
    keyctl_get_keyring: rawErrno("keyctl", 0, /* GET_KEYRING_ID */ -2, 0),
    userfaultfd_user_mode: rawErrno("userfaultfd", O_CLOEXEC | UFFD_USER_MODE_ONLY),
    perf_event_open_null: rawErrno("perf_event_open", null, 0, -1, -1, 0),
    personality_query: rawErrno("personality", 0xffffffff),
    inotify_add_watch_bad_fd: rawErrno("inotify_add_watch", -1, cstr("/"), 0xfff),
    shmget_too_small: rawErrno("shmget", 0, 0, 0),
    semget_bad_count: rawErrno("semget", 0, -1, 0),
    msgctl_bad_id: rawErrno("msgctl", -1, 0, null),
    mq_open_missing: rawErrno("mq_open", cstr("ab-nonexistent-queue"), O_RDONLY, 0, null),
  };
  if (Object.keys(r).join() !== SB3_PROBE_NAMES.join()) throw new Error("SB3_PROBE_NAMES drifted");
  return r;
}

/** Opens `path` until the fd limit bites; reports the errno that stopped it. */
function exhaustFds(path: string): number {
  const fds: number[] = [];
  let errno = 0;
  for (let i = 0; i < 1024 && errno === 0; i++) {
    const r = syscall("openat", -100, cstr(path), O_RDONLY | O_CLOEXEC, 0);
    if (r.ret < 0n) errno = r.errno;
    else fds.push(Number(r.ret));
  }
  for (const fd of fds) syscall("close", fd);
  return errno;
}

function execProbe(path: string): number {
  const p = cstr(path);
  const argv = new BigUint64Array([addressOf(p), 0n]);
  const envp = new BigUint64Array([0n]);
  return errnoOf(
    syscall("execve", p, new Uint8Array(argv.buffer), new Uint8Array(envp.buffer)),
  );
}

function processVmReadv(pid: number): number {
  const local = new Uint8Array(8);
  const liov = new BigUint64Array([addressOf(local), 8n]);
  const riov = new BigUint64Array([0x400000n, 8n]);
  return errnoOf(
    syscall(
      "process_vm_readv",
      pid,
      new Uint8Array(liov.buffer),
      1,
      new Uint8Array(riov.buffer),
      1,
      0,
    ),
  );
}

const RawRequestSchema = z.object({
  v: z.literal(IPC_PROTOCOL_VERSION),
  type: z.literal("probe.raw"),
  bytes: z.number().int().min(1).max(1 << 20),
  newline: z.boolean(),
}).strict();

/**
 * Body: `probe.run` → `probe.result`; `probe.raw` writes a raw non-JSON line
 * (to test the Control Plane's bounds); `probe.spin` burns CPU for up to 30 s;
 * `probe.hold` outlives end of input by
 * 10 s (parent-death test); `ping` → `pong`; exits 0 at EOF.
 */
export const probeBody: WorkerBody = async (port) => {
  for (;;) {
    const f = await port.receive(60_000);
    if (f === null) return 0;
    if (f.type === "probe.landlock") {
      const req = ProbeRequestSchema.parse({ ...f, type: "probe.run" });
      await port.send({
        v: IPC_PROTOCOL_VERSION,
        type: "probe.result",
        results: runLandlockProbes(req),
      });
    } else if (f.type === "probe.run") {
      const req = ProbeRequestSchema.parse(f);
      await port.send({
        v: IPC_PROTOCOL_VERSION,
        type: "probe.result",
        results: await runProbes(req),
      });
    } else if (f.type === "probe.raw") {
      const req = RawRequestSchema.parse(f);
      const line = new Uint8Array(req.bytes + (req.newline ? 1 : 0)).fill(0x61);
      if (req.newline) line[req.bytes] = 0x0a;
      await Deno.stdout.write(line);
    } else if (f.type === "probe.spin") {
      // Burn CPU (bounded by wall time) until RLIMIT_CPU ends the process.
      const until = Date.now() + 30_000;
      while (Date.now() < until) { /* bounded busy loop */ }
      return 0;
    } else if (f.type === "probe.hold") {
      // Ignore end of input for a while: only a signal ends this Worker sooner.
      await new Promise((r) => setTimeout(r, 10_000));
      return 0;
    } else if (f.type === "ping") {
      await port.send({ v: IPC_PROTOCOL_VERSION, type: "pong" });
    } else {
      return 3;
    }
  }
};
