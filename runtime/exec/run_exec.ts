/**
 * One Run's execution state [EX-2..5]: its scratch copy, its latest change
 * set, and the two approval-gated tools that use them — exec/command runs a
 * program on the scratch (through the runner) and returns exit code,
 * output and the change set; exec/apply commits the latest change set (or
 * named paths of it) to the workspace.
 *
 * What this file enforces:
 * - the scratch is made at the Run's first command and synced before each
 *   later one (scratch.ts); the working directory must be a directory of
 *   the scratch (`exec_cwd_invalid`); nothing runs when a sync fails;
 * - live output goes out as ephemeral `tool.output.delta` events (the
 *   runner coalesces them ≥ 100 ms and stops at 256 KiB); a full live
 *   record stops them, never the command;
 * - the canonical result the model sees fits one [TL-3] projection (≤ 4096
 *   bytes): the stdout/stderr tails cut at a fixed rule with a marker, and
 *   the change-set summary; the whole record (output ≤ 64 KiB per stream,
 *   every path, every diff) is stored for the operator (exec_store.ts);
 * - exec/apply's approval binds the change set's digest and the chosen
 *   paths; the commit refuses a change set that moved on (`approval_stale`)
 *   and applies path by path (apply.ts), recording each outcome;
 * - `dispose()` (the Run's terminal) deletes the scratch and its tmp.
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError, type ErrorCode } from "../errors.ts";
import {
  CHANGE_SET_SUMMARY_PATHS_MAX,
  CHECKPOINT_AGENT_MAX_BYTES,
  EXEC_APPLY_TIMEOUT_MS,
  EXEC_RECORD_MAX_BYTES,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { domainDigest } from "../tools/text.ts";
import { identityOf, lstatIn, openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { closeFd } from "../../sandbox/libc.ts";
import { selfIsRoot } from "../../sandbox/attestation.ts";
import { resolveSandboxIdentity } from "../../sandbox/identity.ts";
import { insertExecRecord } from "../store/exec_store.ts";
import { recordCheckpoints } from "../store/checkpoint_store.ts";
import { checkpointOf } from "../checkpoints/record.ts";
import { canonicalPath } from "../tools/path.ts";
import { applyEntry, type ApplyOutcome } from "./apply.ts";
import { type ChangeEntry, type ChangeSet, computeChangeSet } from "./change_set.ts";
import type { CommandRequest } from "./command_args.ts";
import type { BoundedText, CommandResult, OutputDelta, RunCommandOptions } from "./runner_types.ts";
import type { ExecRunResult } from "./exec_run.ts";
import { ScratchCopy } from "./scratch.ts";
import { openDirIn, type ScratchOwner } from "./scratch_fs.ts";

/** What the Control Plane asks of the runner (runner.ts, exec_run.ts) [EX-1]. */
export interface RunnerPort {
  runCommand(o: RunCommandOptions): Promise<CommandResult>;
  runBoundedBash(o: { command: string; runKey: string; signal?: AbortSignal }): Promise<
    ExecRunResult
  >;
  runRuntimeCompile(
    o: { workspaceDir: string; path: string; runKey: string; signal?: AbortSignal },
  ): Promise<ExecRunResult>;
}

export interface RunExecOptions {
  agentId: string;
  runId: string;
  workspaceDir: string;
  /** Absolute directory for this Run's scratch and tmp (created here, deleted by dispose). */
  rootDir: string;
  db: DatabaseSync;
  runner: RunnerPort;
  /**
   * Owner of what the scratch holds. @default the runner's sandbox uid when the server is
   * root, else null (the server's own). Created that way, the runner's hand-over finds
   * nothing to chown, so no ctime moves and an untouched copy is never read back.
   */
  owner?: ScratchOwner | null;
  /** @default Date.now */
  now?: () => number;
  /** Kept checkpoint bytes per Agent [TL-11]. @default CHECKPOINT_AGENT_MAX_BYTES */
  checkpointMaxBytes?: number;
  /**
   * Whether records go to `exec_records` under `runId` (a Run's). A background Task's
   * RunExec keeps none there: its Task row holds the result and the change-set summary
   * [EX-6]. @default true
   */
  record?: boolean;
  /** Extra runner options (a Task's: background). */
  background?: boolean;
}

export type ExecResult = { ok: true; text: string } | { ok: false; code: ErrorCode };

/** What an exec/apply approval shows and binds. */
export interface ApplyPlan {
  change_set_digest: string;
  command_call_id: string;
  entries: ChangeEntry[];
  /** Named paths that are not in the change set: refused without an attempt. */
  unknown: string[];
  digest: string;
}

export class RunExec {
  readonly #o: RunExecOptions;
  #scratch: ScratchCopy | null = null;
  #latest: { callId: string; set: ChangeSet } | null = null;
  #seq = 0;
  #lastCommand: CommandResult | null = null;

  constructor(o: RunExecOptions) {
    this.#o = o;
  }

  get scratchDir(): string {
    return `${this.#o.rootDir}/work`;
  }

  get tmpDir(): string {
    return `${this.#o.rootDir}/tmp`;
  }

  /** Runs one approved command on the scratch copy. */
  async command(
    req: CommandRequest,
    callId: string,
    signal: AbortSignal,
    emit: (d: OutputDelta) => void,
  ): Promise<ExecResult> {
    if (this.#scratch === null) {
      Deno.mkdirSync(this.#o.rootDir, { recursive: true, mode: 0o700 });
      Deno.mkdirSync(this.tmpDir, { mode: 0o700 });
      this.#scratch = new ScratchCopy({
        workspaceDir: this.#o.workspaceDir,
        scratchDir: this.scratchDir,
        owner: this.#o.owner !== undefined ? this.#o.owner : defaultOwner(),
      });
    }
    const scratch = this.#scratch;
    const sync = scratch.sync();
    if (!sync.ok) return sync;
    if (!this.#isScratchDir(req.cwd)) return { ok: false, code: "exec_cwd_invalid" };
    let r: CommandResult;
    try {
      r = await this.#o.runner.runCommand({
        argv: req.argv,
        cwd: req.cwd.join("/"),
        scratchDir: this.scratchDir,
        tmpDir: this.tmpDir,
        timeoutS: req.timeoutS,
        runKey: `${this.#o.agentId}/${this.#o.runId}`,
        signal,
        onOutput: emit,
        ...(this.#o.background ? { background: true } : {}),
      });
    } catch (err) {
      if (err instanceof AppError) return { ok: false, code: err.code };
      throw err;
    }
    this.#lastCommand = r;
    const ws = openWorkspaceRoot(this.#o.workspaceDir);
    if (!ws.ok) return ws;
    let set: ChangeSet;
    try {
      const c = computeChangeSet(scratch, ws.root.fd);
      if (!c.ok) return c;
      set = c.set;
    } finally {
      ws.root.close();
    }
    this.#latest = { callId, set };
    const record = {
      argv: req.argv,
      cwd: req.cwdPath,
      timeout_s: req.timeoutS,
      outcome: r.outcome,
      exit_code: r.exit_code,
      signal: r.signal,
      duration_ms: r.duration_ms,
      stdout: r.stdout,
      stderr: r.stderr,
      pid_namespace: r.pid_namespace,
      sync: {
        first: sync.first,
        entries: sync.entries,
        bytes: sync.bytes,
        copied: sync.copied,
        removed: sync.removed,
        notes: sync.notes,
        notes_total: sync.notes_total,
        elapsed_ms: sync.elapsed_ms,
      },
      change_set: changeSetSummary(set),
    };
    if (this.#o.record !== false) {
      insertExecRecord(this.#o.db, {
        runId: this.#o.runId,
        callId,
        seq: ++this.#seq,
        kind: "command",
        body: recordBody(record),
        diffs: set.diffs,
        now: (this.#o.now ?? Date.now)(),
      });
    }
    return { ok: true, text: modelResult(r, set) };
  }

  /** exec/run [TL-7, EX-1]: a bounded-bash builtin or a runtime-compile check, own scratch. */
  async execRun(
    req: { profile: "bounded-bash"; command: string } | {
      profile: "runtime-compile";
      path: string;
    },
    signal: AbortSignal,
  ): Promise<ExecResult> {
    const runKey = `${this.#o.agentId}/${this.#o.runId}`;
    let r: ExecRunResult;
    try {
      r = req.profile === "bounded-bash"
        ? await this.#o.runner.runBoundedBash({ command: req.command, runKey, signal })
        : await this.#o.runner.runRuntimeCompile({
          workspaceDir: this.#o.workspaceDir,
          path: req.path,
          runKey,
          signal,
        });
    } catch (err) {
      if (err instanceof AppError) return { ok: false, code: err.code };
      throw err;
    }
    return { ok: true, text: execRunResult(r) };
  }

  /** Plans exec/apply: the entries to commit and the approval preview. */
  prepareApply(paths: readonly string[] | undefined): { ok: true; plan: ApplyPlan } | {
    ok: false;
    code: ErrorCode;
  } {
    const latest = this.#latest;
    if (latest === null || latest.set.entries.length === 0) {
      return { ok: false, code: "change_set_not_found" };
    }
    const set = latest.set;
    let entries: ChangeEntry[];
    const unknown: string[] = [];
    if (paths === undefined) {
      if (set.truncated) return { ok: false, code: "change_set_too_large" };
      entries = [...set.entries];
    } else {
      const byPath = new Map(set.entries.map((e) => [e.path, e]));
      const chosen = new Set<string>();
      for (const p of paths) {
        if (!canonicalPath(p).ok) return { ok: false, code: "path_invalid" };
        if (byPath.has(p)) chosen.add(p);
        else if (!unknown.includes(p)) unknown.push(p);
      }
      entries = set.entries.filter((e) => chosen.has(e.path));
      if (entries.length === 0) return { ok: false, code: "change_set_not_found" };
    }
    const digest = domainDigest(
      "agent-builder/exec-apply/v1",
      canonicalJson([set.digest, latest.callId, entries.map((e) => e.path), unknown]),
    );
    return {
      ok: true,
      plan: {
        change_set_digest: set.digest,
        command_call_id: latest.callId,
        entries,
        unknown,
        digest,
      },
    };
  }

  /** The latest command's runner result (a Task's outcome) [EX-6]. */
  get lastCommand(): CommandResult | null {
    return this.#lastCommand;
  }

  /** The latest change set's summary (no diff text), or null before any command. */
  latestSummary(): ReturnType<typeof changeSetSummary> | null {
    return this.#latest === null ? null : changeSetSummary(this.#latest.set);
  }

  /** The full diff of a planned path (for the approval preview). */
  diffOf(path: string): string | null {
    return this.#latest?.set.diffs.get(path) ?? null;
  }

  /** Commits an approved plan path by path. */
  commitApply(plan: ApplyPlan, callId: string): ExecResult {
    const latest = this.#latest;
    const scratch = this.#scratch;
    if (
      latest === null || scratch === null || latest.set.digest !== plan.change_set_digest ||
      latest.callId !== plan.command_call_id
    ) return { ok: false, code: "approval_stale" };
    const ws = openWorkspaceRoot(this.#o.workspaceDir);
    if (!ws.ok) return ws;
    const sc = scratch.openRoot();
    const outcomes: ApplyOutcome[] = [];
    try {
      if (sc < 0) return { ok: false, code: "approval_stale" };
      const deadline = performance.now() + EXEC_APPLY_TIMEOUT_MS;
      for (const e of plan.entries) {
        const o = applyEntry(ws.root, sc, e, { deadline });
        outcomes.push(o);
        if (o.ok) this.#rebase(sc, e, o);
      }
    } finally {
      if (sc >= 0) closeFd(sc);
      ws.root.close();
    }
    // [TL-11] what each applied path replaced, recorded in one transaction.
    recordCheckpoints(this.#o.db, {
      runId: this.#o.runId,
      callId,
      toolId: "exec/apply",
      entries: outcomes.flatMap((o) => {
        if (!o.ok) return [];
        const e = plan.entries.find((x) => x.path === o.path)!;
        const after = o.identity === null || e.new_digest === null
          ? null
          : { digest: e.new_digest, identity: o.identity };
        return [checkpointOf(o.path, o.before, after)];
      }),
      maxBytes: this.#o.checkpointMaxBytes ?? CHECKPOINT_AGENT_MAX_BYTES,
      now: (this.#o.now ?? Date.now)(),
    });
    for (const p of plan.unknown) {
      outcomes.push({ ok: false, code: "change_set_not_found", path: p });
    }
    const results = outcomes.map((o) => ({
      path: o.path,
      kind: o.ok ? o.kind : null,
      outcome: o.ok ? "applied" : o.code,
    }));
    if (this.#o.record !== false) {
      insertExecRecord(this.#o.db, {
        runId: this.#o.runId,
        callId,
        seq: ++this.#seq,
        kind: "apply",
        body: canonicalJson({
          command_call_id: plan.command_call_id,
          change_set_digest: plan.change_set_digest,
          results,
        }),
        diffs: new Map(),
        now: (this.#o.now ?? Date.now)(),
      });
    }
    const applied = results.filter((r) => r.outcome === "applied").length;
    return { ok: true, text: fitList(applied, results) };
  }

  /** An applied path is part of the base now: the next change set no longer lists it. */
  #rebase(scRoot: number, e: ChangeEntry, o: Extract<ApplyOutcome, { ok: true }>): void {
    const base = this.#scratch!.base;
    const st = o.identity === null ? null : scratchIdentity(scRoot, e.path);
    if (o.identity === null || st === null) base.files.delete(e.path);
    else base.files.set(e.path, { ws: o.identity, scratch: st });
  }

  #isScratchDir(components: readonly string[]): boolean {
    const root = this.#scratch?.openRoot() ?? -1;
    if (root < 0) return false;
    let cur = root;
    try {
      for (const c of components) {
        const next = openDirIn(cur, c);
        closeFd(cur);
        cur = next;
        if (cur < 0) return false;
      }
      return true;
    } finally {
      if (cur >= 0) closeFd(cur);
    }
  }

  /** Deletes the scratch copy and its tmp (the Run's terminal). */
  /**
   * Synchronous on purpose: it runs right after the terminal event was recorded and before
   * anything else of the server runs, so whoever sees the terminal sees no scratch copy.
   */
  dispose(): void {
    this.#scratch?.removeSync();
    this.#scratch = null;
    this.#latest = null;
    try {
      Deno.removeSync(this.#o.rootDir, { recursive: true });
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
  }
}

function defaultOwner(): ScratchOwner | null {
  return selfIsRoot() ? resolveSandboxIdentity() : null;
}

function scratchIdentity(root: number, path: string) {
  const parts = path.split("/");
  let cur = -1;
  let at = root;
  try {
    for (const p of parts.slice(0, -1)) {
      const next = openDirIn(at, p);
      if (cur >= 0) closeFd(cur);
      cur = next;
      if (cur < 0) return null;
      at = cur;
    }
    return lstatIdentity(at, parts[parts.length - 1]);
  } finally {
    if (cur >= 0) closeFd(cur);
  }
}

function lstatIdentity(dirfd: number, name: string) {
  const s = lstatIn(dirfd, name);
  return s.ok ? identityOf(s.st) : null;
}

/**
 * The stored record as JSON within EXEC_RECORD_MAX_BYTES. The runner keeps ≤ 64 KiB per
 * stream, but JSON escaping can grow control-heavy output up to six times; then the kept
 * output is cut to its tail (fixed marker) until the record fits, never the other fields.
 */
export function recordBody(
  record: { stdout: BoundedText; stderr: BoundedText } & Record<string, unknown>,
): string {
  let body = canonicalJson(record);
  let max = 64 * 1024;
  while (utf8Bytes(body) > EXEC_RECORD_MAX_BYTES && max > 0) {
    max = Math.floor(max / 2);
    body = canonicalJson({
      ...record,
      stdout: { ...record.stdout, text: tailOf(record.stdout.text, max), truncated: true },
      stderr: { ...record.stderr, text: tailOf(record.stderr.text, max), truncated: true },
    });
  }
  return body;
}

/** The change set as the operator's record and the routes carry it (no diff text). */
export function changeSetSummary(set: ChangeSet) {
  return {
    digest: set.digest,
    total: set.total,
    truncated: set.truncated,
    counts: set.counts,
    left_out: set.left_out,
    entries: set.entries.map((e) => ({
      path: e.path,
      kind: e.kind,
      old_size: e.old_size,
      new_size: e.new_size,
      binary: e.binary,
      old_digest: e.old_digest,
      new_digest: e.new_digest,
      diff_bytes: e.diff_bytes,
      note: e.note,
    })),
  };
}

const OMITTED = (n: number) => `[… ${n} earlier bytes omitted …]\n`;

/** The last `max` UTF-8 bytes of `s` (at a code point boundary), with a marker when cut. */
export function tailOf(s: string, max: number): string {
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= max) return s;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start] & 0xc0) === 0x80) start++;
  return OMITTED(start) + new TextDecoder().decode(bytes.subarray(start));
}

/**
 * The model's view of a command [EX-4, TL-3]: outcome, exit code or signal, duration,
 * the tails of stdout and stderr and the change-set summary, in ≤ 4096 bytes. The
 * tails are cut by a fixed rule (the last bytes that fit, with a marker naming how
 * many earlier bytes were left out), never by content.
 */
export function modelResult(r: CommandResult, set: ChangeSet): string {
  const changes = {
    added: set.counts.added,
    modified: set.counts.modified,
    deleted: set.counts.deleted,
    total: set.total,
    truncated: set.truncated,
    paths: set.entries.slice(0, CHANGE_SET_SUMMARY_PATHS_MAX).map((e) =>
      `${e.kind[0].toUpperCase()} ${e.path}`
    ),
    apply_with: set.total > 0 ? "exec/apply" : null,
  };
  const shape = (stdout: string, stderr: string) =>
    canonicalJson({
      outcome: r.outcome,
      exit_code: r.exit_code,
      signal: r.signal,
      duration_ms: r.duration_ms,
      stdout_bytes: r.stdout.total_bytes,
      stderr_bytes: r.stderr.total_bytes,
      stdout,
      stderr,
      changes,
    });
  let room = TOOL_RESULT_PROJECTION_MAX_BYTES - utf8Bytes(shape("", ""));
  if (room < 0) {
    changes.paths = changes.paths.slice(0, 4);
    room = TOOL_RESULT_PROJECTION_MAX_BYTES - utf8Bytes(shape("", ""));
  }
  const out = r.stdout.text;
  const err = r.stderr.text;
  // Half each; what one stream does not need goes to the other. JSON escaping can
  // only grow a text, so shrink until the whole result fits.
  let outMax = Math.max(0, Math.floor(room / 2));
  let errMax = Math.max(0, room - outMax);
  if (utf8Bytes(out) < outMax) {
    errMax += outMax - utf8Bytes(out);
    outMax = utf8Bytes(out);
  } else if (utf8Bytes(err) < errMax) {
    outMax += errMax - utf8Bytes(err);
    errMax = utf8Bytes(err);
  }
  for (;;) {
    const text = shape(tailOf(out, outMax), tailOf(err, errMax));
    const over = utf8Bytes(text) - TOOL_RESULT_PROJECTION_MAX_BYTES;
    if (over <= 0 || (outMax === 0 && errMax === 0)) return text;
    const cut = over + 64;
    if (outMax >= errMax) outMax = Math.max(0, outMax - cut);
    else errMax = Math.max(0, errMax - cut);
  }
}

/**
 * The model's view of exec/run: the output's HEAD (a compiler's first diagnostics
 * matter most) cut to fit one projection with a fixed marker.
 */
export function execRunResult(r: ExecRunResult): string {
  const shape = (output: string, cut: boolean) =>
    canonicalJson({
      profile: r.profile,
      outcome: r.outcome,
      exit_code: r.exit_code,
      duration_ms: r.duration_ms,
      output,
      output_truncated: r.truncated || cut,
    });
  let max = TOOL_RESULT_PROJECTION_MAX_BYTES - utf8Bytes(shape("", true));
  for (;;) {
    const head = headOf(r.output, max);
    const text = shape(head, head !== r.output);
    const over = utf8Bytes(text) - TOOL_RESULT_PROJECTION_MAX_BYTES;
    if (over <= 0 || max <= 0) return text;
    max = Math.max(0, max - over - 64);
  }
}

/** The first `max` UTF-8 bytes of `s` (at a code point boundary), with a marker when cut. */
export function headOf(s: string, max: number): string {
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= max) return s;
  let end = Math.max(0, max - 48);
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.subarray(0, end)) +
    `\n[… ${bytes.length - end} more bytes omitted …]`;
}

function fitList(
  applied: number,
  results: { path: string; kind: string | null; outcome: string }[],
): string {
  let n = results.length;
  for (;;) {
    const text = canonicalJson({
      applied,
      refused: results.length - applied,
      results: results.slice(0, n),
      results_omitted: results.length - n,
    });
    if (utf8Bytes(text) <= TOOL_RESULT_PROJECTION_MAX_BYTES || n === 0) return text;
    n = Math.max(0, n - Math.max(1, Math.ceil(n / 4)));
  }
}
