/**
 * The in-memory live record of recent Runs [EV-2, EV-3]: every event a Run
 * published (durable and ephemeral) with a per-Run live id, and the
 * subscribers of its SSE streams.
 *
 * What this file enforces: at most 64 Runs are held (LIVE_RUNS_IN_MEMORY);
 * when a new Run needs room the oldest FINISHED record is dropped (a running
 * record is never dropped; admission caps active Runs at 4, far below 64);
 * live ids are 1, 2, 3 … per Run so `Last-Event-ID` resume is exact; a record
 * ends exactly once and subscribers are told. Byte caps are the journal's.
 */
import { LIVE_RUNS_IN_MEMORY } from "../limits.ts";
import type { EventEnvelope } from "../protocol/events.ts";

export interface LiveItem {
  id: number;
  /** A canonical event, or a stream control frame (`stream.error`). */
  event: EventEnvelope | { kind: "stream.error"; payload: { code: string } };
}

export type Subscriber = (item: LiveItem | null) => void;

export class LiveRecord {
  readonly items: LiveItem[] = [];
  #ended = false;
  readonly #subs = new Set<Subscriber>();

  constructor(readonly runId: string, readonly agentId: string) {}

  get ended(): boolean {
    return this.#ended;
  }

  push(event: LiveItem["event"]): void {
    if (this.#ended) return;
    const item = { id: this.items.length + 1, event };
    this.items.push(item);
    for (const s of this.#subs) s(item);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const s of this.#subs) s(null);
    this.#subs.clear();
  }

  /** Subscribes to items after `afterId`; replays the backlog synchronously first. */
  subscribe(afterId: number, fn: Subscriber): () => void {
    for (const item of this.items) if (item.id > afterId) fn(item);
    if (this.#ended) {
      fn(null);
      return () => {};
    }
    this.#subs.add(fn);
    return () => this.#subs.delete(fn);
  }
}

export class LiveHub {
  readonly #records = new Map<string, LiveRecord>();

  constructor(private readonly capacity = LIVE_RUNS_IN_MEMORY) {}

  get size(): number {
    return this.#records.size;
  }

  /** Creates the record of a new Run, evicting the oldest finished record when full. */
  create(runId: string, agentId: string): LiveRecord {
    if (this.#records.size >= this.capacity) {
      for (const [id, r] of this.#records) {
        if (r.ended) {
          this.#records.delete(id);
          break;
        }
      }
    }
    if (this.#records.size >= this.capacity) throw new Error("live hub full of running records");
    const rec = new LiveRecord(runId, agentId);
    this.#records.set(runId, rec);
    return rec;
  }

  get(runId: string, agentId: string): LiveRecord | null {
    const r = this.#records.get(runId);
    return r && r.agentId === agentId ? r : null;
  }

  /** Drops every record of an Agent (its delete). */
  /** Ends and forgets exactly these Runs' records (an upgrade's cancelled Runs). */
  dropRuns(runIds: Iterable<string>): void {
    for (const id of runIds) {
      this.#records.get(id)?.end();
      this.#records.delete(id);
    }
  }

  dropAgent(agentId: string): void {
    for (const [id, r] of this.#records) {
      if (r.agentId === agentId) {
        r.end();
        this.#records.delete(id);
      }
    }
  }
}
