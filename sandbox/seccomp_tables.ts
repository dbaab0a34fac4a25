/**
 * Per-architecture syscall numbers for the Worker's seccomp filter, as
 * `[x86_64, aarch64]` pairs (-1: the arch has no such syscall). Generated from
 * the kernel UAPI headers (asm/unistd_64.h, asm-generic/unistd.h); the numbers
 * above 450 are the unified table every arch shares.
 *
 * This file enforces nothing; `seccomp_bpf.ts` turns it into a program.
 */

export type Arch = "x86_64" | "aarch64";

/** AUDIT_ARCH_* values the filter compares `seccomp_data.arch` against first. */
export const AUDIT_ARCH: Record<Arch, number> = {
  x86_64: 0xc000003e,
  aarch64: 0xc00000b7,
};

/** x32 syscalls share AUDIT_ARCH_X86_64 and are told apart by this bit in `nr`. */
export const X32_SYSCALL_BIT = 0x40000000;

/** Highest syscall number the filter knows; anything above fails closed with ENOSYS. */
export const HIGHEST_KNOWN_NR = 469;

type Pair = readonly [number, number];

/** Denied outright with EPERM, grouped by the SPEC [SB-3] reason. */
export const DENY_EPERM: Record<string, Record<string, Pair>> = {
  // Network: socket() is what stops UDP/DNS (Landlock covers only TCP); io_uring below.
  network: {
    socket: [41, 198],
    socketpair: [53, 199],
    connect: [42, 203],
    bind: [49, 200],
    listen: [50, 201],
    accept: [43, 202],
    accept4: [288, 242],
  },
  // Process creation other than threads (clone is argument-checked separately).
  process: { fork: [57, -1], vfork: [58, -1], execve: [59, 221], execveat: [322, 281] },
  // Cross-process inspection and control.
  crossProcess: {
    ptrace: [101, 117],
    process_vm_readv: [310, 270],
    process_vm_writev: [311, 271],
    pidfd_getfd: [438, 438],
    pidfd_open: [434, 434],
    pidfd_send_signal: [424, 424],
    kcmp: [312, 272],
    process_madvise: [440, 440],
    process_mrelease: [448, 448],
    tkill: [200, 130],
    migrate_pages: [256, 238],
    move_pages: [279, 239],
    get_robust_list: [274, 100],
    setpgid: [109, 154],
    setsid: [112, 157],
  },
  // Mounts and namespaces.
  namespaces: {
    mount: [165, 40],
    umount2: [166, 39],
    unshare: [272, 97],
    setns: [308, 268],
    pivot_root: [155, 41],
    chroot: [161, 51],
    open_tree: [428, 428],
    move_mount: [429, 429],
    fsopen: [430, 430],
    fsconfig: [431, 431],
    fsmount: [432, 432],
    fspick: [433, 433],
    mount_setattr: [442, 442],
    statmount: [457, 457],
    listmount: [458, 458],
    open_tree_attr: [467, 467],
  },
  // Kernel attack surface with no use in a Worker. io_uring can open sockets and
  // files without the syscalls this filter inspects, so it goes entirely.
  kernelSurface: {
    bpf: [321, 280],
    perf_event_open: [298, 241],
    userfaultfd: [323, 282],
    keyctl: [250, 219],
    add_key: [248, 217],
    request_key: [249, 218],
    memfd_create: [319, 279],
    memfd_secret: [447, 447],
    io_uring_setup: [425, 425],
    io_uring_enter: [426, 426],
    io_uring_register: [427, 427],
    personality: [135, 92],
    name_to_handle_at: [303, 264],
    open_by_handle_at: [304, 265],
    lookup_dcookie: [212, 18],
    fanotify_init: [300, 262],
    modify_ldt: [154, -1],
    uselib: [134, -1],
    ustat: [136, -1],
    sysfs: [139, -1],
    lsm_set_self_attr: [460, 460],
    // Watches on paths Landlock does not cover would leak activity outside the roots.
    inotify_add_watch: [254, 27],
    fanotify_mark: [301, 263],
  },
  // Persistent IPC (System V and POSIX message queues outlive the Worker).
  persistentIpc: {
    shmget: [29, 194],
    shmat: [30, 196],
    shmctl: [31, 195],
    shmdt: [67, 197],
    msgget: [68, 186],
    msgsnd: [69, 189],
    msgrcv: [70, 188],
    msgctl: [71, 187],
    semget: [64, 190],
    semop: [65, 193],
    semctl: [66, 191],
    semtimedop: [220, 192],
    mq_open: [240, 180],
    mq_unlink: [241, 181],
    mq_timedsend: [242, 182],
    mq_timedreceive: [243, 183],
    mq_notify: [244, 184],
    mq_getsetattr: [245, 185],
  },
  // Metadata changes.
  metadata: {
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
    setxattr: [188, 5],
    lsetxattr: [189, 6],
    fsetxattr: [190, 7],
    removexattr: [197, 14],
    lremovexattr: [198, 15],
    fremovexattr: [199, 16],
    setxattrat: [463, 463],
    removexattrat: [466, 466],
    file_setattr: [469, 469],
    mknod: [133, -1],
    mknodat: [259, 33],
  },
  // Explicit sync.
  sync: {
    sync: [162, 81],
    syncfs: [306, 267],
    fsync: [74, 82],
    fdatasync: [75, 83],
    sync_file_range: [277, 84],
  },
  // Privileged host control: already EPERM without capabilities [SB-7]; denied
  // here too so a capability mistake is not the only barrier.
  privileged: {
    sethostname: [170, 161],
    setdomainname: [171, 162],
    reboot: [169, 142],
    init_module: [175, 105],
    finit_module: [313, 273],
    delete_module: [176, 106],
    kexec_load: [246, 104],
    kexec_file_load: [320, 294],
    swapon: [167, 224],
    swapoff: [168, 225],
    acct: [163, 89],
    settimeofday: [164, 170],
    clock_settime: [227, 112],
    clock_adjtime: [305, 266],
    adjtimex: [159, 171],
    iopl: [172, -1],
    ioperm: [173, -1],
    quotactl: [179, 60],
    quotactl_fd: [443, 443],
    vhangup: [153, 58],
    syslog: [103, 116],
  },
};

/** Syscalls whose arguments the filter inspects. */
export const ARG_CHECKED: Record<string, Pair> = {
  mmap: [9, 222],
  clone: [56, 220],
  clone3: [435, 435],
  prctl: [157, 167],
  prlimit64: [302, 261],
  kill: [62, 129],
  tgkill: [234, 131],
  rt_sigqueueinfo: [129, 138],
  rt_tgsigqueueinfo: [297, 240],
  setpriority: [141, 140],
  ioprio_set: [251, 30],
  sched_setparam: [142, 118],
  sched_setscheduler: [144, 119],
  sched_setaffinity: [203, 122],
  sched_setattr: [314, 274],
};

export function nr(pair: Pair, arch: Arch): number {
  return pair[arch === "x86_64" ? 0 : 1];
}
