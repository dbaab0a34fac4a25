/**
 * The journal of each ended Turn's Run, for its tool cards and text blocks
 * after a reload [UI-10, #18]. A Run this page watched live already holds its
 * events; any other ended Run is replayed once (`GET …/replay`, ≤ 128 events
 * a page, at most RECORD_PAGES_MAX pages) and kept: a finished journal never
 * changes. At most RECORD_FETCHES_PARALLEL requests run at once.
 */
import { useEffect, useState } from "preact/hooks";
import type { Api } from "./endpoints.ts";
import type { RunView } from "./run_store.ts";
import { type EventEnvelope, toEnvelope, type Turn } from "./types.ts";

export const RECORD_PAGES_MAX = 8;
export const RECORD_FETCHES_PARALLEL = 4;
/** Journals kept in memory for this page (the oldest read first are dropped). */
export const RECORDS_KEPT_MAX = 256;

export async function readJournal(api: Api, agentId: string, runId: string) {
  const events: EventEnvelope[] = [];
  let cursor: number | undefined = undefined;
  for (let page = 0; page < RECORD_PAGES_MAX; page++) {
    const r = await api.replay(agentId, runId, cursor);
    for (const e of r.events) {
      const env = toEnvelope(e);
      if (env) events.push(env);
    }
    if (r.next === null) break;
    cursor = r.next;
  }
  return events;
}

export function useRunRecords(
  api: Api,
  agentId: string | null,
  turns: readonly Turn[],
  views: ReadonlyMap<string, RunView>,
): ReadonlyMap<string, EventEnvelope[]> {
  const [records, setRecords] = useState<ReadonlyMap<string, EventEnvelope[]>>(new Map());
  useEffect(() => {
    if (!agentId) return;
    const wanted = turns.filter((t) =>
      t.state !== "running" && t.runId && !records.has(t.runId) &&
      !(views.get(t.runId)?.terminal && views.get(t.runId)!.events.length > 0)
    ).map((t) => t.runId!);
    if (wanted.length === 0) return;
    let live = true;
    let next = 0;
    const worker = async () => {
      while (live && next < wanted.length) {
        const runId = wanted[next++];
        // A Run whose journal cannot be read shows only its committed answer.
        const events = await readJournal(api, agentId, runId).catch(() => []);
        if (!live) return;
        setRecords((cur) => {
          const m = new Map(cur);
          m.set(runId, events);
          while (m.size > RECORDS_KEPT_MAX) m.delete(m.keys().next().value!);
          return m;
        });
      }
    };
    for (let i = 0; i < RECORD_FETCHES_PARALLEL; i++) worker();
    return () => {
      live = false;
    };
  }, [api, agentId, turns]);
  return records;
}
