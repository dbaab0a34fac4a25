import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { LiveRecord } from "../../runtime/events/live_hub.ts";
import { durableStream, liveStream, parseLastEventId } from "../../runtime/events/sse.ts";
import type { EventEnvelope } from "../../runtime/protocol/events.ts";
import type { RunRow } from "../../runtime/store/run_store.ts";

const cases: [string | null, { live: number; durable: number }][] = [
  [null, { live: 0, durable: 0 }],
  ["7", { live: 7, durable: 0 }],
  ["d12", { live: 0, durable: 12 }],
  ["-1", { live: 0, durable: 0 }],
  ["12345678", { live: 0, durable: 0 }],
  ["d99999", { live: 0, durable: 0 }],
  ["7\nevent: x", { live: 0, durable: 0 }],
];
for (const [input, expect] of cases) {
  Deno.test(`parseLastEventId(): ${JSON.stringify(input)} → ${JSON.stringify(expect)}`, () => {
    assertEquals(parseLastEventId(input), expect);
  });
}

const env = (seq: number, kind: EventEnvelope["kind"], payload: unknown) =>
  ({
    v: 1,
    run_id: "r",
    agent_id: "a",
    conversation_id: "c",
    seq,
    kind,
    ts: 0,
    payload,
  }) as EventEnvelope;

function run(over: Partial<RunRow> = {}): RunRow {
  return {
    id: "r",
    conversation_id: "c",
    turn_id: "t",
    state: "interrupted",
    journal: "full",
    model_id: "m",
    started_summary: "{}",
    snapshot: null,
    event_count: 2,
    durable_bytes: 0,
    last_digest: "x",
    terminal_code: "run_interrupted",
    created_at: 0,
    finished_at: 0,
    ...over,
  };
}

Deno.test("durableStream(): gap first, durable events with d-ids, snapshot last", async () => {
  const events = [
    env(1, "run.started", {}),
    env(2, "run.failed", { code: "run_interrupted" }),
  ];
  const text = await durableStream({ run: run(), events }, 0).text();
  const blocks = text.trim().split("\n\n");
  assertEquals(blocks.map((b) => /event: (.*)/.exec(b)![1]), [
    "stream.gap",
    "run.started",
    "run.failed",
    "stream.snapshot",
  ]);
  assertEquals(blocks.map((b) => /id: (.*)/.exec(b)?.[1] ?? null), [null, "d1", "d2", null]);
  const resumed = await durableStream({ run: run(), events }, 1).text();
  ok(!resumed.includes("id: d1"));
  ok(resumed.includes("id: d2"));
});

Deno.test("durableStream(): a snapshot_only Run yields the gap and its snapshot only", async () => {
  const text = await durableStream({
    run: run({ journal: "snapshot_only", snapshot: '{"v":1}', state: "completed" }),
    events: [],
  }, 0).text();
  const kinds = [...text.matchAll(/event: (.*)/g)].map((m) => m[1]);
  assertEquals(kinds, ["stream.gap", "stream.snapshot"]);
  ok(text.includes('"reason":"snapshot_only"'));
});

Deno.test("liveStream(): resumes after the given id and closes when the record ends", async () => {
  const rec = new LiveRecord("r", "a");
  rec.push(env(1, "run.started", {}));
  rec.push(env(1, "assistant.block.delta", { block: 1, text: "x" }));
  const res = liveStream(rec, 1, new AbortController().signal);
  rec.push(env(2, "run.completed", {}));
  rec.end();
  const text = await res.text();
  assertEquals([...text.matchAll(/id: (\d+)/g)].map((m) => m[1]), ["2", "3"]);
  assertEquals(res.headers.get("content-type"), "text/event-stream; charset=utf-8");
});
