import { deepStrictEqual as assertEquals, throws } from "node:assert/strict";
import { OPERATION_LEDGER_ROWS_MAX, USAGE_ROWS_PER_RUN_MAX } from "../../runtime/limits.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  countOperations,
  insertRun,
  operationDispatched,
  operationIntent,
  operationOutcome,
  operationRefused,
  operationsOutcomeUnknown,
  pruneToTombstone,
  trimOperations,
  updateJournalHead,
  usageCloseRun,
  usageFinished,
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

/** The fixed code a transition that matched no row fails with. */
function missed(what: string): (e: unknown) => boolean {
  return (e) => e instanceof AppError && e.code === "state_transition_missed" && e.detail === what;
}

Deno.test("an operation moves intent → dispatched → settled once; every repeat fails with state_transition_missed", () => {
  const { db } = seededRunDb();
  const id = crypto.randomUUID();
  operationIntent(db, {
    id,
    runId: RUN,
    callId: "c",
    toolId: "file/stat",
    argsDigest: "d",
    now: 0,
  });
  // An outcome before dispatch matches no row.
  throws(
    () => operationOutcome(db, { id, ok: true, resultDigest: "r", code: null, now: 1 }),
    missed("operationOutcome"),
  );
  operationDispatched(db, id, "x", 1);
  throws(() => operationDispatched(db, id, "x", 2), missed("operationDispatched"));
  // Dispatched is no longer `intent`: it cannot be refused.
  throws(() => operationRefused(db, id, "internal_error", 2), missed("operationRefused"));
  operationOutcome(db, { id, ok: true, resultDigest: "r", code: null, now: 2 });
  throws(
    () => operationOutcome(db, { id, ok: false, resultDigest: null, code: "x", now: 3 }),
    missed("operationOutcome"),
  );
  const row = db.prepare("SELECT state, result_digest FROM operations WHERE id = ?").get(id);
  assertEquals({ ...row }, { state: "succeeded", result_digest: "r" });
  // Restart finds nothing unsettled: the bulk move is idempotent on purpose.
  assertEquals(operationsOutcomeUnknown(db, 4), 0);
  db.close();
});

Deno.test("usageFinished() settles a started call once; after the Run closed its ledger it fails with state_transition_missed", () => {
  const { db } = seededRunDb();
  usageStarted(db, { runId: RUN, call: 1, modelId: "m", scope: "s", estimate: 1, now: 0 });
  usageStarted(db, { runId: RUN, call: 2, modelId: "m", scope: "s", estimate: 1, now: 0 });
  const finish = (call: number) =>
    usageFinished(db, { runId: RUN, call, complete: true, input: 3, output: 4, now: 1 });
  finish(1);
  throws(() => finish(1), missed("usageFinished"));
  usageCloseRun(db, RUN, 2);
  usageCloseRun(db, RUN, 3); // idempotent on purpose
  throws(() => finish(2), missed("usageFinished"));
  const rows = db.prepare("SELECT call, state FROM usage_ledger ORDER BY call").all();
  assertEquals(rows.map((r) => ({ ...r })), [
    { call: 1, state: "complete" },
    { call: 2, state: "incomplete" },
  ]);
  db.close();
});

Deno.test("journal writes on a Run that does not exist fail with state_transition_missed, never silently", () => {
  const { db } = seededRunDb();
  const ghost = "99999999-9999-4999-8999-999999999999";
  throws(() => updateJournalHead(db, ghost, 1, 1, "d"), missed("updateJournalHead"));
  throws(() => pruneToTombstone(db, ghost, "{}"), missed("pruneToTombstone"));
  db.close();
});
