import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { AppError } from "../../runtime/errors.ts";
import {
  appendDurable,
  RunJournal,
  type Staged,
  validateJournal,
} from "../../runtime/events/journal.ts";
import { initialState, step } from "../../runtime/events/state_machine.ts";
import {
  CALL_ID_MAX,
  RUN_DURABLE_BYTES_MAX,
  RUN_EVENTS_MAX,
  RUN_LIVE_BYTES_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../../runtime/limits.ts";
import type { EventKind } from "../../runtime/protocol/events.ts";
import { getRun, listEvents } from "../../runtime/store/run_store.ts";
import type { DatabaseSync } from "../../runtime/store/sqlite.ts";
import {
  runStartedPayload,
  SEED_CONV,
  SEED_RUN,
  SEED_TURN,
  seededRunDb,
  stageLargeReadPair,
} from "../helpers/run_db.ts";

const AGENT = "44444444-4444-4444-8444-444444444444";
const CONV = SEED_CONV;
const TURN = SEED_TURN;
const RUN = SEED_RUN;
const D = `sha256:${"a".repeat(64)}`;

const started = runStartedPayload(TURN, RUN, D);
const reqStarted = (call: number) => ({
  call,
  model_id: "m",
  phase: "plain" as const,
  recovery: 0 as const,
  token_estimate: 10,
  request_bytes: 10,
  digest: D,
  collapsed_bundles: 0,
});
const respFinished = (call: number) => ({
  call,
  outcome: "completed" as const,
  error_code: null,
  input_tokens: 1,
  output_tokens: 1,
  usage_complete: true,
  elapsed_ms: 1,
  attempts: 1,
});
const attempt = (call: number, a: number) => ({
  call,
  attempt: a,
  max_attempts: 2,
  phase: "plain" as const,
});

type Ev = [EventKind, Record<string, unknown>];
const machineCases: { name: string; events: Ev[]; ok: boolean }[] = [
  {
    name: "a plain answer with one transport attempt",
    events: [
      ["run.started", {}],
      ["model.request.started", { call: 1 }],
      ["model.transport.attempt.started", { call: 1, attempt: 1 }],
      ["assistant.block.started", { block: 1 }],
      ["assistant.block.delta", { block: 1 }],
      ["model.transport.attempt.finished", { call: 1, attempt: 1 }],
      ["model.response.finished", { call: 1 }],
      ["assistant.block.completed", { block: 1 }],
      ["run.completed", {}],
    ],
    ok: true,
  },
  {
    name: "an event before run.started",
    events: [["model.request.started", { call: 1 }]],
    ok: false,
  },
  {
    name: "an event after the terminal",
    events: [["run.started", {}], ["run.completed", {}], ["run.failed", { code: "x" }]],
    ok: false,
  },
  {
    name: "a second request while one is open",
    events: [
      ["run.started", {}],
      ["model.request.started", { call: 1 }],
      ["model.request.started", { call: 2 }],
    ],
    ok: false,
  },
  {
    name: "a tool call during a model call",
    events: [
      ["run.started", {}],
      ["model.request.started", { call: 1 }],
      ["tool.call.requested", { call_id: "call-1" }],
    ],
    ok: false,
  },
  {
    name: "tool calls out of order",
    events: [["run.started", {}], ["tool.call.requested", { call_id: "call-2" }]],
    ok: false,
  },
  {
    name: "completion with an open response",
    events: [["run.started", {}], ["model.request.started", { call: 1 }], ["run.completed", {}]],
    ok: false,
  },
  {
    name: "an interrupted terminal closing an open response",
    events: [
      ["run.started", {}],
      ["model.request.started", { call: 1 }],
      ["run.failed", { code: "run_interrupted" }],
    ],
    ok: true,
  },
  {
    name: "a cancel leaving the partial block uncompleted",
    events: [
      ["run.started", {}],
      ["model.request.started", { call: 1 }],
      ["assistant.block.started", { block: 1 }],
      ["model.response.finished", { call: 1 }],
      ["run.cancelled", {}],
    ],
    ok: true,
  },
];

for (const c of machineCases) {
  Deno.test(`event state machine ${c.ok ? "accepts" : "refuses"} ${c.name}`, () => {
    let s = initialState();
    let good = true;
    for (const [k, p] of c.events) {
      const r = step(s, k, p);
      if (!r.ok) {
        good = false;
        break;
      }
      s = r.state;
    }
    assertEquals(good, c.ok);
  });
}

function writeRun(db: DatabaseSync, j: RunJournal): void {
  const list: Staged[] = [];
  const add = <K extends EventKind>(k: K, p: unknown) =>
    list.push(j.stage(k, p as never, list.at(-1)));
  add("run.started", started);
  add("model.request.started", reqStarted(1));
  add("model.transport.attempt.started", attempt(1, 1));
  add("model.transport.attempt.finished", {
    ...attempt(1, 1),
    outcome: "ok",
    elapsed_ms: 3,
    ttfb_ms: 1,
  });
  add("model.response.finished", respFinished(1));
  add("run.completed", { reason: "stop", model_calls: 1, tool_calls: 0, duration_ms: 5 });
  appendDurable(db, j, list, () => {
    db.prepare("UPDATE runs SET state = 'completed' WHERE id = ?").run(RUN);
  });
}

Deno.test("validateJournal(): accepts an untouched journal and rejects every tampering", () => {
  const { db } = seededRunDb();
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  writeRun(db, j);
  const run = getRun(db, RUN)!;
  const rows = listEvents(db, RUN);
  const v = validateJournal(run, AGENT, rows);
  ok(v.ok);
  assertEquals(v.ok && v.events.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
  const tampered = rows.map((r) => ({ ...r }));
  tampered[1].body = tampered[1].body.replace('"token_estimate":10', '"token_estimate":11');
  assertEquals(validateJournal(run, AGENT, tampered).ok, false);
  assertEquals(validateJournal(run, AGENT, rows.slice(0, 5)).ok, false);
  assertEquals(
    validateJournal(run, AGENT, [rows[0], rows[2], rows[1], ...rows.slice(3)]).ok,
    false,
  );
  assertEquals(validateJournal(run, "88888888-8888-4888-8888-888888888888", rows).ok, false);
  db.close();
});

Deno.test("RunJournal: ephemeral deltas are never staged for SQLite", () => {
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  throws(() => j.stage("assistant.block.delta", { block: 1, text: "x" }));
  throws(() => j.ephemeral("run.started", started as never));
});

Deno.test("RunJournal: a single event over 64 KiB is refused with run_event_limit", () => {
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  const list = [j.stage("run.started", started)];
  j.accept(list);
  const big = Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`a${i}`, "x".repeat(16000)]));
  throws(
    () =>
      j.stage("tool.call.requested", {
        call_id: "call-1",
        tool_id: "file/grep",
        args: big,
        args_digest: D,
      }),
    (e: unknown) => e instanceof AppError && e.code === "run_event_limit",
  );
  // permission.denied is small and repeatable: fill to the cap.
  let refused: unknown = null;
  const staged: Staged[] = [];
  for (let i = 0; i < RUN_EVENTS_MAX + 2 && refused === null; i++) {
    try {
      staged.push(j.stage("permission.denied", {
        call_id: "call-1",
        tool_id: "file/write",
        reason: "non_interactive_ask",
      }, staged.at(-1)));
    } catch (e) {
      refused = e;
    }
  }
  ok(refused instanceof AppError && refused.code === "run_event_limit");
  // 1 run.started + 510 others; the 512th slot is kept for the terminal.
  assertEquals(staged.length, RUN_EVENTS_MAX - 2);
  const term = j.stage("run.completed", {
    reason: "stop",
    model_calls: 0,
    tool_calls: 0,
    duration_ms: 1,
  }, staged.at(-1));
  assertEquals(term.row.seq, RUN_EVENTS_MAX);
});

Deno.test("appendDurable(): a failing transaction leaves the journal head unchanged", () => {
  const { db } = seededRunDb();
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  const s = j.stage("run.started", started);
  throws(() =>
    appendDurable(db, j, [s], () => {
      throw new Error("disk full");
    })
  );
  assertEquals(j.count, 0);
  assertEquals(listEvents(db, RUN).length, 0);
  appendDurable(db, j, [j.stage("run.started", started)]);
  assertEquals(j.count, 1);
  assertEquals(getRun(db, RUN)!.event_count, 1);
  db.close();
});

Deno.test("RunJournal: durable bytes stop below 1 MiB and still leave room for the terminal", () => {
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  j.accept([j.stage("run.started", started)]);
  let refused: unknown = null;
  let accepted = 0;
  for (let i = 1; i <= CALL_ID_MAX && refused === null; i++) {
    try {
      const [req, done] = stageLargeReadPair(j, i, D);
      j.accept([req, done]);
      accepted++;
    } catch (e) {
      refused = e;
    }
  }
  ok(refused instanceof AppError && refused.code === "run_event_limit");
  // 24 tool results of the largest kind fit [SB-8]; the bound stops the journal past them.
  ok(accepted >= WORKER_TOOL_CALLS_MAX, String(accepted));
  ok(j.durableBytes <= RUN_DURABLE_BYTES_MAX - 2048);
  const term = j.stage("run.failed", {
    code: "run_event_limit",
    stage: "journal",
    retryable: false,
    duration_ms: 1,
  });
  ok(j.durableBytes + term.bytes <= RUN_DURABLE_BYTES_MAX);
});

Deno.test("RunJournal: live bytes (deltas included) stop at 2 MiB", () => {
  const j = new RunJournal({ run_id: RUN, agent_id: AGENT, conversation_id: CONV });
  j.accept([j.stage("run.started", started)]);
  const r = j.stage("model.request.started", reqStarted(1));
  j.accept([r, j.stage("assistant.block.started", { block: 1 }, r)]);
  let sent = 0;
  let refused: unknown = null;
  const perDelta = 16000;
  const fit = Math.floor(RUN_LIVE_BYTES_MAX / perDelta);
  while (refused === null && sent < fit + 10) {
    try {
      j.ephemeral("assistant.block.delta", { block: 1, text: "d".repeat(perDelta) });
      sent++;
    } catch (e) {
      refused = e;
    }
  }
  ok(refused instanceof AppError && refused.code === "run_event_limit");
  // Each delta is its text plus a small envelope: the cap falls just short of `fit`.
  ok(sent >= fit - 5 && sent < fit, `deltas before the cap: ${sent} of ${fit}`);
  throws(() => j.ephemeral("assistant.block.delta", { block: 2, text: "x" }));
});
