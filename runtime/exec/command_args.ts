/**
 * `exec/command` argument rules [EX-2], checked before anything runs.
 *
 * What this file enforces: argv has 1..64 items, each ≤ 4 KiB and ≤ 16 KiB
 * together (UTF-8 bytes), none containing NUL (`exec_argv_invalid`); argv[0]
 * is a bare name (no `/`, not `.`/`..`) that is an executable regular file in
 * one of `/usr/local/bin:/usr/bin:/bin`, or `deno` (the product's own
 * runtime) — anything else is `exec_unknown_program`; `cwd` is a canonical
 * workspace-relative directory path (`exec_cwd_invalid`; its existence is
 * checked on the scratch copy); `timeout_s` is 1..120, default 60. The
 * catalog already checked the JSON shape; these are the finer rules with
 * their own fixed codes. Pure except for the program lookup's stat calls.
 */
import type { ErrorCode } from "../errors.ts";
import {
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMMAND_ARGV_MAX_TOTAL_BYTES,
  COMMAND_TIMEOUT_DEFAULT_S,
  COMMAND_TIMEOUT_MAX_S,
  COMMAND_TIMEOUT_MIN_S,
  TASK_WALL_MAX_MS,
} from "../limits.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import { canonicalDirPath } from "../tools/path.ts";

/** The fixed program search path [EX-2]; the command's own PATH is this too. */
export const EXEC_PATH_DIRS = ["/usr/local/bin", "/usr/bin", "/bin"] as const;

export interface CommandRequest {
  argv: string[];
  /** Absolute path of the program argv[0] names. */
  program: string;
  /** Canonical workspace-relative components of the working directory ([] = root). */
  cwd: string[];
  /** The canonical cwd string ("." for the root), as shown to the operator. */
  cwdPath: string;
  timeoutS: number;
  /** `background: true`: the command becomes a Task of the Agent [EX-6]. */
  background: boolean;
}

export type CommandCheck = { ok: true; request: CommandRequest } | { ok: false; code: ErrorCode };

/** Checks argv's count, sizes and NUL rule. */
export function checkArgv(argv: unknown): ErrorCode | null {
  if (!Array.isArray(argv) || argv.length < 1 || argv.length > COMMAND_ARGV_MAX_ITEMS) {
    return "exec_argv_invalid";
  }
  let total = 0;
  for (const a of argv) {
    if (typeof a !== "string" || !a.isWellFormed() || a.includes("\u0000")) {
      return "exec_argv_invalid";
    }
    const n = utf8Bytes(a);
    if (n > COMMAND_ARG_MAX_ITEM_BYTES) return "exec_argv_invalid";
    total += n;
  }
  if (total > COMMAND_ARGV_MAX_TOTAL_BYTES) return "exec_argv_invalid";
  return null;
}

/** A name argv[0] may carry: one path component, nothing relative or absolute. */
export function isBareProgramName(name: string): boolean {
  if (name.length === 0 || name.length > 255 || name.includes("/")) return false;
  if (name === "." || name === "..") return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

export interface ProgramLookup {
  /** @default EXEC_PATH_DIRS */
  dirs?: readonly string[];
  /** The product's runtime, what `deno` resolves to. @default Deno.execPath() */
  denoPath?: string;
}

/** Resolves argv[0] on the fixed search path; null when it is not allowed or not there. */
export function resolveProgram(name: string, opts: ProgramLookup = {}): string | null {
  if (!isBareProgramName(name)) return null;
  for (const dir of opts.dirs ?? EXEC_PATH_DIRS) {
    const p = `${dir}/${name}`;
    try {
      // Following links is right here: /bin and /usr/bin entries are often links to the
      // real binary, and these directories are root-owned system paths, not model input.
      const st = Deno.statSync(p);
      if (st.isFile && st.mode !== null && (st.mode & 0o111) !== 0) return p;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound) && !(err instanceof Deno.errors.NotADirectory)) {
        if (!(err instanceof Deno.errors.PermissionDenied)) throw err;
      }
    }
  }
  if (name === "deno") return opts.denoPath ?? Deno.execPath();
  return null;
}

/** Checks a validated exec/command argument object (catalog shape already checked). */
export function checkCommandArgs(
  args: Record<string, unknown>,
  lookup: ProgramLookup = {},
): CommandCheck {
  const bad = checkArgv(args.argv);
  if (bad !== null) return { ok: false, code: bad };
  const argv = [...args.argv as string[]];
  const bg = args.background ?? false;
  if (typeof bg !== "boolean") return { ok: false, code: "tool_invalid_arguments" };
  // A background Task's wall is ≤ 30 min (default all of it); a command's ≤ 120 s [EX-6].
  const maxS = bg ? TASK_WALL_MAX_MS / 1000 : COMMAND_TIMEOUT_MAX_S;
  const t = args.timeout_s ?? (bg ? maxS : COMMAND_TIMEOUT_DEFAULT_S);
  if (
    typeof t !== "number" || !Number.isInteger(t) || t < COMMAND_TIMEOUT_MIN_S || t > maxS
  ) return { ok: false, code: "tool_invalid_arguments" };
  const cwd = canonicalDirPath(args.cwd);
  if (!cwd.ok) return { ok: false, code: "exec_cwd_invalid" };
  const program = resolveProgram(argv[0], lookup);
  if (program === null) return { ok: false, code: "exec_unknown_program" };
  return {
    ok: true,
    request: {
      argv,
      program,
      cwd: cwd.components,
      cwdPath: cwd.path,
      timeoutS: t,
      background: bg,
    },
  };
}
