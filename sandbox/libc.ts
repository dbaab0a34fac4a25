/**
 * The one FFI binding module against libc. Everything privileged or
 * descriptor-anchored goes through `syscall()` with a fixed arity of seven
 * 64-bit words (variadic calls like prctl are passed as fixed words, which is
 * how x86_64 and aarch64 Linux pass variadic integer arguments), and errno is
 * read from `__errno_location()` immediately after the call on the same thread.
 * The file tools' per-file calls (close, openat2, statx, pread64, lseek,
 * getdents64) also have typed bindings of the same entry (`file*` below):
 * same syscalls, same arguments, same errno rule, no BigInt per argument.
 *
 * This file enforces nothing by itself: it names syscall numbers per arch and
 * gives typed, errno-returning wrappers. Policy lives in the callers.
 */

const ARCH = Deno.build.arch; // "x86_64" | "aarch64"

/** Syscall numbers per architecture. `-1` marks a syscall the arch lacks. */
const NR_TABLE = {
  read: [0, 63],
  write: [1, 64],
  close: [3, 57],
  fstat: [5, 80],
  lseek: [8, 62],
  ioctl: [16, 29],
  pread64: [17, 67],
  pwrite64: [18, 68],
  getpid: [39, 172],
  socket: [41, 198],
  connect: [42, 203],
  sendto: [44, 206],
  socketpair: [53, 199],
  clone: [56, 220],
  fork: [57, -1],
  vfork: [58, -1],
  execve: [59, 221],
  kill: [62, 129],
  fcntl: [72, 25],
  flock: [73, 32],
  fsync: [74, 82],
  fdatasync: [75, 83],
  fchmod: [91, 52],
  umask: [95, 166],
  ptrace: [101, 117],
  getppid: [110, 173],
  setsid: [112, 157],
  capget: [125, 90],
  capset: [126, 91],
  prctl: [157, 167],
  reboot: [169, 142],
  sethostname: [170, 161],
  mount: [165, 40],
  gettid: [186, 178],
  exit_group: [231, 94],
  openat: [257, 56],
  mkdirat: [258, 34],
  newfstatat: [262, 79],
  unlinkat: [263, 35],
  linkat: [265, 37],
  unshare: [272, 97],
  prlimit64: [302, 261],
  process_vm_readv: [310, 270],
  renameat2: [316, 276],
  seccomp: [317, 277],
  memfd_create: [319, 279],
  statx: [332, 291],
  pidfd_send_signal: [424, 424],
  io_uring_setup: [425, 425],
  pidfd_open: [434, 434],
  clone3: [435, 435],
  close_range: [436, 436],
  openat2: [437, 437],
  pidfd_getfd: [438, 438],
  landlock_create_ruleset: [444, 444],
  landlock_add_rule: [445, 445],
  landlock_restrict_self: [446, 446],
  getdents64: [217, 61],
  execveat: [322, 281],
  bind: [49, 200],
  readlinkat: [267, 78],
  fallocate: [285, 47],
  getuid: [102, 174],
  setpriority: [141, 140],
  listen: [50, 201],
  getgid: [104, 176],
  setresuid: [117, 147],
  getresuid: [118, 148],
  setresgid: [119, 149],
  getresgid: [120, 150],
  setgroups: [116, 159],
  mmap: [9, 222],
  munmap: [11, 215],
  wait4: [61, 260],
  waitid: [247, 95],
  setpgid: [109, 154],
  getpgid: [121, 155],
  dup2: [33, -1],
  dup3: [292, 24],
  chdir: [80, 49],
  exit: [60, 93],
  fchown: [93, 55],
  fchownat: [260, 54],
  symlinkat: [266, 36],
  copy_file_range: [326, 285],
  ppoll: [271, 73],
} as const;

export type SyscallName = keyof typeof NR_TABLE;

/** The syscall number of `name` on this (or the given) architecture; -1 if absent. */
export function syscallNumber(name: SyscallName, arch: "x86_64" | "aarch64" = hostArch()): number {
  return NR_TABLE[name][arch === "x86_64" ? 0 : 1];
}

/** All syscall names known to this module (for building per-arch BPF tables). */
export const SYSCALL_NAMES = Object.keys(NR_TABLE) as SyscallName[];

export function hostArch(): "x86_64" | "aarch64" {
  if (ARCH === "x86_64" || ARCH === "aarch64") return ARCH;
  throw new Error(`unsupported architecture ${ARCH}`);
}

const SYMBOLS = {
  syscall: {
    parameters: ["i64", "i64", "i64", "i64", "i64", "i64", "i64"],
    result: "i64",
  },
  __errno_location: { parameters: [], result: "pointer" },
  // The same syscall(2) entry with buffer arguments passed as buffers: the
  // runtime hands over the data pointer itself, skipping a pointer-object
  // round trip per argument. One binding per shape the file tools use
  // (path at argument 1; plus open_how at 2 or the statx buffer at 4).
  syscall_b1: {
    name: "syscall",
    parameters: ["i64", "i64", "buffer", "i64", "i64", "i64", "i64"],
    result: "i64",
  },
  syscall_b12: {
    name: "syscall",
    parameters: ["i64", "i64", "buffer", "buffer", "i64", "i64", "i64"],
    result: "i64",
  },
  syscall_b14: {
    name: "syscall",
    parameters: ["i64", "i64", "buffer", "i64", "i64", "buffer", "i64"],
    result: "i64",
  },
} as const;

/**
 * The file tools' bindings, bound on their first use: each symbol costs about
 * half a millisecond to bind, and each stage of every Worker and runner binds
 * this module's symbols anew, while a Worker never calls these [PF-1].
 */
const FILE_SYMBOLS = {
  // The file tools' per-file calls (see "Per-file calls" below): the same
  // syscall(2) entry typed per call so no argument or result but the 64-bit
  // ones is a BigInt. The number is always a BigInt made once (an i64 given a
  // JS number takes the runtime's slow path). An `int`/`unsigned int` kernel
  // argument passed as i32/u32 is exact: x86_64 and aarch64 syscall wrappers
  // truncate each argument to its declared type. A `long` result read as i32
  // is exact for close/openat2/statx/getdents64 (0, an fd, a count ≤ the
  // buffer, or -1).
  sc_close: { name: "syscall", parameters: ["i64", "i32"], result: "i32" },
  sc_openat2: {
    name: "syscall",
    parameters: ["i64", "i32", "buffer", "buffer", "i64"],
    result: "i32",
  },
  sc_statx: {
    name: "syscall",
    parameters: ["i64", "i32", "buffer", "i32", "u32", "buffer"],
    result: "i32",
  },
  sc_pread64: {
    name: "syscall",
    parameters: ["i64", "i32", "buffer", "i64", "i64"],
    result: "i64",
  },
  sc_lseek: { name: "syscall", parameters: ["i64", "i32", "i64", "i32"], result: "i64" },
  sc_getdents64: {
    name: "syscall",
    parameters: ["i64", "i32", "buffer", "u32"],
    result: "i32",
  },
} as const;

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>;
let lib: Lib | null = null;

function libc(): Lib {
  if (lib === null) lib = Deno.dlopen("libc.so.6", SYMBOLS);
  return lib;
}

type FileLib = Deno.DynamicLibrary<typeof FILE_SYMBOLS>;
let fileLib: FileLib | null = null;

function libcFile(): FileLib {
  if (fileLib === null) fileLib = Deno.dlopen("libc.so.6", FILE_SYMBOLS);
  return fileLib;
}

/** A word passed to a syscall: a number/bigint, or a buffer whose address is passed. */
export type Word = number | bigint | Uint8Array | null;

/** Keeps buffers alive for the duration of a call and converts them to addresses. */
function toWord(w: Word): bigint {
  if (w === null) return 0n;
  if (typeof w === "number") return BigInt(w);
  if (typeof w === "bigint") return w;
  const p = Deno.UnsafePointer.of(w as Uint8Array<ArrayBuffer>);
  return p === null ? 0n : BigInt(Deno.UnsafePointer.value(p));
}

export interface SyscallResult {
  /** The raw return value (-1 on failure for most syscalls). */
  ret: bigint;
  /** errno when ret === -1, else 0. */
  errno: number;
}

/**
 * Invokes syscall `name` with up to six arguments. Synchronous FFI runs on the
 * calling (main JS) thread, so errno read right after belongs to this call.
 */
export function syscall(name: SyscallName, ...args: Word[]): SyscallResult {
  const nr = syscallNumber(name);
  if (nr < 0) return { ret: -1n, errno: ENOSYS };
  return invoke(nr, args);
}

/** Invokes a syscall by raw number (escape probes use this for x32 numbers). */
export function syscallByNumber(nr: number, ...args: Word[]): SyscallResult {
  return invoke(nr, args);
}

/** Syscall numbers as bigints, made once each. */
const bigNr = new Map<number, bigint>();

function invoke(nr: number, args: Word[]): SyscallResult {
  if (args.length > 6) throw new Error("syscall takes at most six arguments");
  const w = [0n, 0n, 0n, 0n, 0n, 0n];
  let buffers = 0;
  for (let i = 0; i < args.length; i++) {
    if (args[i] instanceof Uint8Array) buffers |= 1 << i;
    else w[i] = toWord(args[i]);
  }
  const l = libc();
  const errnoCell = errnoSlot();
  errnoCell[0] = 0;
  let n = bigNr.get(nr);
  if (n === undefined) bigNr.set(nr, n = BigInt(nr));
  const a = args as Uint8Array<ArrayBuffer>[];
  let ret: bigint;
  if (buffers === 0b10) {
    ret = l.symbols.syscall_b1(n, w[0], a[1], w[2], w[3], w[4], w[5]) as bigint;
  } else if (buffers === 0b110) {
    ret = l.symbols.syscall_b12(n, w[0], a[1], a[2], w[3], w[4], w[5]) as bigint;
  } else if (buffers === 0b10010) {
    ret = l.symbols.syscall_b14(n, w[0], a[1], w[2], w[3], a[4], w[5]) as bigint;
  } else {
    for (let i = 0; i < args.length; i++) if (buffers & (1 << i)) w[i] = toWord(args[i]);
    ret = l.symbols.syscall(n, w[0], w[1], w[2], w[3], w[4], w[5]) as bigint;
  }
  const errno = ret === -1n ? errnoCell[0] : 0;
  // Touch the buffers after the call so they cannot be collected during it.
  for (const x of args) if (x instanceof Uint8Array) void x.byteLength;
  return { ret, errno };
}

/**
 * This thread's errno cell. errno is thread-local and its address is fixed
 * for the thread's life; a module instance lives in one isolate, and an
 * isolate runs on one thread (synchronous FFI only), so the view is cached.
 */
let errnoCellCache: Int32Array | null = null;
function errnoSlot(): Int32Array {
  if (errnoCellCache === null) {
    const p = libc().symbols.__errno_location();
    if (p === null) throw new Error("__errno_location returned NULL");
    errnoCellCache = new Int32Array(Deno.UnsafePointerView.getArrayBuffer(p, 4));
  }
  return errnoCellCache;
}

/** A NUL-terminated copy of `s` for passing as `const char *`. */
export function cstr(s: string): Uint8Array {
  if (s.includes("\0")) throw new Error("string contains NUL");
  // Short ASCII names (nearly every path component) are copied unit by unit.
  if (s.length <= 64) {
    const a = new Uint8Array(s.length + 1);
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      a[i] = c;
    }
    if (i === s.length) return a;
  }
  // Room for the worst case (3 bytes per UTF-16 unit) plus the terminator.
  const out = new Uint8Array(s.length * 3 + 1);
  const { written } = cstrEncoder.encodeInto(s, out);
  return out.subarray(0, written + 1);
}
const cstrEncoder = new TextEncoder();

/** Address of a buffer as a bigint (for building pointer arrays). */
export function addressOf(buf: Uint8Array): bigint {
  return toWord(buf);
}

/**
 * A NULL-terminated `char *[]` (argv, envp) of `items` as C strings. Every
 * buffer it points into is pushed on `keep`: the caller holds `keep` until
 * the call that reads the vector has returned, so none is collected early.
 */
export function cStringVector(items: readonly string[], keep: Uint8Array[]): Uint8Array {
  const arr = new BigUint64Array(items.length + 1);
  items.forEach((s, i) => {
    const c = cstr(s);
    keep.push(c);
    arr[i] = addressOf(c);
  });
  const bytes = new Uint8Array(arr.buffer);
  keep.push(bytes);
  return bytes;
}

// ── errno values (identical on x86_64 and aarch64) ───────────────────────────
export const EPERM = 1;
export const ENOENT = 2;
export const EINTR = 4;
export const EIO = 5;
export const EBADF = 9;
export const ECHILD = 10;
export const EAGAIN = 11;
export const EWOULDBLOCK = 11;
export const ENOMEM = 12;
export const EACCES = 13;
export const EFAULT = 14;
export const EBUSY = 16;
export const EEXIST = 17;
export const EXDEV = 18;
export const ENODEV = 19;
export const ENOTDIR = 20;
export const EISDIR = 21;
export const EINVAL = 22;
export const EMFILE = 24;
export const EFBIG = 27;
export const ENOSPC = 28;
export const ESPIPE = 29;
export const EROFS = 30;
export const EMLINK = 31;
export const ERANGE = 34;
export const ENAMETOOLONG = 36;
export const ENOSYS = 38;
export const ENOTEMPTY = 39;
export const ELOOP = 40;
export const EOPNOTSUPP = 95;
export const EAFNOSUPPORT = 97;
export const ECONNREFUSED = 111;
export const ESRCH = 3;
export const ENXIO = 6;

// ── open/at flags (x86_64 and aarch64 differ for O_DIRECTORY/O_NOFOLLOW) ─────
export const O_RDONLY = 0;
export const O_WRONLY = 1;
export const O_RDWR = 2;
export const O_CREAT = 0o100;
export const O_EXCL = 0o200;
export const O_NOCTTY = 0o400;
export const O_TRUNC = 0o1000;
export const O_NONBLOCK = 0o4000;
export const O_DIRECTORY = hostArch() === "x86_64" ? 0o200000 : 0o40000;
export const O_NOFOLLOW = hostArch() === "x86_64" ? 0o400000 : 0o100000;
export const O_CLOEXEC = 0o2000000;
export const O_PATH = 0o10000000;
export const AT_FDCWD = -100;
export const AT_SYMLINK_NOFOLLOW = 0x100;
export const AT_REMOVEDIR = 0x200;
export const AT_EMPTY_PATH = 0x1000;
export const RENAME_NOREPLACE = 1;
export const RENAME_EXCHANGE = 2;
// openat2 `struct open_how.resolve` flags (used by linuxfs/fs_anchor.ts).
export const RESOLVE_NO_XDEV = 0x01;
export const RESOLVE_NO_MAGICLINKS = 0x02;
export const RESOLVE_NO_SYMLINKS = 0x04;
export const RESOLVE_BENEATH = 0x08;
// lseek whence values and flock operations.
export const SEEK_SET = 0;
export const SEEK_END = 2;
export const SEEK_DATA = 3;
export const SEEK_HOLE = 4;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;

// ── stat ─────────────────────────────────────────────────────────────────────
export const S_IFMT = 0o170000;
export const S_IFREG = 0o100000;
export const S_IFDIR = 0o040000;
export const S_IFLNK = 0o120000;
export const S_IFIFO = 0o010000;
export const S_IFSOCK = 0o140000;
export const S_IFCHR = 0o020000;
export const S_IFBLK = 0o060000;

export interface Statx {
  mode: number;
  uid: number;
  gid: number;
  nlink: number;
  ino: bigint;
  size: bigint;
  /** 512-byte blocks allocated. */
  blocks: bigint;
  devMajor: number;
  devMinor: number;
  mntId: bigint;
  mtimeSec: bigint;
  mtimeNsec: number;
  ctimeSec: bigint;
  ctimeNsec: number;
}

const STATX_BASIC_STATS = 0x7ff;
const STATX_MNT_ID = 0x1000;

/** statx(dirfd, path, flags); use path "" with AT_EMPTY_PATH for an fd. */
export function statx(
  dirfd: number,
  path: string,
  flags: number,
): { ok: true; st: Statx } | { ok: false; errno: number } {
  // One result buffer per thread: the call is synchronous and every field is
  // copied out before the next call can reuse it.
  const buf = statxBuf;
  const r = syscall(
    "statx",
    dirfd,
    path === "" ? EMPTY_CSTR : cstr(path),
    flags,
    STATX_BASIC_STATS | STATX_MNT_ID,
    buf,
  );
  if (r.ret !== 0n) return { ok: false, errno: r.errno };
  const v = statxView;
  return {
    ok: true,
    st: {
      nlink: v.getUint32(16, true),
      uid: v.getUint32(20, true),
      gid: v.getUint32(24, true),
      mode: v.getUint16(28, true),
      ino: v.getBigUint64(32, true),
      size: v.getBigUint64(40, true),
      blocks: v.getBigUint64(48, true),
      ctimeSec: v.getBigInt64(96, true),
      ctimeNsec: v.getUint32(104, true),
      mtimeSec: v.getBigInt64(112, true),
      mtimeNsec: v.getUint32(120, true),
      devMajor: v.getUint32(136, true),
      devMinor: v.getUint32(140, true),
      mntId: v.getBigUint64(144, true),
    },
  };
}
const statxBuf = new Uint8Array(256);
const statxView = new DataView(statxBuf.buffer);
/** The empty C string (read-only for the kernel, so one copy serves every call). */
const EMPTY_CSTR: Uint8Array<ArrayBuffer> = new Uint8Array(1);

/** fstat through statx(fd, "", AT_EMPTY_PATH). */
export function fstatx(fd: number) {
  return statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
}

/** close(fd), ignoring EINTR semantics (Linux always releases the fd). */
export function closeFd(fd: number): void {
  if (fd >= 0) syscall("close", fd);
}

// ── Per-file calls of the file tools [PF-3] ─────────────────────────────────
// The same syscalls with the same arguments as `syscall(name, …)` and errno
// read the same way (cell zeroed before, read after a -1), through the typed
// bindings above: no argument array, no BigInt per argument, no result
// object. Used by linuxfs/ for the calls a search makes once per file; every
// other caller keeps the generic `syscall`.

const NR_CLOSE = BigInt(syscallNumber("close"));
const NR_OPENAT2 = BigInt(syscallNumber("openat2"));
const NR_STATX = BigInt(syscallNumber("statx"));
const NR_PREAD64 = BigInt(syscallNumber("pread64"));
const NR_LSEEK = BigInt(syscallNumber("lseek"));
const NR_GETDENTS64 = BigInt(syscallNumber("getdents64"));
/** `int` results: the largest count a typed i32 result may stand for. */
const I32_MAX = 0x7fffffff;

/** errno of the last per-file call that returned -1 (0 after a success). */
let fileCallErrno = 0;

/** errno of the last `fileClose`/`fileOpenat2`/`filePread`/`fileLseek`/`fileGetdents` that failed. */
export function lastFileErrno(): number {
  return fileCallErrno;
}

function afterCall(ret: number | bigint, cell: Int32Array): void {
  // deno-lint-ignore eqeqeq -- -1 and -1n alike
  fileCallErrno = ret == -1 ? cell[0] : 0;
}

/** close(fd) (as closeFd). */
export function fileClose(fd: number): void {
  if (fd < 0) return;
  const cell = errnoSlot();
  cell[0] = 0;
  afterCall(libcFile().symbols.sc_close(NR_CLOSE, fd), cell);
}

/**
 * `path` as a C string in one reused buffer (the kernel reads it only during
 * the synchronous call it is passed to, and a module instance lives on one
 * thread); a name the buffer cannot hold gets its own copy through cstr.
 * Throws on NUL exactly as cstr does.
 */
function scratchCstr(path: string): Uint8Array<ArrayBuffer> {
  if (path === "") return EMPTY_CSTR;
  if (path.length <= 255) {
    const a = pathScratch;
    let i = 0;
    for (; i < path.length; i++) {
      const c = path.charCodeAt(i);
      if (c >= 0x80) break;
      if (c === 0) throw new Error("string contains NUL");
      a[i] = c;
    }
    if (i === path.length) {
      a[i] = 0;
      return a;
    }
  }
  return cstr(path) as Uint8Array<ArrayBuffer>;
}
const pathScratch = new Uint8Array(256);

/** openat2(dirfd, path, how, 24): the fd, or -1 with lastFileErrno(). */
export function fileOpenat2(dirfd: number, path: string, how: Uint8Array): number {
  if (how.byteLength !== 24) throw new Error("open_how is 24 bytes");
  const c = scratchCstr(path);
  const cell = errnoSlot();
  cell[0] = 0;
  const r = libcFile().symbols.sc_openat2(
    NR_OPENAT2,
    dirfd,
    c,
    how as Uint8Array<ArrayBuffer>,
    OPEN_HOW_SIZE,
  );
  afterCall(r, cell);
  return r;
}
const OPEN_HOW_SIZE = 24n;

/** pread64(fd, buf, buf.length, offset): bytes read, or -1 with lastFileErrno(). */
export function filePread(fd: number, buf: Uint8Array, offset: number): number {
  const cell = errnoSlot();
  cell[0] = 0;
  const r = libcFile().symbols.sc_pread64(
    NR_PREAD64,
    fd,
    buf as Uint8Array<ArrayBuffer>,
    BigInt(buf.length),
    BigInt(offset),
  ) as bigint;
  afterCall(r, cell);
  return Number(r);
}

/** lseek(fd, offset, whence): the offset as a bigint, or -1n with lastFileErrno(). */
export function fileLseek(fd: number, offset: number, whence: number): bigint {
  const cell = errnoSlot();
  cell[0] = 0;
  const r = libcFile().symbols.sc_lseek(NR_LSEEK, fd, BigInt(offset), whence) as bigint;
  afterCall(r, cell);
  return r;
}

/** getdents64(fd, buf, buf.length): bytes filled, 0 at the end, or -1 with lastFileErrno(). */
export function fileGetdents(fd: number, buf: Uint8Array): number {
  if (buf.length > I32_MAX) throw new Error("getdents64 buffer too large");
  const cell = errnoSlot();
  cell[0] = 0;
  const r = libcFile().symbols.sc_getdents64(
    NR_GETDENTS64,
    fd,
    buf as Uint8Array<ArrayBuffer>,
    buf.length,
  );
  afterCall(r, cell);
  return r;
}

/**
 * statx(dirfd, path, flags) as `statx()`: the same mask, the same fields,
 * the same errno; path "" with AT_EMPTY_PATH for an fd (see fileFstatx).
 */
export function fileStatx(
  dirfd: number,
  path: string,
  flags: number,
): { ok: true; st: Statx } | { ok: false; errno: number } {
  const c = scratchCstr(path);
  const cell = errnoSlot();
  cell[0] = 0;
  const r = libcFile().symbols.sc_statx(
    NR_STATX,
    dirfd,
    c,
    flags,
    STATX_BASIC_STATS | STATX_MNT_ID,
    statxBuf,
  );
  if (r !== 0) {
    fileCallErrno = r === -1 ? cell[0] : 0;
    return { ok: false, errno: fileCallErrno };
  }
  fileCallErrno = 0;
  // The fields statx() copies out, read through typed views of the same
  // little-endian buffer (Linux on x86_64/aarch64 is little-endian).
  const u32 = statxU32;
  const u64 = statxU64;
  const i64 = statxI64;
  return {
    ok: true,
    st: {
      nlink: u32[4],
      uid: u32[5],
      gid: u32[6],
      mode: u32[7] & 0xffff,
      ino: u64[4],
      size: u64[5],
      blocks: u64[6],
      ctimeSec: i64[12],
      ctimeNsec: u32[26],
      mtimeSec: i64[14],
      mtimeNsec: u32[30],
      devMajor: u32[34],
      devMinor: u32[35],
      mntId: u64[18],
    },
  };
}
const statxU32 = new Uint32Array(statxBuf.buffer);
const statxU64 = new BigUint64Array(statxBuf.buffer);
const statxI64 = new BigInt64Array(statxBuf.buffer);

/** fstatx through the per-file binding. */
export function fileFstatx(fd: number) {
  return fileStatx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
}
