/**
 * Escape attempts run AS A COMMAND inside the runner sandbox (copied into the
 * scratch and started with `deno run -A`): self-contained (no imports, the
 * repository's tests are not visible in there), each attempt reported as the
 * raw errno (0 = the attempt succeeded) on stdout as one JSON object.
 *
 *   deno run -A probe.ts escapes '<json ProbeArgs>'
 *   deno run -A probe.ts forkbomb
 *   deno run -A probe.ts fsize <bytes>
 */
const lib = Deno.dlopen(
  "libc.so.6",
  {
    syscall: { parameters: ["i64", "i64", "i64", "i64", "i64", "i64", "i64"], result: "i64" },
    __errno_location: { parameters: [], result: "pointer" },
  } as const,
);

const X86 = Deno.build.arch === "x86_64";
const NR: Record<string, number> = X86
  ? {
    openat: 257,
    close: 3,
    socket: 41,
    connect: 42,
    ptrace: 101,
    kill: 62,
    prlimit64: 302,
    capset: 126,
    setuid: 105,
    prctl: 157,
    mount: 165,
    unshare: 272,
    clone: 56,
    bpf: 321,
    perf_event_open: 298,
    keyctl: 250,
    io_uring_setup: 425,
    userfaultfd: 323,
    mmap: 9,
    munmap: 11,
    memfd_create: 319,
    process_vm_readv: 310,
    setpriority: 141,
    init_module: 175,
    reboot: 169,
  }
  : {
    openat: 56,
    close: 57,
    socket: 198,
    connect: 203,
    ptrace: 117,
    kill: 129,
    prlimit64: 261,
    capset: 91,
    setuid: 146,
    prctl: 167,
    mount: 40,
    unshare: 97,
    clone: 220,
    bpf: 280,
    perf_event_open: 241,
    keyctl: 219,
    io_uring_setup: 425,
    userfaultfd: 282,
    mmap: 222,
    munmap: 215,
    memfd_create: 279,
    process_vm_readv: 270,
    setpriority: 140,
    init_module: 105,
    reboot: 142,
  };

type W = number | bigint | Uint8Array | null;
function word(w: W): bigint {
  if (w === null) return 0n;
  if (typeof w === "number") return BigInt(w);
  if (typeof w === "bigint") return w;
  const p = Deno.UnsafePointer.of(w as Uint8Array<ArrayBuffer>);
  return p === null ? 0n : BigInt(Deno.UnsafePointer.value(p));
}

/** errno of a raw syscall (0 when it succeeded; a returned fd is closed). */
function sys(name: string, ...args: W[]): number {
  const a = [0n, 0n, 0n, 0n, 0n, 0n];
  args.forEach((x, i) => a[i] = word(x));
  const r = lib.symbols.syscall(BigInt(NR[name]), a[0], a[1], a[2], a[3], a[4], a[5]) as bigint;
  if (r === -1n) {
    return new Deno.UnsafePointerView(lib.symbols.__errno_location()!).getInt32(0);
  }
  if (["openat", "socket", "memfd_create", "io_uring_setup", "userfaultfd"].includes(name)) {
    sys("close", Number(r));
  }
  if (name === "mmap") sys("munmap", r, args[1] as number);
  for (const x of args) if (x instanceof Uint8Array) void x.length;
  return 0;
}

const cstr = (s: string) => new TextEncoder().encode(s + "\0");
const O_RDONLY = 0, O_WRONLY = 1, O_CREAT = 0o100, O_CLOEXEC = 0o2000000;
const AF_INET = 2, AF_UNIX = 1, SOCK_STREAM = 1, SOCK_DGRAM = 2;
const open = (p: string, flags: number) => sys("openat", -100, cstr(p), flags | O_CLOEXEC, 0o644);

function connectErrno(domain: number, addr: Uint8Array): number {
  const s = lib.symbols.syscall(BigInt(NR.socket), BigInt(domain), 1n, 0n, 0n, 0n, 0n) as bigint;
  if (s === -1n) return new Deno.UnsafePointerView(lib.symbols.__errno_location()!).getInt32(0);
  const e = sys("connect", s, addr, addr.length);
  sys("close", s);
  return e;
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
  const enc = new TextEncoder().encode(path);
  const b = new Uint8Array(2 + (abstract ? 1 : 0) + enc.length + (abstract ? 0 : 1));
  new DataView(b.buffer).setUint16(0, AF_UNIX, true);
  b.set(enc, abstract ? 3 : 2);
  return b;
}

interface ProbeArgs {
  tcp_port: number;
  server_pid: number;
  home: string;
  outside_dir: string;
  unix_socket: string;
  abstract_name: string;
}

async function escapes(p: ProbeArgs): Promise<Record<string, number | string>> {
  const r: Record<string, number | string> = {};
  const GiB = 1024 ** 3;
  r.read_etc_hostname_or_passwd = open("/etc/passwd", O_RDONLY);
  r.read_bootstrap_token = open(`${p.home}/.runtime/secrets/bootstrap_token`, O_RDONLY);
  r.read_data_dir_file = open(`${p.home}/data/registry.sqlite`, O_RDONLY);
  r.write_outside_scratch = open(`${p.outside_dir}/planted`, O_WRONLY | O_CREAT);
  r.write_usr_bin = open("/usr/bin/planted-by-runner", O_WRONLY | O_CREAT);
  r.write_scratch = open("written-in-scratch.txt", O_WRONLY | O_CREAT);
  r.tcp_connect_server = connectErrno(AF_INET, sockaddrIn(p.tcp_port));
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port: p.tcp_port })).close();
    r.deno_tcp_connect_server = 0;
  } catch (e) {
    r.deno_tcp_connect_server = Number(/os error (\d+)/.exec(String(e))?.[1] ?? -1);
  }
  const udp = lib.symbols.syscall(
    BigInt(NR.socket),
    BigInt(AF_INET),
    BigInt(SOCK_DGRAM),
    0n,
    0n,
    0n,
    0n,
  ) as bigint;
  r.udp_socket = udp === -1n
    ? new Deno.UnsafePointerView(lib.symbols.__errno_location()!).getInt32(0)
    : 0;
  r.unix_connect_server_socket = connectErrno(AF_UNIX, sockaddrUn(p.unix_socket, false));
  r.abstract_connect_server = connectErrno(AF_UNIX, sockaddrUn(p.abstract_name, true));
  void SOCK_STREAM;
  r.signal_server = sys("kill", p.server_pid, 0);
  r.ptrace_attach_runner = sys("ptrace", 16, /* PTRACE_ATTACH */ 1, 0, 0);
  r.process_vm_readv_runner = sys(
    "process_vm_readv",
    1,
    new Uint8Array(16),
    1,
    new Uint8Array(16),
    1,
    0,
  );
  // Raise a hard limit (RLIMIT_NOFILE 7) above its value: needs CAP_SYS_RESOURCE.
  const lim = new Uint8Array(16);
  new DataView(lim.buffer).setBigUint64(0, 1n << 20n, true);
  new DataView(lim.buffer).setBigUint64(8, 1n << 20n, true);
  r.raise_rlimit_nofile = sys("prlimit64", 0, 7, lim, null);
  // Regain capabilities: capset of everything, setuid(0), raise an ambient cap.
  const hdr = new Uint8Array(8);
  new DataView(hdr.buffer).setUint32(0, 0x20080522, true);
  r.capset_all = sys("capset", hdr, new Uint8Array(24).fill(0xff));
  r.setuid_root = sys("setuid", 0);
  r.ambient_raise_sys_admin = sys("prctl", 47, 2, 21, 0, 0);
  r.mount_tmpfs = sys("mount", cstr("none"), cstr("/tmp/scratch"), cstr("tmpfs"), 0, null);
  r.unshare_user = sys("unshare", 0x10000000);
  r.clone_newpid = sys("clone", 0x20000000 | 17, 0, 0, 0, 0);
  r.bpf = sys("bpf", 0, new Uint8Array(128), 128);
  r.perf_event_open = sys("perf_event_open", new Uint8Array(128), 0, -1, -1, 0);
  r.keyctl = sys("keyctl", 0, 0, 0, 0, 0);
  r.io_uring_setup = sys("io_uring_setup", 1, new Uint8Array(120));
  r.userfaultfd = sys("userfaultfd", 0);
  r.init_module = sys("init_module", null, 0, cstr(""));
  r.reboot = sys("reboot", 0, 0, 0, 0);
  r.setpriority_user = sys("setpriority", 2, /* PRIO_USER */ 0, 19);
  r.mmap_shared_anonymous_3gib = sys("mmap", 0, 3 * GiB, 3, 0x01 | 0x20, -1, 0);
  r.mmap_private_anonymous_5gib = sys("mmap", 0, 5 * GiB, 3, 0x02 | 0x20, -1, 0);
  r.memfd_create = sys("memfd_create", cstr("x"), 0);
  r.open_dev_zero = open("/dev/zero", O_RDONLY);
  // The runner's /proc (hidepid=invisible) shows only what the command may inspect.
  r.proc_server_visible = open(`/proc/${p.server_pid}/status`, O_RDONLY);
  r.proc_init_visible = open("/proc/1/cmdline", O_RDONLY);
  const visible = [...Deno.readDirSync("/proc")].filter((e) => /^\d+$/.test(e.name)).length;
  r.proc_only_own_processes = visible <= 4 ? 0 : visible;
  const status = Deno.readTextFileSync("/proc/self/status");
  for (
    const f of [
      "Uid",
      "Gid",
      "Groups",
      "CapEff",
      "CapPrm",
      "CapInh",
      "CapBnd",
      "CapAmb",
      "NoNewPrivs",
      "Seccomp",
    ]
  ) {
    r[`status_${f}`] = new RegExp(`\\n${f}:[ \\t]*([^\\n]*)`).exec(status)?.[1]?.trim() ?? "";
  }
  return r;
}

/** Starts `sleep` children until the kernel refuses one; reports its errno and the count. */
function forkbomb(token: string): Record<string, number> {
  const limits = Deno.readTextFileSync("/proc/self/limits");
  const nproc = Number(/Max processes\s+(\d+)/.exec(limits)?.[1] ?? 0);
  let n = 0;
  for (; n < 4096; n++) {
    try {
      new Deno.Command("/bin/sleep", { args: [token], stdout: "null", stderr: "null" }).spawn();
    } catch (e) {
      return { errno: Number(/os error (\d+)/.exec(String(e))?.[1] ?? -1), spawned: n, nproc };
    }
  }
  return { errno: 0, spawned: n, nproc };
}

/** Writes `bytes` bytes, then one more (RLIMIT_FSIZE: SIGXFSZ kills this process). */
function fsize(bytes: number): void {
  const f = Deno.openSync("big.bin", { write: true, create: true, truncate: true });
  const chunk = new Uint8Array(1024 * 1024);
  let left = bytes;
  while (left > 0) left -= f.writeSync(chunk.subarray(0, Math.min(left, chunk.length)));
  console.log(JSON.stringify({ wrote: bytes }));
  f.writeSync(new Uint8Array(1));
  console.log(JSON.stringify({ wrote_past_limit: true }));
}

/** Holds `mib` MiB of touched private memory for `holdMs`, then exits. */
async function memhog(mib: number, holdMs: number): Promise<void> {
  const keep: Uint8Array[] = [];
  for (let i = 0; i < mib; i += 256) keep.push(new Uint8Array(256 * 1024 * 1024).fill(1));
  console.log(JSON.stringify({ filled: mib }));
  await new Promise((r) => setTimeout(r, holdMs));
  void keep.length;
}

/** Two memory hogs at once; reports how each ended. */
async function twohogs(mib: number): Promise<Array<{ code: number; signal: string | null }>> {
  const hog = () =>
    new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "probe.ts", "memhog", String(mib)],
      stdout: "null",
      stderr: "null",
    }).output();
  const rs = await Promise.all([hog(), hog()]);
  return rs.map((r) => ({ code: r.code, signal: r.signal }));
}

const [mode, arg] = Deno.args;
if (mode === "escapes") console.log(JSON.stringify(await escapes(JSON.parse(arg))));
else if (mode === "forkbomb") {
  console.log(JSON.stringify(forkbomb(arg)));
  Deno.exit(0); // the children are left behind on purpose
} else if (mode === "fsize") fsize(Number(arg));
else if (mode === "memhog") await memhog(Number(arg), 10_000);
else if (mode === "twohogs") console.log(JSON.stringify(await twohogs(Number(arg))));
else throw new Error(`unknown mode ${mode}`);
