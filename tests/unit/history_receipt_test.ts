/**
 * History beyond the read bound [CX-1, CX-3, CX-4]: completed Turns older
 * than the latest 256 Turns are never dropped silently — the ContextPlan
 * carries a content-free receipt (count, boundary ids, digest over the ids),
 * the plan digest covers it, the model sees only a count and the digest, and
 * inspection shows it with a keyed digest and a truncation reason.
 */
import { assert, assertEquals, assertNotEquals } from "../helpers/assert.ts";
import { bulkTurns } from "../helpers/agent_state.ts";
import { makeTempHome } from "../helpers/home.ts";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { admit } from "../../runtime/context/admission.ts";
import { createInspectionKey, inspectPlan } from "../../runtime/context/inspect.ts";
import {
  compileContextPlan,
  type ContextInputs,
  HISTORY_READ_POLICY_ID,
  omittedHistoryReceipt,
} from "../../runtime/context/plan.ts";
import { HISTORY_TURNS_READ_MAX } from "../../runtime/limits.ts";
import { readHistory } from "../../runtime/runs/run_inputs.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { sealCatalog } from "../../runtime/tools/catalog.ts";
import { resolveToolSet } from "../../runtime/tools/policy.ts";

const CONV = "55555555-5555-4555-8555-555555555555";

function dbWithTurns(count: number): DatabaseSync {
  const db = openDatabase({
    root: makeTempHome(),
    relative: "state.sqlite",
    migrations: AGENT_MIGRATIONS,
  });
  db.prepare("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, 't', 0, 0)")
    .run(CONV);
  bulkTurns(db, CONV, count);
  return db;
}

function idsBySeq(db: DatabaseSync): string[] {
  return (db.prepare("SELECT id FROM turns WHERE conversation_id = ? ORDER BY seq").all(CONV) as {
    id: string;
  }[]).map((r) => r.id);
}

function inputs(h: ReturnType<typeof readHistory>): ContextInputs {
  return {
    planId: "00000000-0000-4000-8000-0000000000aa",
    instructions: null,
    now: new Date(0),
    history: h.bundles,
    omitted: h.omitted,
    userMessage: "now",
    toolset: resolveToolSet({ catalog: sealCatalog(), rules: [], interactive: false, id: "t" }),
    window: 32768,
    budget: 28672,
    modelId: "m",
  };
}

Deno.test("exactly 256 Turns leave no receipt; the 257th leaves one for the oldest", () => {
  const db = dbWithTurns(HISTORY_TURNS_READ_MAX);
  const at = readHistory(db, CONV);
  assertEquals([at.bundles.length, at.omitted], [HISTORY_TURNS_READ_MAX, null]);
  bulkTurns(db, CONV, 1);
  const ids = idsBySeq(db);
  const past = readHistory(db, CONV);
  assertEquals(past.bundles.length, HISTORY_TURNS_READ_MAX);
  assertEquals(past.bundles[0].turnId, ids[1]);
  assertEquals(past.omitted?.count, 1);
  assertEquals([past.omitted?.first_turn_id, past.omitted?.last_turn_id], [ids[0], ids[0]]);
  assertEquals(past.omitted?.policy, HISTORY_READ_POLICY_ID);
  db.close();
});

Deno.test("the receipt counts only completed Turns and is bound to their ids in order", () => {
  const db = dbWithTurns(HISTORY_TURNS_READ_MAX + 5);
  const ids = idsBySeq(db);
  // A failed Turn among the omitted ones never counts (it never reaches the model) [CV-5].
  db.prepare("UPDATE turns SET state = 'failed', assistant_message = NULL WHERE id = ?")
    .run(ids[2]);
  const h = readHistory(db, CONV);
  assertEquals(h.omitted?.count, 4);
  assertEquals([h.omitted?.first_turn_id, h.omitted?.last_turn_id], [ids[0], ids[4]]);
  assertEquals(
    h.omitted?.digest,
    omittedHistoryReceipt(CONV, [ids[0], ids[1], ids[3], ids[4]])?.digest,
  );
  assertNotEquals(
    h.omitted?.digest,
    omittedHistoryReceipt(CONV, [ids[1], ids[0], ids[3], ids[4]])?.digest,
  );
  assertEquals(omittedHistoryReceipt(CONV, []), null);
  // Content-free: no message text anywhere in the receipt.
  assert(!JSON.stringify(h.omitted).includes("message"), JSON.stringify(h.omitted));
  db.close();
});

Deno.test("the plan digest covers the receipt and the model sees only its count and digest", () => {
  const db = dbWithTurns(HISTORY_TURNS_READ_MAX + 2);
  const h = readHistory(db, CONV);
  const withReceipt = compileContextPlan(inputs(h));
  const without = compileContextPlan({ ...inputs(h), omitted: null });
  assertNotEquals(withReceipt.digest, without.digest);
  const a = admit(withReceipt, { exchanges: [], narrowed: false });
  assert(a.ok);
  const system = a.messages[0].content;
  assert(system.includes("2 older completed turn(s)"), system);
  assert(system.includes(h.omitted!.digest), system);
  const all = JSON.stringify(a.messages);
  assert(!all.includes('"message 1"') && !all.includes('"answer 2"'), "omitted text sent");
  assert(all.includes('"message 3"'), "oldest read Turn missing");
  db.close();
});

Deno.test("inspection shows the omitted-history receipt with a keyed digest, never text", () => {
  const db = dbWithTurns(HISTORY_TURNS_READ_MAX + 3);
  const h = readHistory(db, CONV);
  const key = createInspectionKey();
  const i = inspectPlan(compileContextPlan(inputs(h)), key);
  assertEquals(i.history.bundles, HISTORY_TURNS_READ_MAX);
  assertEquals(i.history.omitted, {
    count: 3,
    first_turn_id: h.omitted!.first_turn_id,
    last_turn_id: h.omitted!.last_turn_id,
    policy: HISTORY_READ_POLICY_ID,
    receipt: key.keyed(h.omitted!.digest),
  });
  assertEquals(i.sections.find((s) => s.name === "history")?.truncation, "history_read_bound");
  assert(!JSON.stringify(i).includes(h.omitted!.digest), "unkeyed digest leaked");
  const none = inspectPlan(compileContextPlan({ ...inputs(h), omitted: null }), key);
  assertEquals(none.history.omitted, null);
  assertEquals(none.sections.find((s) => s.name === "history")?.truncation, null);
  db.close();
});
