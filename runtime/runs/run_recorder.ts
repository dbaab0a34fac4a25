/**
 * RunRecorder: the one writer of a Run's events — journal rows in the
 * Agent's state.sqlite, the live record for SSE — and of its terminal.
 *
 * What this file enforces:
 * - durable events are appended at semantic boundaries only, each batch in one
 *   transaction (plus the caller's extra writes, e.g. the usage row) [MB-9];
 *   ephemeral deltas go to the live record only [EV-2];
 * - the completed assistant block, the Run terminal event, the Run row, the
 *   Turn terminal, the usage leftovers (→ incomplete) and expired approvals are
 *   written in ONE transaction [CV-5]; a failed or cancelled Turn keeps, in
 *   that same transaction, the visible text of the answer block still open
 *   (≤ PARTIAL_TEXT_MAX_BYTES, cut on a code point) — shown, never history;
 * - if the journal cannot be appended [EV-5], the live stream ends with
 *   `journal_unavailable`, and — if the database still takes a write — the Turn
 *   is failed and the partial events are pruned to a tombstone atomically,
 *   with the Run's pending approvals expired and its unsettled operations
 *   marked `outcome_unknown` in the same transaction;
 * - retention [EV-2]: beyond the newest 256 finished Runs per Agent, each older
 *   journal is validated, reduced to a snapshot and marked `snapshot_only` in
 *   one BEGIN IMMEDIATE transaction.
 */
import type { DatabaseSync } from "node:sqlite";
import { type ErrorCode, errorInfo } from "../errors.ts";
import {
  appendDurable,
  RunJournal,
  snapshotOf,
  type Staged,
  validateJournal,
  writeStaged,
} from "../events/journal.ts";
import type { LiveRecord } from "../events/live_hub.ts";
import { JOURNAL_RUNS_RETAINED, PARTIAL_TEXT_MAX_BYTES } from "../limits.ts";
import type { Logger } from "../log.ts";
import { answerDigest, canonicalJson, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import type { EventKind, Payload } from "../protocol/events.ts";
import { finishTurnInTransaction } from "../store/agent_state_store.ts";
import {
  expirePermissions,
  getRun,
  listEvents,
  pruneToTombstone,
  reduceToSnapshot,
  retentionCandidates,
  runOperationsOutcomeUnknown,
  setRunTerminal,
  usageCloseRun,
} from "../store/run_store.ts";
import { transaction } from "../store/sqlite.ts";
import { errorName } from "../log.ts";
import { clampDurationMs } from "../protocol/events.ts";

/** Thrown when the journal could not be appended; the Run must stop. */
export class JournalUnavailable extends Error {
  constructor(cause: unknown) {
    super("journal unavailable", { cause });
  }
}

export type FailStage = Payload<"run.failed">["stage"];

export type Terminal =
  | {
    state: "completed";
    answer: { block: number; text: string; reason: Payload<"run.completed">["reason"] };
    modelCalls: number;
    toolCalls: number;
    /** Whether the answer block was already opened by a streamed delta. */
    blockOpen: boolean;
  }
  | { state: "failed"; code: ErrorCode; stage: FailStage }
  | { state: "cancelled"; reason: Payload<"run.cancelled">["reason"] };

export interface RecorderOptions {
  db: DatabaseSync;
  journal: RunJournal;
  live: LiveRecord;
  turnId: string;
  log: Logger;
  now: () => number;
  startedAt: number;
  /** Test-only (runtime/runs/test_hooks.ts): fail the first write containing this kind. */
  journalFault?: EventKind | null;
}

/** The injected failure of a test journal fault; raised inside the real transaction. */
export class InjectedJournalFault extends Error {
  constructor() {
    super("injected journal fault");
  }
}

export class RunRecorder {
  #finished = false;
  #broken = false;
  /** Staged and published live, written with the next durable write. */
  #deferred: Staged[] = [];
  /** Writes that must commit with their deferred event (e.g. the usage row) [MB-9]. */
  #deferredExtras: (() => void)[] = [];
  #faultFired = false;
  /** Visible text of the answer block still open (deltas since its start), bounded. */
  #openText = "";
  #openBytes = 0;

  constructor(private readonly o: RecorderOptions) {}

  get finished(): boolean {
    return this.#finished;
  }

  get journal(): RunJournal {
    return this.o.journal;
  }

  /**
   * Appends one durable event (and `extra` writes) atomically, then publishes it.
   * With `defer`, the event is published live now and written — with its
   * `extra` writes — in the NEXT durable write of this Run (same order, one
   * transaction): transport attempts, block openings and the response boundary
   * ride along with the next boundary or the terminal, which cuts the SQLite
   * transactions per Turn without moving any event out of order [OP-3]. A crash
   * loses at most deferred events (recovery then marks the usage row
   * `incomplete`), never a request boundary or a terminal.
   */
  durable<K extends EventKind>(
    kind: K,
    payload: Payload<K>,
    extra?: () => void,
    opts: { defer?: boolean } = {},
  ): void {
    if (this.#finished || this.#broken) throw new JournalUnavailable("recorder closed");
    const staged = this.o.journal.stage(kind, payload, this.#deferred.at(-1));
    if (kind === "assistant.block.started" || kind === "assistant.block.completed") {
      this.#openText = "";
      this.#openBytes = 0;
    }
    if (opts.defer) {
      this.#deferred.push(staged);
      if (extra) this.#deferredExtras.push(extra);
      this.o.live.push(staged.envelope);
      return;
    }
    const batch = [...this.#deferred, staged];
    const alreadyLive = this.#deferred.length;
    const extras = [...this.#takeExtras(), ...(extra ? [extra] : [])];
    this.#deferred = [];
    this.#append(batch, () => extras.forEach((fn) => fn()), alreadyLive);
  }

  #takeExtras(): (() => void)[] {
    const x = this.#deferredExtras;
    this.#deferredExtras = [];
    return x;
  }

  /** Publishes an ephemeral event to the live stream only. */
  ephemeral<K extends EventKind>(kind: K, payload: Payload<K>): void {
    if (this.#finished || this.#broken) return;
    this.o.live.push(this.o.journal.ephemeral(kind, payload, this.#deferred.at(-1)));
    if (kind === "assistant.block.delta") this.#keepVisible((payload as { text: string }).text);
  }

  /** Appends delta text to the open block's visible text, up to PARTIAL_TEXT_MAX_BYTES. */
  #keepVisible(text: string): void {
    if (this.#openBytes >= PARTIAL_TEXT_MAX_BYTES) return;
    const bytes = utf8Bytes(text);
    if (this.#openBytes + bytes <= PARTIAL_TEXT_MAX_BYTES) {
      this.#openText += text;
      this.#openBytes += bytes;
      return;
    }
    for (const ch of text) {
      const n = utf8Bytes(ch);
      if (this.#openBytes + n > PARTIAL_TEXT_MAX_BYTES) break;
      this.#openText += ch;
      this.#openBytes += n;
    }
    this.#openBytes = PARTIAL_TEXT_MAX_BYTES; // full: later deltas are not kept
  }

  #append(staged: Staged[], extra: (() => void) | undefined, alreadyLive: number): void {
    try {
      appendDurable(this.o.db, this.o.journal, staged, () => {
        extra?.();
        this.#injectFault(staged);
      });
    } catch (err) {
      this.#journalUnavailable(err);
      throw new JournalUnavailable(err);
    }
    for (const s of staged.slice(alreadyLive)) this.o.live.push(s.envelope);
  }

  /** Test-only: throws inside the caller's transaction once, at the configured kind. */
  #injectFault(staged: readonly Staged[]): void {
    const kind = this.o.journalFault;
    if (!kind || this.#faultFired) return;
    if (!staged.some((s) => s.envelope.kind === kind)) return;
    this.#faultFired = true;
    throw new InjectedJournalFault();
  }

  /** Writes the terminal in one transaction; idempotent. Returns false if already finished. */
  finish(t: Terminal): boolean {
    if (this.#finished || this.#broken) return false;
    const { db, journal, now } = this.o;
    const duration = clampDurationMs(now() - this.o.startedAt);
    const alreadyLive = this.#deferred.length;
    const staged: Staged[] = [...this.#deferred];
    const extras = this.#takeExtras();
    this.#deferred = [];
    const push = <K extends EventKind>(k: K, p: Payload<K>) =>
      staged.push(journal.stage(k, p, staged.at(-1)));
    try {
      if (t.state === "completed") {
        if (!t.blockOpen) push("assistant.block.started", { block: t.answer.block });
        push("assistant.block.completed", {
          block: t.answer.block,
          text: t.answer.text,
          bytes: utf8Bytes(t.answer.text),
          digest: answerDigest(t.answer.text),
          reason: t.answer.reason,
        });
        push("run.completed", {
          reason: t.answer.reason,
          model_calls: t.modelCalls,
          tool_calls: t.toolCalls,
          duration_ms: duration,
        });
      } else if (t.state === "failed") {
        push("run.failed", {
          code: t.code,
          stage: t.stage,
          retryable: errorInfo(t.code).retryable ?? false,
          duration_ms: duration,
        });
      } else {
        push("run.cancelled", { reason: t.reason, duration_ms: duration });
      }
    } catch (err) {
      // A terminal that cannot be staged (a cap or state-machine bug) still ends the Turn.
      this.o.log.error("run.terminal_stage_failed", {
        kind: errorName(err),
      });
      return this.#journalUnavailable(err);
    }
    const runId = journal.ids.run_id;
    const at = now();
    try {
      transaction(db, () => {
        writeStaged(db, journal, staged);
        for (const fn of extras) fn();
        const state = t.state;
        if (!setRunTerminal(db, runId, state, state === "failed" ? t.code : null, at)) {
          throw new Error("run not running at terminal");
        }
        const partialText = this.#openText.trim() === "" ? undefined : this.#openText;
        const ok = finishTurnInTransaction(
          db,
          this.o.turnId,
          t.state === "completed"
            ? { state: "completed", assistantMessage: t.answer.text }
            : t.state === "failed"
            ? {
              state: "failed",
              code: t.code,
              stage: t.stage,
              retryable: errorInfo(t.code).retryable ?? false,
              partialText,
            }
            : {
              state: "cancelled",
              code: "run_cancelled",
              stage: "run",
              // The operator's own Stop is a decision, not a failure to retry.
              retryable: t.reason !== "user",
              partialText,
            },
          at,
        );
        if (!ok) throw new Error("turn not running at terminal");
        usageCloseRun(db, runId, at);
        expirePermissions(db, runId, at);
        this.#injectFault(staged);
      });
    } catch (err) {
      return this.#journalUnavailable(err);
    }
    journal.accept(staged);
    for (const s of staged.slice(alreadyLive)) this.o.live.push(s.envelope);
    this.#finished = true;
    this.o.live.end();
    try {
      enforceRetention(db, this.o.log);
    } catch (err) {
      // Retention runs again after the next terminal; a failure here loses nothing.
      this.o.log.warn("run.retention_failed", { kind: errorName(err) });
    }
    return true;
  }

  /** [EV-5]: end the live stream and, if the database still writes, tombstone the Run. */
  #journalUnavailable(err: unknown): false {
    if (this.#broken) return false;
    this.#broken = true;
    this.o.log.error("run.journal_unavailable", {
      kind: errorName(err),
    });
    this.o.live.push({ kind: "stream.error", payload: { code: "journal_unavailable" } });
    this.o.live.end();
    const { db, journal } = this.o;
    const runId = journal.ids.run_id;
    const at = this.o.now();
    try {
      transaction(db, () => {
        pruneToTombstone(
          db,
          runId,
          canonicalJson({ v: 1, run_id: runId, state: "failed", code: "journal_unavailable" }),
          domainDigest("agent-builder/event-tombstone/v1", runId),
        );
        setRunTerminal(db, runId, "failed", "journal_unavailable", at);
        finishTurnInTransaction(db, this.o.turnId, {
          state: "failed",
          code: "journal_unavailable",
          stage: "journal",
          retryable: false,
        }, at);
        usageCloseRun(db, runId, at);
        expirePermissions(db, runId, at);
        runOperationsOutcomeUnknown(db, runId, at);
      });
      this.#finished = true;
    } catch (inner) {
      // The database refuses writes too: restart recovery will interrupt the Turn [CV-6].
      this.o.log.error("run.tombstone_failed", {
        kind: errorName(inner),
      });
    }
    return false;
  }
}

/** Reduces journals beyond the newest 256 finished Runs of this Agent [EV-2]. */
export function enforceRetention(
  db: DatabaseSync,
  log: Logger,
  keep = JOURNAL_RUNS_RETAINED,
): number {
  const candidates = retentionCandidates(db, keep, 16);
  let reduced = 0;
  for (const c of candidates) {
    transaction(db, () => {
      const run = getRun(db, c.id);
      if (!run || run.journal !== "full" || run.state === "running") return;
      const rows = listEvents(db, run.id);
      // The agent id is bound inside every envelope; take it from the first row.
      const agentId = rows.length
        ? (JSON.parse(rows[0].body) as { agent_id: string }).agent_id
        : "";
      const v = validateJournal(run, agentId, rows);
      const snapshot = v.ok
        ? snapshotOf(run, v.events)
        : canonicalJson({ v: 1, run_id: run.id, state: run.state, valid: false });
      if (!v.ok) log.warn("run.retention_invalid_journal", { reason: v.reason });
      reduceToSnapshot(db, run.id, snapshot);
      reduced++;
    });
  }
  return reduced;
}
