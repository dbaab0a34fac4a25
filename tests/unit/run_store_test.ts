import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { genesisDigest } from "../../runtime/events/journal.ts";
import { OPERATION_LEDGER_ROWS_MAX, USAGE_ROWS_PER_RUN_MAX } from "../../runtime/limits.ts";
import {
  countOperations,
  insertRun,
  operationDispatched,
  operationIntent,
  operationOutcome,
  operationsOutcomeUnknown,
  trimOperations,
  usageStarted,
} from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase, transaction } from "../../runtime/store/sqlite.ts";
import { makeTempHome } from "../helpers/home.ts";

const CONV = "55555555-5555-4555-8555-555555555555";
const TURN = "66666666-6666-4666-8666-666666666666";
const RUN = "77777777-7777-4777-8777-777777777777";

function freshDb(): DatabaseSync {
  const db = openDatabase({
    root: makeTempHome(),
    relative: "state.sqlite",
    migrations: AGENT_MIGRATIONS,
  });
  db.prepare("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, 't', 0, 0)")
    .run(CONV);
  db.prepare(
    "INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at) VALUES (?, ?, 1, 'running', 'hi', 0)",
  ).run(TURN, CONV);
  insertRun(db, {
    id: RUN,
    conversation_id: CONV,
    turn_id: TURN,
    model_id: "m",
    started_summary: "{}",
    last_digest: genesisDigest(RUN),
    created_at: 0,
  });
  return db;
}

Deno.test("trimOperations(): the ledger never exceeds 4096 rows and keeps unsettled ones", () => {
  const db = freshDb();
  transaction(db, () => {
    for (let i = 0; i < OPERATION_LEDGER_ROWS_MAX; i++) {
      const id = crypto.randomUUID();
      operationIntent(db, {
        id,
        runId: RUN,
        callId: `c${i}`,
        toolId: "file/stat",
        argsDigest: "d",
        now: i,
      });
      if (i > 0) {
        operationDispatched(db, id, "x", i);
        operationOutcome(db, { id, ok: true, resultDigest: "r", code: null, now: i });
      }
    }
  });
  assertEquals(countOperations(db), OPERATION_LEDGER_ROWS_MAX);
  trimOperations(db, OPERATION_LEDGER_ROWS_MAX);
  assertEquals(countOperations(db), OPERATION_LEDGER_ROWS_MAX - 1);
  // The oldest row was still `intent`: never trimmed, and restart makes it outcome_unknown.
  const oldest = db.prepare("SELECT state FROM operations WHERE call_id = 'c0'").get() as {
    state: string;
  };
  assertEquals(oldest.state, "intent");
  assertEquals(operationsOutcomeUnknown(db, 1), 1);
  db.close();
});

Deno.test("usage ledger: a 65th logical call row for one Run is refused by the schema", () => {
  const db = freshDb();
  for (let call = 1; call <= USAGE_ROWS_PER_RUN_MAX; call++) {
    usageStarted(db, { runId: RUN, call, modelId: "m", scope: "s", estimate: 1, now: 0 });
  }
  throws(() =>
    usageStarted(db, {
      runId: RUN,
      call: USAGE_ROWS_PER_RUN_MAX + 1,
      modelId: "m",
      scope: "s",
      estimate: 1,
      now: 0,
    })
  );
  db.close();
});

Deno.test("runs_one_active: a second running Run in one Conversation violates the index", () => {
  const db = freshDb();
  db.prepare(
    "INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at) VALUES (?, ?, 2, 'completed', 'x', 0)",
  ).run("88888888-8888-4888-8888-888888888888", CONV);
  throws(() =>
    insertRun(db, {
      id: "99999999-9999-4999-8999-999999999999",
      conversation_id: CONV,
      turn_id: "88888888-8888-4888-8888-888888888888",
      model_id: "m",
      started_summary: "{}",
      last_digest: "x",
      created_at: 0,
    }), /UNIQUE/);
  db.close();
});
