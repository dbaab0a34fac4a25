/**
 * Host capability probe for `doctor` [PK-1, PK-5]: Landlock ABI, seccomp
 * filter mode support, /proc, architecture. Pure reporting — it confines
 * nothing. A Run may start only when `sandboxable` is true.
 */
import { LANDLOCK_MIN_ABI } from "../runtime/limits.ts";
import { syscall } from "./libc.ts";
import { readProcText } from "./procfs.ts";

const LANDLOCK_CREATE_RULESET_VERSION = 1;
const PR_GET_SECCOMP = 21;
const PR_GET_NO_NEW_PRIVS = 39;

export interface HostReport {
  arch: string;
  os: string;
  kernel: string;
  landlockAbi: number | null;
  landlockReason?: string;
  seccomp: boolean;
  seccompReason?: string;
  proc: boolean;
  /** True when every capability a Worker needs is present. */
  sandboxable: boolean;
  problems: string[];
}

/** Landlock ABI version (>=1) or null with errno when unsupported/disabled. */
export function landlockAbi(): { abi: number | null; errno: number } {
  const r = syscall("landlock_create_ruleset", null, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return r.ret > 0n ? { abi: Number(r.ret), errno: 0 } : { abi: null, errno: r.errno };
}

export function probeHost(): HostReport {
  const problems: string[] = [];
  const arch = Deno.build.arch;
  const os = Deno.build.os;
  if (os !== "linux") problems.push(`unsupported OS ${os}`);
  if (arch !== "x86_64" && arch !== "aarch64") problems.push(`unsupported arch ${arch}`);
  let kernel = "unknown";
  kernel = readProcText("/proc/sys/kernel/osrelease")?.trim() ?? "unknown";
  const proc = /\nSeccomp:\s+\d/.test(readProcText("/proc/self/status") ?? "");
  if (!proc) problems.push("/proc/self/status lacks Seccomp (no /proc or no seccomp)");

  const ll = landlockAbi();
  let landlockReason: string | undefined;
  if (ll.abi === null) {
    landlockReason = `landlock_create_ruleset failed (errno ${ll.errno})`;
    problems.push(landlockReason);
  } else if (ll.abi < LANDLOCK_MIN_ABI) {
    landlockReason = `Landlock ABI ${ll.abi} < required ${LANDLOCK_MIN_ABI}`;
    problems.push(landlockReason);
  }

  const sc = syscall("prctl", PR_GET_SECCOMP, 0, 0, 0, 0);
  const nnp = syscall("prctl", PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  let seccomp = sc.ret >= 0n && nnp.ret >= 0n;
  let seccompReason: string | undefined;
  if (!seccomp) seccompReason = `prctl(PR_GET_SECCOMP) errno ${sc.errno}`;
  const actions = readProcText("/proc/sys/kernel/seccomp/actions_avail") ?? "";
  if (!/\berrno\b/.test(actions) || !/\bkill_process\b/.test(actions)) {
    seccomp = false;
    seccompReason = "seccomp lacks errno/kill_process actions";
  }
  if (!seccomp) problems.push(seccompReason!);

  return {
    arch,
    os,
    kernel,
    landlockAbi: ll.abi,
    landlockReason,
    seccomp,
    seccompReason,
    proc,
    sandboxable: problems.length === 0,
    problems,
  };
}
