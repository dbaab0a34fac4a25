/**
 * A real per-Agent state database (temp home, all agent migrations) seeded
 * with one Conversation, one running Turn and its Run row — the fixture the
 * journal and run-store unit tests start from.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { genesisDigest, type RunJournal, type Staged } from "../../runtime/events/journal.ts";
import { insertRun } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { makeTempHome } from "./home.ts";

export const SEED_CONV = "55555555-5555-4555-8555-555555555555";
export const SEED_TURN = "66666666-6666-4666-8666-666666666666";
export const SEED_RUN = "77777777-7777-4777-8777-777777777777";

export function seededRunDb(): { db: DatabaseSync; home: string } {
  const home = makeTempHome();
  const db = openDatabase({ root: home, relative: "state.sqlite", migrations: AGENT_MIGRATIONS });
  db.prepare("INSERT INTO conversations (id, title, created_at, updated_at) VALUES (?, 't', 0, 0)")
    .run(SEED_CONV);
  db.prepare(
    "INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at) VALUES (?, ?, 1, 'running', 'hi', 0)",
  ).run(SEED_TURN, SEED_CONV);
  insertRun(db, {
    id: SEED_RUN,
    conversation_id: SEED_CONV,
    turn_id: SEED_TURN,
    model_id: "m",
    started_summary: "{}",
    last_digest: genesisDigest(SEED_RUN),
    created_at: 0,
  });
  return { db, home };
}

/**
 * One completed `file/read_text` call of call id `call-<i>` with a 32,000-byte result, staged on
 * `j` (not accepted): the unit of the durable-bytes bound tests, which add pairs until refused.
 */
export function stageLargeReadPair(j: RunJournal, i: number, digest: string): [Staged, Staged] {
  const req = j.stage("tool.call.requested", {
    call_id: `call-${i}`,
    tool_id: "file/read_text",
    args: { path: "a" },
    args_digest: digest,
  });
  const done = j.stage("tool.call.completed", {
    call_id: `call-${i}`,
    tool_id: "file/read_text",
    outcome: "ok",
    code: null,
    result: "r".repeat(32000),
    result_bytes: 32000,
    result_digest: digest,
    projection: "receipt",
    elapsed_ms: 1,
  }, req);
  return [req, done];
}

/**
 * A valid `run.started` payload for Turn `turnId`: plan `planId` of five sections, no tools, no
 * history, `digest` as both plan and toolset digest.
 */
export function runStartedPayload(turnId: string, planId: string, digest: string, modelId = "m") {
  return {
    turn_id: turnId,
    model_id: modelId,
    plan_id: planId,
    plan_digest: digest,
    toolset_digest: digest,
    tool_ids: [],
    section_count: 5,
    history_count: 0,
    window: 32768,
    budget: 28672,
    protocol_features: ["ipc-v2"],
  };
}
