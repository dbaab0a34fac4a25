/**
 * The per-Run canonical journal writer and the whole-Run validator [EV-1,
 * EV-2, EV-4].
 *
 * What this file enforces on append: a strict payload schema per kind, the
 * event state machine, ≤ RUN_EVENTS_MAX (1024) durable events, ≤ 1 MiB durable
 * bytes, ≤ 64 KiB per event, ≤ 2 MiB live bytes (durable + ephemeral), with room
 * for the terminal event always reserved (the schema's CHECKs, agent migration
 * 0022, hold the same event and byte bounds); ephemeral kinds are never staged for
 * SQLite; every row carries a hash chain digest (domain-separated SHA-256 over
 * the previous digest and the canonical envelope) and the Run row records the
 * head, so deletion, reordering, truncation or an edited row all fail
 * validation. On replay the WHOLE journal is validated (binding, schema, state
 * machine, chain, head) before anything is returned.
 */
import { AppError } from "../errors.ts";
import {
  EVENT_MAX_BYTES,
  RUN_DURABLE_BYTES_MAX,
  RUN_EVENTS_MAX,
  RUN_LIVE_BYTES_MAX,
  TERMINAL_RESERVE_BYTES,
} from "../limits.ts";
import { canonicalJson, type Digest, domainDigest, utf8Bytes } from "../protocol/digest.ts";
import {
  EPHEMERAL_KINDS,
  type EventEnvelope,
  type EventKind,
  parseEnvelope,
  type Payload,
  PAYLOADS,
  TERMINAL_KINDS,
} from "../protocol/events.ts";
import type { DatabaseSync } from "node:sqlite";
import { type EventRow, insertEvent, type RunRow, updateJournalHead } from "../store/run_store.ts";
import { transaction } from "../store/sqlite.ts";
import { initialState, type MachineState, step } from "./state_machine.ts";

export interface RunIds {
  run_id: string;
  agent_id: string;
  conversation_id: string;
}

export function genesisDigest(runId: string): Digest {
  return domainDigest("agent-builder/event-genesis/v1", runId);
}

export function chainDigest(prev: string, body: string): Digest {
  return domainDigest("agent-builder/event/v1", `${prev}\n${body}`);
}

export interface Staged {
  envelope: EventEnvelope;
  row: EventRow;
  bytes: number;
  /** Bytes of this and every staged-but-unaccepted event before it in its chain. */
  chainBytes: number;
  state: MachineState;
}

/** In-memory head of one Run's journal; persistence is the caller's transaction. */
export class RunJournal {
  #state: MachineState = initialState();
  #count = 0;
  #bytes = 0;
  #live = 0;
  #head: string;

  constructor(readonly ids: RunIds, private readonly now: () => number = Date.now) {
    this.#head = genesisDigest(ids.run_id);
  }

  get count(): number {
    return this.#count;
  }
  get durableBytes(): number {
    return this.#bytes;
  }
  get head(): string {
    return this.#head;
  }
  get state(): MachineState {
    return this.#state;
  }

  /** Re-opens a journal from its validated rows (restart recovery). */
  static restore(ids: RunIds, rows: readonly EventRow[], now: () => number = Date.now): RunJournal {
    const j = new RunJournal(ids, now);
    let state = initialState();
    for (const r of rows) {
      const env = JSON.parse(r.body) as EventEnvelope;
      const s = step(state, env.kind, env.payload as Record<string, unknown>);
      if (!s.ok) throw new Error(`restore: ${s.reason}`);
      state = s.state;
      j.#count = r.seq;
      j.#bytes += utf8Bytes(r.body);
      j.#head = r.digest;
    }
    j.#live = j.#bytes;
    j.#state = state;
    return j;
  }

  /** Validates a durable event and computes its row; nothing changes until `accept`. */
  stage<K extends EventKind>(kind: K, payload: Payload<K>, after?: Staged): Staged {
    if (EPHEMERAL_KINDS.has(kind)) throw new Error(`${kind} is ephemeral`);
    const base = after?.state ?? this.#state;
    const count = (after ? after.row.seq : this.#count) + 1;
    // Every staged-but-unaccepted predecessor counts against the caps, not just the last one.
    const chainSoFar = after ? after.chainBytes : 0;
    const bytesSoFar = this.#bytes + chainSoFar;
    const prev = after ? after.row.digest : this.#head;
    const envelope = this.#envelope(kind, payload, count);
    const body = canonicalJson(envelope);
    const bytes = utf8Bytes(body);
    const terminal = TERMINAL_KINDS.has(kind);
    if (bytes > EVENT_MAX_BYTES) throw new AppError("run_event_limit", "event too large");
    const countCap = terminal ? RUN_EVENTS_MAX : RUN_EVENTS_MAX - 1;
    const bytesCap = terminal
      ? RUN_DURABLE_BYTES_MAX
      : RUN_DURABLE_BYTES_MAX - TERMINAL_RESERVE_BYTES;
    if (count > countCap || bytesSoFar + bytes > bytesCap) {
      throw new AppError("run_event_limit", "durable cap");
    }
    if (this.#live + chainSoFar + bytes > RUN_LIVE_BYTES_MAX && !terminal) {
      throw new AppError("run_event_limit", "live cap");
    }
    const s = step(base, kind, payload as Record<string, unknown>);
    if (!s.ok) throw new Error(`event state machine: ${s.reason}`);
    return {
      envelope,
      row: { seq: count, kind, body, digest: chainDigest(prev, body) },
      bytes,
      chainBytes: chainSoFar + bytes,
      state: s.state,
    };
  }

  /** Records staged events after their transaction committed. */
  accept(staged: readonly Staged[]): void {
    for (const s of staged) {
      if (s.row.seq !== this.#count + 1) throw new Error("journal accept out of order");
      this.#count = s.row.seq;
      this.#bytes += s.bytes;
      this.#live += s.bytes;
      this.#head = s.row.digest;
      this.#state = s.state;
    }
  }

  /** An ephemeral event for the live stream only; checked against the state machine and live cap. */
  ephemeral<K extends EventKind>(kind: K, payload: Payload<K>, after?: Staged): EventEnvelope {
    if (!EPHEMERAL_KINDS.has(kind)) throw new Error(`${kind} is durable`);
    const s = step(after?.state ?? this.#state, kind, payload as Record<string, unknown>);
    if (!s.ok) throw new Error(`event state machine: ${s.reason}`);
    const envelope = this.#envelope(kind, payload, Math.max(1, after?.row.seq ?? this.#count));
    const bytes = utf8Bytes(canonicalJson(envelope));
    const chain = after ? after.chainBytes : 0;
    if (this.#live + chain + bytes > RUN_LIVE_BYTES_MAX - TERMINAL_RESERVE_BYTES) {
      throw new AppError("run_event_limit", "live cap");
    }
    this.#live += bytes;
    return envelope;
  }

  #envelope<K extends EventKind>(kind: K, payload: Payload<K>, seq: number): EventEnvelope<K> {
    const parsed = PAYLOADS[kind].safeParse(payload);
    if (!parsed.success) throw new Error(`invalid ${kind} payload`);
    return { v: 1, ...this.ids, seq, kind, ts: this.now(), payload: parsed.data as Payload<K> };
  }
}

/**
 * Persists staged events (and `extra` writes) in ONE transaction, then advances
 * the in-memory head. A throw leaves both the database and the head unchanged.
 */
export function appendDurable(
  db: DatabaseSync,
  journal: RunJournal,
  staged: readonly Staged[],
  extra?: () => void,
): void {
  transaction(db, () => {
    writeStaged(db, journal, staged);
    extra?.();
  });
  journal.accept(staged);
}

/** The inserts of `appendDurable`, for callers that already hold a transaction. */
export function writeStaged(
  db: DatabaseSync,
  journal: RunJournal,
  staged: readonly Staged[],
): void {
  if (staged.length === 0) return;
  for (const s of staged) insertEvent(db, journal.ids.run_id, s.row);
  const last = staged[staged.length - 1];
  const bytes = journal.durableBytes + staged.reduce((n, s) => n + s.bytes, 0);
  updateJournalHead(db, journal.ids.run_id, last.row.seq, bytes, last.row.digest);
}

export type Validation =
  | { ok: true; events: EventEnvelope[]; terminal: EventEnvelope | null }
  | { ok: false; reason: string };

/** Validates a whole durable journal against its Run row [EV-4]. Pure. */
export function validateJournal(
  run: RunRow,
  agentId: string,
  rows: readonly EventRow[],
): Validation {
  const fail = (reason: string): Validation => ({ ok: false, reason });
  if (rows.length > RUN_EVENTS_MAX) return fail("too many events");
  if (rows.length !== run.event_count) return fail("event count mismatch");
  let state = initialState();
  let prev: string = genesisDigest(run.id);
  let bytes = 0;
  const events: EventEnvelope[] = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (row.seq !== i + 1) return fail("sequence gap");
    bytes += utf8Bytes(row.body);
    if (bytes > RUN_DURABLE_BYTES_MAX) return fail("durable bytes");
    if (chainDigest(prev, row.body) !== row.digest) return fail("digest");
    prev = row.digest;
    let value: unknown;
    try {
      value = JSON.parse(row.body);
    } catch {
      return fail("body json");
    }
    const env = parseEnvelope(value);
    if (!env) return fail("schema");
    if (canonicalJson(env) !== row.body) return fail("not canonical");
    if (
      env.seq !== row.seq || env.kind !== row.kind || env.run_id !== run.id ||
      env.agent_id !== agentId || env.conversation_id !== run.conversation_id
    ) return fail("binding");
    if (EPHEMERAL_KINDS.has(env.kind)) return fail("ephemeral kind in journal");
    const s = step(state, env.kind, env.payload as Record<string, unknown>);
    if (!s.ok) return fail(s.reason);
    state = s.state;
    events.push(env);
  }
  if (prev !== run.last_digest) return fail("head");
  if (bytes !== run.durable_bytes) return fail("durable bytes mismatch");
  if (run.state !== "running" && !state.terminal) return fail("missing terminal");
  const last = events.at(-1) ?? null;
  return { ok: true, events, terminal: last && TERMINAL_KINDS.has(last.kind) ? last : null };
}

/** The UI snapshot a retained-out Run keeps: counts and the terminal, no bodies. */
export function snapshotOf(run: RunRow, events: readonly EventEnvelope[]): string {
  const terminal = events.findLast((e) => TERMINAL_KINDS.has(e.kind)) ?? null;
  const tools = events.filter((e) => e.kind === "tool.call.requested")
    .map((e) => (e.payload as Payload<"tool.call.requested">).tool_id);
  return canonicalJson({
    v: 1,
    run_id: run.id,
    state: run.state,
    events: events.length,
    model_calls: events.filter((e) => e.kind === "model.request.started").length,
    tool_ids: tools,
    terminal: terminal ? { kind: terminal.kind, payload: terminal.payload } : null,
  });
}
