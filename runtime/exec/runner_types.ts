/**
 * The runner's module interface [EX-1, EX-2, EX-4, TL-7]: what the exec tools
 * (exec/command, exec/run) call to run one program in the runner sandbox.
 * `runner.ts` implements it; this file holds only the types so callers can be
 * written against them.
 *
 * ── Usage ─────────────────────────────────────────────────────────────────
 *   const r = await runCommand({
 *     argv: ["deno", "test"],          // argv[0]: bare name on RUNNER_PATH, or "deno"
 *     cwd: "pkg",                      // relative to scratchDir ("" = scratch root)
 *     scratchDir: "/abs/scratch",      // read-write for the command (owned by the caller)
 *     tmpDir: "/abs/tmp",              // private TMPDIR, read-write (owned by the caller)
 *     timeoutS: 60,                    // 1..120 [EX-2]
 *     runKey: "<agent>/<run>",         // ≤ 1 command per key at a time
 *     signal,                          // AbortSignal: cancel = kill everything
 *     onOutput: (d) => …,              // live, coalesced ≥ 100 ms, ≤ 256 KiB in total
 *   });
 *   r.outcome === "exited" | "signaled" | "timeout" | "cancelled" | "output_limit"
 *             | "outcome_unknown";
 *
 * What the runner guarantees when `runCommand` resolves: no process of the
 * command is alive (PID namespace or the Landlock-scoped sweep), both pipes
 * are closed, and `outcome_unknown` is returned when that release could not
 * be proven. The scratch and tmp directories are the CALLER's: the runner
 * never creates or deletes them; it only needs them to exist and to stay in
 * place until `runCommand` resolves. As root it hands them to the sandbox
 * uid before each command (`handOverToSandbox`: every entry not owned yet is
 * lchown'd), so files the command wrote are owned by that uid afterwards.
 * The command sees them as /tmp/scratch (HOME, and DENO_DIR=/tmp/scratch/.deno
 * — a `.deno` cache may appear in the scratch) and /tmp/tmp (TMPDIR) when
 * the server is root; as the real paths otherwise.
 * Refusals (nothing ran) throw AppError: `tool_invalid_arguments` (argv/cwd
 * bounds, NUL, a cwd that escapes), `exec_unknown_program`, `exec_busy` (the
 * Run already has a command, or the server's 2 slots stayed full for 30 s),
 * `sandbox_unavailable` (the runner could not be confined or verified).
 */

/** How a command ended. */
export type CommandOutcome =
  /** The program exited on its own (exit_code set). */
  | "exited"
  /** The program was killed by a signal it did not get from the runner (signal set). */
  | "signaled"
  /** The wall timeout elapsed; everything was killed. */
  | "timeout"
  /** The caller aborted; everything was killed. */
  | "cancelled"
  /** The release of every process could not be proven (e.g. the runner vanished). */
  | "outcome_unknown";

/** One live output chunk (already ANSI-stripped and valid UTF-8). */
export interface OutputDelta {
  stream: "stdout" | "stderr";
  text: string;
}

export interface RunCommandOptions {
  /** 1..64 items, each ≤ 4 KiB, total ≤ 16 KiB, no NUL [EX-2]. */
  argv: readonly string[];
  /** Workspace-relative directory inside the scratch ("" or "." = its root). */
  cwd: string;
  /** Absolute path of the scratch copy (read-write for the command, HOME). */
  scratchDir: string;
  /** Absolute path of the private tmp (read-write, TMPDIR). */
  tmpDir: string;
  /** Wall timeout in seconds, 1..120. */
  timeoutS: number;
  /** Concurrency key: at most one command per key (one per Run) [EX-2]. */
  runKey: string;
  /** Aborting kills the command; the result's outcome is "cancelled". */
  signal?: AbortSignal;
  /** Live output (coalesced ≥ 100 ms, ≤ RUNNER_LIVE_OUTPUT_MAX_BYTES in total). */
  onOutput?: (delta: OutputDelta) => void;
  /**
   * A background Task [EX-6]: timeout up to TASK_WALL_MAX_MS, its own server-wide pool
   * (≤ TASKS_ACTIVE_SERVER_MAX, never waits: `tasks_busy`), live output without a budget
   * (the Task spools it and keeps the tail). @default false
   */
  background?: boolean;
}

/** Bounded stream text: the first and last RUNNER_STREAM_HALF_BYTES of it. */
export interface BoundedText {
  text: string;
  /** Bytes the program wrote to this stream in total. */
  total_bytes: number;
  /** True when the middle was cut out (then text holds a marker line there). */
  truncated: boolean;
}

export interface CommandResult {
  outcome: CommandOutcome;
  /** Exit code when outcome is "exited", else null. */
  exit_code: number | null;
  /** Signal name (e.g. "SIGKILL", "SIGXFSZ") when the program died by one, else null. */
  signal: string | null;
  /** From release to the program's end, in milliseconds. */
  duration_ms: number;
  stdout: BoundedText;
  stderr: BoundedText;
  /** Whether the command ran in its own PID namespace (else the sweep was used). */
  pid_namespace: boolean;
}

/** `exec/run` profiles [TL-7, EX-1]. */
export type ExecRunRequest =
  | { profile: "bounded-bash"; command: string }
  | { profile: "runtime-compile"; path: string };
