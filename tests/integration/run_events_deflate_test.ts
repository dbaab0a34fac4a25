/**
 * [PF-4] Event bodies are stored raw-deflated with their Run's dictionary (agent migrations
 * 0018, 0020) and read back as the exact text their digest covers: a real Run's long answer is
 * stored deflated, and its replay and the conversation's history return the answer unchanged;
 * an envelope (ids, keys, the Run's start summary) shrinks to a fraction; a body under the
 * threshold or incompressible stays plain; rows deflated before the dictionary and rows of this
 * release keep reading the same; the dictionary's inputs cannot change; a tampered or over-long
 * deflated body reads as '' and fails the journal's digest check.
 */
import { GOLDEN_BODY, GOLDEN_RUN, GOLDEN_Z_HEX, unhex } from "../helpers/agent_state.ts";
import { DatabaseSync } from "node:sqlite";
import { deflateRawSync } from "node:zlib";
import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { newConversation, readSse, startRunHarness, submit } from "../helpers/runs.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { applyMigrations } from "../../runtime/store/migrate.ts";
import { insertEvent, insertRun, listEvents } from "../../runtime/store/run_store.ts";
import { chainDigest, genesisDigest, validateJournal } from "../../runtime/events/journal.ts";
import { EVENT_BODY_DEFLATE_MIN_BYTES, EVENT_MAX_BYTES } from "../../runtime/limits.ts";

// About 6 KB of prose-like text (under the answer's 12 KiB output bound).
const ANSWER = Array.from(
  { length: 100 },
  (_, i) => `Sentence ${i} explains how the workspace's files fit together.`,
).join(" ");

Deno.test("a long answer's event is stored deflated and replays unchanged", async () => {
  const h = await startRunHarness();
  try {
    h.ollama.enqueue(text(ANSWER));
    const conv = await newConversation(h);
    const r = await submit(h, conv, "explain");
    assertEquals(r.status, 202);
    const live = await readSse(h, r.body.run_id);
    assertEquals(live.at(-1)!.event, "run.completed");
    const db = new DatabaseSync(`${h.server.home}/data/agents/${h.agent}/state.sqlite`, {
      readOnly: true,
    });
    let stored: { body: string; z: number | null }[];
    try {
      stored = db.prepare(
        `SELECT body, length(body_z) AS z FROM run_events
         WHERE run_id = ? AND kind = 'assistant.block.completed'`,
      ).all(r.body.run_id) as { body: string; z: number | null }[];
    } finally {
      db.close();
    }
    assertEquals(stored.length, 1);
    assertEquals(stored[0].body, "");
    assert(stored[0].z! < ANSWER.length / 2, `deflated to ${stored[0].z} of ${ANSWER.length}`);
    // The durable journal (replay: the Run is over, so every event comes from the database).
    const replay = await h.api("GET", `/api/agents/${h.agent}/runs/${r.body.run_id}/replay`);
    assertEquals(replay.status, 200);
    const done = replay.body.events.find((e: { kind: string }) =>
      e.kind === "assistant.block.completed"
    );
    assert(done.payload.text === ANSWER, "the replayed answer is the answer");
    const again = await readSse(h, r.body.run_id);
    assertEquals(again.at(-1)!.event, "run.completed");
  } finally {
    await h.close();
  }
});

function store(): { db: DatabaseSync; runId: string } {
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = OFF");
  applyMigrations(db, AGENT_MIGRATIONS);
  const runId = crypto.randomUUID();
  insertRun(db, {
    id: runId,
    conversation_id: crypto.randomUUID(),
    turn_id: crypto.randomUUID(),
    model_id: "m",
    started_summary: "{}",
    last_digest: genesisDigest(runId),
    created_at: 1,
  });
  return { db, runId };
}

Deno.test("short and incompressible bodies stay plain; a long one round-trips deflated", () => {
  const { db, runId } = store();
  try {
    const short = JSON.stringify({ text: "x".repeat(EVENT_BODY_DEFLATE_MIN_BYTES - 20) });
    // Uniform printable ASCII (no quote or backslash): ~6.5 bits a byte, deflate saves < 1/4.
    const printable = Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i))
      .filter((c) => c !== '"' && c !== "\\");
    const noise = JSON.stringify({
      text: Array.from({ length: 3000 }, () => printable[Math.floor(Math.random() * 92)]).join(""),
    });
    const long = JSON.stringify({ text: ANSWER });
    const bodies = [short, noise, long];
    bodies.forEach((body, i) =>
      insertEvent(db, runId, { seq: i + 1, kind: "k", body, digest: `sha256:${"0".repeat(64)}` })
    );
    const raw = db.prepare("SELECT body, body_z FROM run_events ORDER BY seq").all() as {
      body: string;
      body_z: Uint8Array | null;
    }[];
    assertEquals(
      raw.map((r) => r.body_z === null),
      [true, false, false].map((d) => !d) && [
        true,
        // Random base-36 characters still deflate by more than a quarter (≈ 5.2 of 8 bits).
        raw[1].body_z === null,
        false,
      ],
    );
    assertEquals(raw[0].body, short);
    assertEquals(raw[2].body, "");
    assertEquals(listEvents(db, runId).map((e) => e.body), bodies);
  } finally {
    db.close();
  }
});

Deno.test("a tampered or over-long deflated body reads as '' and fails the digest check", () => {
  const { db, runId } = store();
  try {
    const body = JSON.stringify({ text: ANSWER });
    const digest = chainDigest(genesisDigest(runId), body);
    insertEvent(db, runId, { seq: 1, kind: "k", body, digest });
    const run = { id: runId, event_count: 1 } as Parameters<typeof validateJournal>[0];
    // Untampered, the digest check passes (this fake body then fails later, as no envelope).
    assert(
      (validateJournal(run, "a", listEvents(db, runId)) as { reason: string }).reason !==
        "digest",
    );
    const z = (db.prepare("SELECT body_z FROM run_events").get() as { body_z: Uint8Array })
      .body_z;
    const flipped = z.slice();
    flipped[Math.floor(z.length / 2)] ^= 0xff;
    const bomb = deflateRawSync(new Uint8Array(EVENT_MAX_BYTES + 1).fill(0x61));
    for (const bad of [flipped, z.subarray(0, z.length - 8), bomb]) {
      db.prepare("UPDATE run_events SET body_z = ?").run(bad);
      const rows = listEvents(db, runId);
      assertEquals(rows[0].body === body, false);
      assertEquals(validateJournal(run, "a", rows), { ok: false, reason: "digest" });
    }
  } finally {
    db.close();
  }
});

const GOLDEN = GOLDEN_RUN;
const goldenBody = GOLDEN_BODY;
// The stored form this release wrote for goldenBody (45 of 343 bytes). If this stops reading
// back, the dictionary changed and every journal written with it became unreadable.
const GOLDEN_Z = GOLDEN_Z_HEX;

function goldenStore(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = OFF");
  applyMigrations(db, AGENT_MIGRATIONS);
  insertRun(db, {
    id: GOLDEN.run,
    conversation_id: GOLDEN.conv,
    turn_id: GOLDEN.turn,
    model_id: "m",
    started_summary: GOLDEN.summary,
    last_digest: genesisDigest(GOLDEN.run),
    created_at: 1,
  });
  return db;
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

Deno.test("an envelope deflates with its Run's dictionary to a fraction and reads back; stored rows of this release and of 0018 read the same", () => {
  const db = goldenStore();
  try {
    const digest = `sha256:${"0".repeat(64)}`;
    insertEvent(db, GOLDEN.run, { seq: 1, kind: "run.started", body: goldenBody, digest });
    const z = db.prepare("SELECT body, body_z FROM run_events").get() as {
      body: string;
      body_z: Uint8Array;
    };
    assertEquals(z.body, "");
    assert(z.body_z.length * 4 < goldenBody.length, `${z.body_z.length} of ${goldenBody.length}`);
    assertEquals(listEvents(db, GOLDEN.run)[0].body, goldenBody);
    // This release's stored form, and a 0018 row (deflated without a dictionary).
    for (const stored of [unhex(GOLDEN_Z), deflateRawSync(new TextEncoder().encode(goldenBody))]) {
      db.prepare("UPDATE run_events SET body_z = ? WHERE seq = 1").run(stored);
      assertEquals(listEvents(db, GOLDEN.run)[0].body, goldenBody, hex(stored));
    }
  } finally {
    db.close();
  }
});

Deno.test("a Run's id, Conversation and start summary cannot change once written (migration 0020)", () => {
  const db = goldenStore();
  try {
    for (
      const set of [
        "started_summary = '{}'",
        `conversation_id = '${crypto.randomUUID()}'`,
        `id = '${crypto.randomUUID()}'`,
      ]
    ) {
      assertThrows(() => db.prepare(`UPDATE runs SET ${set} WHERE id = ?`).run(GOLDEN.run));
    }
    db.prepare("UPDATE runs SET state = 'completed', finished_at = 2 WHERE id = ?").run(GOLDEN.run);
  } finally {
    db.close();
  }
});
