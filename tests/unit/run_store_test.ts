import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
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
import { transaction } from "../../runtime/store/sqlite.ts";
import { SEED_CONV, SEED_RUN, seededRunDb } from "../helpers/run_db.ts";

const CONV = SEED_CONV;
const RUN = SEED_RUN;

Deno.test("trimOperations(): the ledger never exceeds 4096 rows and keeps unsettled ones", () => {
  const { db } = seededRunDb();
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
  const { db } = seededRunDb();
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
  const { db } = seededRunDb();
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
