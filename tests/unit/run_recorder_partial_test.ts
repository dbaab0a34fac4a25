/**
 * [#18, CV-5] The RunRecorder keeps the visible text of the answer block still
 * open and writes it with a failed/cancelled terminal: at most
 * PARTIAL_TEXT_MAX_BYTES, cut on a code point; a block that completed (the lead
 * text before a tool call) is journaled instead and not kept again; a
 * completed Turn keeps none.
 */
import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { genesisDigest, RunJournal } from "../../runtime/events/journal.ts";
import { LiveHub } from "../../runtime/events/live_hub.ts";
import { PARTIAL_TEXT_MAX_BYTES } from "../../runtime/limits.ts";
import type { Logger } from "../../runtime/log.ts";
import { beginTurn, getConversation } from "../../runtime/store/agent_state_store.ts";
import { insertRun } from "../../runtime/store/run_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { RunRecorder, type Terminal } from "../../runtime/runs/run_recorder.ts";
import { makeTempHome } from "../helpers/home.ts";

const AGENT = "44444444-4444-4444-8444-444444444444";
const CONV = "55555555-5555-4555-8555-555555555555";
const D = `sha256:${"a".repeat(64)}`;
const log: Logger = { info() {}, warn() {}, error() {}, flush() {}, close() {} };
const bytes = (s: string) => new TextEncoder().encode(s).length;

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

/** Runs one Turn: block 1 streams `deltas` (completing it when `complete1`), then `t`. */
function turnWith(deltas: string[], t: Terminal, opts: { lead?: string } = {}): string | null {
  const db = freshDb();
  const hub = new LiveHub();
  const runId = crypto.randomUUID();
  const turnId = crypto.randomUUID();
  beginTurn(db, {
    conversationId: CONV,
    expectedRevision: getConversation(db, CONV)!.revision,
    turnId,
    runId,
    userMessage: "hi",
    now: 0,
  });
  insertRun(db, {
    id: runId,
    conversation_id: CONV,
    turn_id: turnId,
    model_id: "m",
    started_summary: "{}",
    last_digest: genesisDigest(runId),
    created_at: 0,
  });
  const journal = new RunJournal({ run_id: runId, agent_id: AGENT, conversation_id: CONV });
  const rec = new RunRecorder({
    db,
    journal,
    live: hub.create(runId, AGENT),
    turnId,
    log,
    now: () => 5,
    startedAt: 0,
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
  const request = (call: number) =>
    rec.durable("model.request.started", {
      call,
      model_id: "m",
      phase: "tools",
      recovery: 0,
      token_estimate: 1,
      request_bytes: 1,
      digest: D,
      collapsed_bundles: 0,
    });
  let block = 1;
  if (opts.lead !== undefined) {
    request(block);
    rec.durable("assistant.block.started", { block }, undefined, { defer: true });
    rec.ephemeral("assistant.block.delta", { block, text: opts.lead });
    rec.durable("assistant.block.completed", {
      block,
      text: opts.lead,
      bytes: bytes(opts.lead),
      digest: D,
      reason: "stop",
    });
    rec.durable("model.response.finished", {
      call: block,
      outcome: "completed",
      error_code: null,
      input_tokens: 1,
      output_tokens: 1,
      usage_complete: true,
      elapsed_ms: 1,
      attempts: 1,
    });
    block++;
  }
  request(block);
  rec.durable("assistant.block.started", { block }, undefined, { defer: true });
  for (const text of deltas) rec.ephemeral("assistant.block.delta", { block, text });
  rec.durable(
    "model.response.finished",
    {
      call: block,
      outcome: t.state === "cancelled"
        ? "cancelled"
        : t.state === "failed"
        ? "failed"
        : "completed",
      error_code: t.state === "failed" ? t.code : null,
      input_tokens: 1,
      output_tokens: 1,
      usage_complete: true,
      elapsed_ms: 1,
      attempts: 1,
    },
    undefined,
    { defer: true },
  );
  ok(rec.finish(t), "the terminal was written");
  const row = db.prepare("SELECT partial_text FROM turns WHERE id = ?").get(turnId) as {
    partial_text: string | null;
  };
  db.close();
  return row.partial_text;
}

const cancelled: Terminal = { state: "cancelled", reason: "user" };

/** Non-repeating ASCII of exactly `n` bytes, in 1 KiB deltas. */
function prose(n: number): string[] {
  let s = "";
  for (let i = 0; s.length < n; i++) s += `w${i}x${(i * 7919) % 10007} `;
  return s.slice(0, n).match(/[\s\S]{1,1024}/g)!;
}

Deno.test("a stopped Turn keeps its open block's text exactly at the 12 KiB bound", () => {
  const deltas = prose(PARTIAL_TEXT_MAX_BYTES);
  assertEquals(turnWith(deltas, cancelled), deltas.join(""));
});

Deno.test("one byte past the bound the kept text is cut before the character that does not fit", () => {
  const deltas = [...prose(PARTIAL_TEXT_MAX_BYTES - 1), "é and more"];
  const kept = turnWith(deltas, { state: "failed", code: "model_unavailable", stage: "model" })!;
  assertEquals(bytes(kept), PARTIAL_TEXT_MAX_BYTES - 1);
  assertEquals(kept, deltas.slice(0, -1).join(""));
});

Deno.test("a completed lead block is journaled, not kept again; only the open block's text is", () => {
  assertEquals(turnWith(["still typing"], cancelled, { lead: "Let me look." }), "still typing");
  assertEquals(turnWith([], cancelled, { lead: "Let me look." }), null, "nothing open: nothing");
  assertEquals(turnWith([" ", "\n"], cancelled), null, "whitespace only is nothing shown");
});

Deno.test("a completed Turn keeps no partial text", () => {
  const done: Terminal = {
    state: "completed",
    answer: { block: 1, text: "All of it.", reason: "stop" },
    modelCalls: 1,
    toolCalls: 0,
    blockOpen: true,
  };
  assertEquals(turnWith(["All of it."], done), null);
});
