/**
 * The Run event stream over Server-Sent Events [EV-3].
 *
 * What this file enforces: a live Run streams its live record from the item
 * after `Last-Event-ID` (ids are the live record's integers), deltas
 * included, and the stream closes after the terminal. When the live record is
 * gone (restart, eviction) the same endpoint serves the DURABLE journal, only
 * after the whole journal validated: an explicit `stream.gap` first (the
 * deltas are lost and are never faked), the durable events (ids `d<seq>`,
 * resumable), then `stream.snapshot` with the converged state and terminal.
 * A `snapshot_only`/`tombstone` Run yields the gap and its snapshot only.
 * Lines are `id:`/`event:`/`data:` with JSON data; no user text ever lands
 * in an `event:` or `id:` field.
 */
import { type EventEnvelope, TERMINAL_KINDS } from "../protocol/events.ts";
import type { RunRow } from "../store/run_store.ts";
import type { LiveItem, LiveRecord } from "./live_hub.ts";
import { SSE_KEEPALIVE_MS } from "../limits.ts";

const enc = new TextEncoder();

function frame(id: string | null, kind: string, data: unknown): Uint8Array {
  const idLine = id === null ? "" : `id: ${id}\n`;
  return enc.encode(`${idLine}event: ${kind}\ndata: ${JSON.stringify(data)}\n\n`);
}

const HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store",
  "x-accel-buffering": "no",
};

/** Parses `Last-Event-ID`: a live id (integer) or a durable id (`d<seq>`). */
export function parseLastEventId(v: string | null): { live: number; durable: number } {
  if (v === null) return { live: 0, durable: 0 };
  if (/^\d{1,7}$/.test(v)) return { live: Number(v), durable: 0 };
  const m = /^d(\d{1,4})$/.exec(v);
  if (m) return { live: 0, durable: Number(m[1]) };
  return { live: 0, durable: 0 };
}

function itemFrame(item: LiveItem): Uint8Array {
  return frame(String(item.id), item.event.kind, item.event);
}

/** Streams a live record from after `afterId` until it ends or the client leaves. */
export function liveStream(rec: LiveRecord, afterId: number, signal: AbortSignal): Response {
  let unsubscribe = () => {};
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(ctl) {
      const close = () => {
        clearInterval(keepalive);
        unsubscribe();
        try {
          ctl.close();
        } catch (err) {
          if (!(err instanceof TypeError)) throw err; // already closed
        }
      };
      keepalive = setInterval(() => ctl.enqueue(enc.encode(": keep-alive\n\n")), SSE_KEEPALIVE_MS);
      signal.addEventListener("abort", close, { once: true });
      unsubscribe = rec.subscribe(afterId, (item) => {
        if (item === null) return close();
        ctl.enqueue(itemFrame(item));
      });
    },
    cancel() {
      clearInterval(keepalive);
      unsubscribe();
    },
  });
  return new Response(body, { status: 200, headers: HEADERS });
}

export interface DurableView {
  run: RunRow;
  /** Validated durable events (empty for snapshot_only / tombstone). */
  events: readonly EventEnvelope[];
}

/** The durable fallback: gap, validated durable events after `afterSeq`, snapshot. */
export function durableStream(view: DurableView, afterSeq: number): Response {
  const { run, events } = view;
  const chunks: Uint8Array[] = [];
  chunks.push(frame(null, "stream.gap", {
    kind: "stream.gap",
    payload: {
      reason: run.journal === "full" ? "live_record_unavailable" : run.journal,
      after_seq: afterSeq,
      durable_events: run.journal === "full" ? events.length : 0,
    },
  }));
  for (const e of events) if (e.seq > afterSeq) chunks.push(frame(`d${e.seq}`, e.kind, e));
  const terminal = events.findLast((e) => TERMINAL_KINDS.has(e.kind));
  chunks.push(frame(null, "stream.snapshot", {
    kind: "stream.snapshot",
    payload: {
      state: run.state,
      journal: run.journal,
      terminal_code: run.terminal_code,
      terminal: terminal ? { kind: terminal.kind, payload: terminal.payload } : null,
      snapshot: run.snapshot === null ? null : JSON.parse(run.snapshot),
    },
  }));
  return new Response(new Blob(chunks as BlobPart[]).stream(), { status: 200, headers: HEADERS });
}
