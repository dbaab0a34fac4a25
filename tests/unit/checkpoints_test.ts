/**
 * Checkpoint bounds and the rewind plan [TL-11], on a real SQLite database
 * migrated like an Agent's: replaced content is kept up to 1 MiB per file
 * (at the limit kept, one byte past recorded as `too_large` with no bytes);
 * the per-Agent bound expires the oldest kept checkpoint first, keeping the
 * row so the plan can say `expired`; the plan restores from the earliest
 * checkpoint of a path and refuses a path that is not what the last mutation
 * left.
 */
import { DatabaseSync } from "node:sqlite";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { applyMigrations } from "../../runtime/store/migrate.ts";
import {
  checkpointBytes,
  type CheckpointRow,
  checkpointsFrom,
  keptBytes,
  recordCheckpoints,
} from "../../runtime/store/checkpoint_store.ts";
import { beforeOf, checkpointOf } from "../../runtime/checkpoints/record.ts";
import { historiesOf, planPath } from "../../runtime/checkpoints/rewind_plan.ts";
import { CHECKPOINT_FILE_MAX_BYTES } from "../../runtime/limits.ts";
import { assertEquals, assertThrows } from "../helpers/assert.ts";

const CONV = "00000000-0000-4000-8000-0000000000c1";

function stateDb(): { db: DatabaseSync; run(seq: number): string } {
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  applyMigrations(db, AGENT_MIGRATIONS);
  db.prepare(
    "INSERT INTO conversations (id, title, revision, created_at, updated_at) VALUES (?, 't', 0, 0, 0)",
  ).run(CONV);
  return {
    db,
    run(seq: number): string {
      const turn = crypto.randomUUID();
      const run = crypto.randomUUID();
      db.prepare(
        `INSERT INTO turns (id, conversation_id, seq, state, user_message, created_at, run_id)
         VALUES (?, ?, ?, 'completed', 'm', 0, ?)`,
      ).run(turn, CONV, seq, run);
      db.prepare(
        `INSERT INTO runs (id, conversation_id, turn_id, state, model_id, started_summary,
           last_digest, created_at) VALUES (?, ?, ?, 'completed', 'm', '{}', 'x', 0)`,
      ).run(run, CONV, turn);
      return run;
    },
  };
}

const after = { digest: "d".repeat(64), identity: { dev: "1:2", ino: "3" } };
const id = (x: { dev: string; ino: string }) => ({ ...x, size: 0, mtime_ns: "0", ctime_ns: "0" });

function record(
  db: DatabaseSync,
  runId: string,
  path: string,
  bytes: Uint8Array | null,
  max = 1e9,
) {
  return recordCheckpoints(db, {
    runId,
    callId: "c1",
    toolId: "file/write",
    entries: [checkpointOf(path, bytes, { digest: after.digest, identity: id(after.identity) })],
    maxBytes: max,
    now: 1,
  });
}

Deno.test("replaced content is kept at 1 MiB and recorded as too_large one byte past it", () => {
  const { db, run } = stateDb();
  const r = run(1);
  const at = new Uint8Array(CHECKPOINT_FILE_MAX_BYTES).fill(0x61);
  const past = new Uint8Array(CHECKPOINT_FILE_MAX_BYTES + 1).fill(0x62);
  assertEquals(beforeOf(at).state, "kept");
  assertEquals(beforeOf(past), { state: "too_large", size: CHECKPOINT_FILE_MAX_BYTES + 1 });
  assertEquals(beforeOf(null), { state: "absent" });
  record(db, r, "at.txt", at);
  record(db, r, "past.txt", past);
  record(db, r, "new.txt", null);
  const rows = checkpointsFrom(db, CONV, 1);
  assertEquals(rows.map((x) => `${x.path}:${x.before_state}`), [
    "at.txt:kept",
    "past.txt:too_large",
    "new.txt:absent",
  ]);
  assertEquals(checkpointBytes(db, rows[0].seq), at);
  assertEquals(checkpointBytes(db, rows[1].seq), null);
  assertEquals(keptBytes(db), CHECKPOINT_FILE_MAX_BYTES);
  // The schema refuses a kept blob past the bound even if a caller tried.
  assertThrows(() =>
    db.prepare(
      `INSERT INTO checkpoints (conversation_id, turn_id, run_id, call_id, tool_id, path,
         before_state, before_bytes, before_size, created_at)
       SELECT conversation_id, turn_id, id, 'c', 't', 'x', 'kept', ?, 0, 0 FROM runs LIMIT 1`,
    ).run(past)
  );
});

Deno.test("the per-Agent bound keeps content at the limit and expires the oldest one past it", () => {
  const { db, run } = stateDb();
  const ten = new Uint8Array(10);
  const r1 = run(1);
  const r2 = run(2);
  assertEquals(record(db, r1, "a", ten, 30), 0);
  assertEquals(record(db, r1, "b", ten, 30), 0);
  assertEquals(record(db, r2, "c", ten, 30), 0);
  assertEquals(keptBytes(db), 30);
  assertEquals(record(db, r2, "d", new Uint8Array(1), 30), 1);
  const rows = checkpointsFrom(db, CONV, 1);
  assertEquals(rows.map((x) => `${x.path}:${x.before_state}`), [
    "a:expired",
    "b:kept",
    "c:kept",
    "d:kept",
  ]);
  assertEquals(keptBytes(db), 21);
  assertEquals(checkpointBytes(db, rows[0].seq), null);
  // Only the Turns from the rewound one on are read.
  assertEquals(checkpointsFrom(db, CONV, 2).map((x) => x.path), ["c", "d"]);
});

const row = (
  seq: number,
  path: string,
  state: CheckpointRow["before_state"],
  digest: string | null,
) =>
  ({
    seq,
    turn_id: "t",
    path,
    before_state: state,
    before_bytes: null,
    after_digest: digest,
    after_dev: digest === null ? null : "1:2",
    after_ino: digest === null ? null : String(seq),
  }) satisfies CheckpointRow;

Deno.test("the plan restores from a path's earliest checkpoint and checks its latest", () => {
  const hs = historiesOf([
    row(1, "x", "kept", "d1"),
    row(2, "y", "absent", "d2"),
    row(3, "x", "kept", "d3"),
    row(4, "z", "expired", "d4"),
    row(5, "w", "kept", null),
  ]);
  assertEquals(hs.map((h) => `${h.path}:${h.first.seq}-${h.last.seq}`), [
    "w:5-5",
    "x:1-3",
    "y:2-2",
    "z:4-4",
  ]);
  const [w, x, y, z] = hs;
  const file = (ino: string, digest: string) => ({
    kind: "file" as const,
    dev: "1:2",
    ino,
    digest,
  });
  const cases: [typeof hs[number], Parameters<typeof planPath>[1], string][] = [
    [x, file("3", "d3"), "restore:revert"],
    [x, file("3", "d1"), "restore:changed_since"], // other content
    [x, file("9", "d3"), "restore:changed_since"], // same content, another inode
    [x, { kind: "absent" }, "restore:changed_since"],
    [x, { kind: "other" }, "restore:changed_since"],
    [y, file("2", "d2"), "delete:revert"],
    [z, file("4", "d4"), "restore:expired"],
    [w, { kind: "absent" }, "restore:revert"], // the Turns deleted it: restore it
    [w, file("5", "d5"), "restore:changed_since"], // something appeared since
  ];
  for (const [h, cur, want] of cases) {
    const p = planPath(h, cur);
    assertEquals(`${p.action}:${p.status}`, want, `${h.path} ${JSON.stringify(cur)}`);
  }
});
