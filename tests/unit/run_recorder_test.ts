import { deepStrictEqual as assertEquals, ok, throws } from "node:assert/strict";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { genesisDigest, RunJournal, validateJournal } from "../../runtime/events/journal.ts";
import { LiveHub } from "../../runtime/events/live_hub.ts";
import type { Logger } from "../../runtime/log.ts";
import { beginTurn, getConversation } from "../../runtime/store/agent_state_store.ts";
import { getRun, insertRun, listEvents } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import {
  enforceRetention,
  JournalUnavailable,
  RunRecorder,
} from "../../runtime/runs/run_recorder.ts";
import { makeTempHome } from "../helpers/home.ts";

const AGENT = "44444444-4444-4444-8444-444444444444";
const CONV = "55555555-5555-4555-8555-555555555555";
const D = `sha256:${"a".repeat(64)}`;
const log: Logger = { info() {}, warn() {}, error() {}, flush() {}, close() {} };

function freshDb(): DatabaseSync {
  const db = openDatabase({
    root: makeTempHome(),
    relative: "state.sqlite",
    migrations: AGENT_MIGRATIONS,
  });
  db.prepare("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, 't', 0, 0)")
    .run(CONV);
  return db;
}

/** A running Turn + Run with its run.started written, like the Run service does. */
function startRun(db: DatabaseSync, hub: LiveHub, createdAt = 0) {
  const runId = crypto.randomUUID();
  const turnId = crypto.randomUUID();
  const conv = getConversation(db, CONV)!;
  assertEquals(
    beginTurn(db, {
      conversationId: CONV,
      expectedRevision: conv.revision,
      turnId,
      runId,
      userMessage: "hi",
      now: createdAt,
    }).result,
    "ok",
  );
  insertRun(db, {
    id: runId,
    conversation_id: CONV,
    turn_id: turnId,
    model_id: "m",
    started_summary: "{}",
    last_digest: genesisDigest(runId),
    created_at: createdAt,
  });
  const journal = new RunJournal({ run_id: runId, agent_id: AGENT, conversation_id: CONV });
  const live = hub.create(runId, AGENT);
  const rec = new RunRecorder({
    db,
    journal,
    live,
    turnId,
    log,
    now: () => createdAt + 5,
    startedAt: createdAt,
  });
  rec.durable("run.started", {
    turn_id: turnId,
    model_id: "m",
    plan_id: runId,
    plan_digest: D,
    toolset_digest: D,
    tool_ids: [],
    section_count: 4,
    history_count: 0,
    window: 32768,
    budget: 28672,
    protocol_features: [],
  });
  return { runId, turnId, rec, live };
}

function complete(rec: RunRecorder, text = "answer"): boolean {
  return rec.finish({
    state: "completed",
    answer: { block: 1, text, reason: "stop" },
    modelCalls: 1,
    toolCalls: 0,
    blockOpen: false,
  });
}

function withCall(rec: RunRecorder): void {
  rec.durable("model.request.started", {
    call: 1,
    model_id: "m",
    phase: "plain",
    recovery: 0,
    token_estimate: 1,
    request_bytes: 1,
    digest: D,
    collapsed_bundles: 0,
  });
  rec.durable("model.response.finished", {
    call: 1,
    outcome: "completed",
    error_code: null,
    input_tokens: 1,
    output_tokens: 1,
    usage_complete: true,
    elapsed_ms: 1,
    attempts: 1,
  });
}

Deno.test("RunRecorder.finish(): the answer, terminal, Run row and Turn commit together", () => {
  const db = freshDb();
  const { runId, turnId, rec, live } = startRun(db, new LiveHub());
  withCall(rec);
  ok(complete(rec, "the answer"));
  const run = getRun(db, runId)!;
  assertEquals([run.state, run.event_count], ["completed", 6]);
  const turn = db.prepare("SELECT state, assistant_message FROM turns WHERE id = ?").get(turnId);
  assertEquals({ ...turn }, { state: "completed", assistant_message: "the answer" });
  ok(validateJournal(run, AGENT, listEvents(db, runId)).ok);
  ok(live.ended);
  assertEquals(complete(rec), false, "a second terminal is refused");
});

Deno.test("RunRecorder: a journal that stops appending ends the stream and tombstones the Turn", () => {
  const db = freshDb();
  const { runId, turnId, rec, live } = startRun(db, new LiveHub());
  // A real SQLite failure on the journal table only: the rest of the database still writes.
  db.exec(
    "CREATE TRIGGER fail_journal BEFORE INSERT ON run_events BEGIN SELECT RAISE(ABORT, 'disk'); END",
  );
  throws(() => withCall(rec), (e: unknown) => e instanceof JournalUnavailable);
  assertEquals(live.items.at(-1)!.event.kind, "stream.error");
  ok(live.ended);
  const run = getRun(db, runId)!;
  assertEquals([run.state, run.journal, run.terminal_code], [
    "failed",
    "tombstone",
    "journal_unavailable",
  ]);
  assertEquals(listEvents(db, runId).length, 0, "partial events pruned");
  const turn = db.prepare("SELECT state, terminal_code, assistant_message FROM turns WHERE id = ?")
    .get(turnId);
  assertEquals({ ...turn }, {
    state: "failed",
    terminal_code: "journal_unavailable",
    assistant_message: null,
  });
  assertEquals(complete(rec), false);
});

Deno.test("RunRecorder: a read-only database leaves the Turn for restart recovery", () => {
  const db = freshDb();
  const { runId, rec, live } = startRun(db, new LiveHub());
  db.exec("PRAGMA query_only = ON");
  throws(() => withCall(rec), (e: unknown) => e instanceof JournalUnavailable);
  ok(live.ended);
  db.exec("PRAGMA query_only = OFF");
  assertEquals(getRun(db, runId)!.state, "running");
});

Deno.test("enforceRetention(): beyond 256 finished Runs the oldest become snapshot_only", () => {
  const db = freshDb();
  const hub = new LiveHub(1000);
  const ids: string[] = [];
  for (let i = 0; i < 258; i++) {
    const { runId, rec } = startRun(db, hub, i * 10);
    withCall(rec);
    ok(complete(rec, `answer ${i}`));
    ids.push(runId);
  }
  // Each terminal already ran retention; one more pass finds nothing left to do.
  assertEquals(enforceRetention(db, log), 0);
  const states = ids.map((id) => getRun(db, id)!.journal);
  assertEquals(states.slice(0, 2), ["snapshot_only", "snapshot_only"]);
  ok(states.slice(2).every((s) => s === "full"));
  assertEquals(listEvents(db, ids[0]).length, 0);
  const snap = JSON.parse(getRun(db, ids[0])!.snapshot!);
  assertEquals([snap.state, snap.terminal.kind], ["completed", "run.completed"]);
});

Deno.test("LiveHub: keeps at most 64 records and never evicts a running one", () => {
  const hub = new LiveHub();
  const recs = Array.from({ length: 64 }, (_, i) => hub.create(`r${i}`, AGENT));
  throws(() => hub.create("one-too-many", AGENT));
  recs[5].end();
  hub.create("r64", AGENT);
  assertEquals(hub.size, 64);
  assertEquals(hub.get("r5", AGENT), null);
  ok(hub.get("r6", AGENT));
  assertEquals(hub.get("r6", "other-agent"), null, "records are bound to their Agent");
});

Deno.test("LiveHub.dropRuns ends only the named Runs; dropAgent ends every Run of the Agent", () => {
  const hub = new LiveHub(8);
  const old = hub.create("run-old", "agent-a");
  const newer = hub.create("run-new", "agent-a");
  const foreign = hub.create("run-b", "agent-b");
  hub.dropRuns(["run-old"]);
  assertEquals([old.ended, newer.ended, foreign.ended], [true, false, false]);
  assertEquals(hub.get("run-old", "agent-a"), null);
  assertEquals(hub.get("run-new", "agent-a"), newer);
  hub.dropAgent("agent-a");
  assertEquals([newer.ended, foreign.ended], [true, false]);
  assertEquals(hub.size, 1);
});
