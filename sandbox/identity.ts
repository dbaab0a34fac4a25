/**
 * The unprivileged identity a sandboxed process takes when the server runs as
 * root [SB-7, EX-1]: a Worker or runner started by root switches to this
 * uid/gid (default `nobody`) before its stage-2 execve, so `RLIMIT_NPROC`
 * binds (the kernel exempts uid 0 and CAP_SYS_RESOURCE/CAP_SYS_ADMIN holders).
 *
 * What this file enforces: the name resolves through `/etc/passwd` (or is a
 * numeric `uid[:gid]`), and uid 0 / gid 0 are refused — switching "to root"
 * is no switch. Pure parsing is split from the file read so it is testable.
 */

export interface SandboxIdentity {
  uid: number;
  gid: number;
}

/** The default account a root server runs its sandboxes as. */
export const DEFAULT_SANDBOX_USER = "nobody";

const MAX_ID = 0xfffffffe; // (uid_t)-1 means "unchanged" to setresuid

function validId(n: number): boolean {
  return Number.isInteger(n) && n > 0 && n <= MAX_ID;
}

/** Resolves `name` (an account name or `uid[:gid]`) against the text of /etc/passwd. */
export function parseSandboxIdentity(name: string, passwd: string): SandboxIdentity | null {
  const numeric = /^([0-9]{1,10})(?::([0-9]{1,10}))?$/.exec(name);
  if (numeric) {
    const uid = Number(numeric[1]);
    const gid = Number(numeric[2] ?? numeric[1]);
    return validId(uid) && validId(gid) ? { uid, gid } : null;
  }
  if (!/^[a-z_][a-z0-9_.-]{0,31}$/i.test(name)) return null;
  for (const line of passwd.split("\n")) {
    const f = line.split(":");
    if (f.length < 4 || f[0] !== name) continue;
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    return validId(uid) && validId(gid) ? { uid, gid } : null;
  }
  return null;
}

let configured = DEFAULT_SANDBOX_USER;

/**
 * Sets the account sandboxes switch to (`serve --runner-user`, default
 * `nobody`) for this process. Returns false when this process is root and
 * the name does not resolve to an unprivileged uid/gid (the caller refuses
 * to start); an unprivileged server switches to no other account.
 */
export function configureSandboxUser(name: string): boolean {
  if (Deno.uid() === 0 && resolveSandboxIdentity(name) === null) return false;
  configured = name;
  return true;
}

/** The configured sandbox account name. */
export function sandboxUser(): string {
  return configured;
}

/** Resolves `name` against this host's /etc/passwd; null when unknown or privileged. */
export function resolveSandboxIdentity(name: string = configured): SandboxIdentity | null {
  let passwd = "";
  try {
    passwd = Deno.readTextFileSync("/etc/passwd");
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound) && !(err instanceof Deno.errors.PermissionDenied)) {
      throw err;
    }
  }
  return parseSandboxIdentity(name, passwd);
}
