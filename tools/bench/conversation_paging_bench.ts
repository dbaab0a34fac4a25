/**
 * Benchmark [CV-3]: a Conversation with 10,000 Turns (next to a second one of
 * the same size) in a real per-Agent state.sqlite on a temp home. Measures the
 * real ConversationService detail call (cursor decode + page SQL + encode) for
 * the first page, a deep page and every page of a full walk, and proves each
 * page reads only its own rows: the page SQL is re-run with a counting SQL
 * function in its WHERE clause, which SQLite evaluates once per row it visits.
 * Also prints the EXPLAIN QUERY PLAN (an index SEARCH, no sort).
 *
 * Run: ./node_modules/deno/deno run -A tools/bench/conversation_paging_bench.ts
 */
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { createAgentDbPool } from "../../runtime/agents/db_pool.ts";
import { createAgentService } from "../../runtime/agents/service.ts";
import { NO_FAULTS } from "../../runtime/agents/test_fault.ts";
import { createCursorCodec } from "../../runtime/conversations/cursor.ts";
import { createConversationService } from "../../runtime/conversations/service.ts";
import { ensureHomeSkeleton, resolveHome } from "../../runtime/home.ts";
import { TURN_PAGE_DEFAULT } from "../../runtime/limits.ts";
import type { Logger } from "../../runtime/log.ts";
import { PAGE_TURNS_SQL } from "../../runtime/store/agent_state_store.ts";
import { type DatabaseSync, openDatabase } from "../../runtime/store/sqlite.ts";
import { measure } from "./report.ts";

const TURNS = 10_000;
const MESSAGE_BYTES = 400;

const silent: Logger = { info() {}, warn() {}, error() {}, flush() {}, close() {} };

function fill(db: DatabaseSync, conversationId: string): void {
  const text = "x".repeat(MESSAGE_BYTES);
  db.exec("BEGIN IMMEDIATE");
  const ins = db.prepare(
    `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                        created_at, finished_at) VALUES (?, ?, ?, 'completed', ?, ?, ?, ?)`,
  );
  for (let seq = 1; seq <= TURNS; seq++) {
    ins.run(crypto.randomUUID(), conversationId, seq, text, text, seq, seq + 1);
  }
  db.exec("COMMIT");
}

/** Rows SQLite visits for one page: the counter sits in WHERE, so every visited row counts. */
function rowsVisited(db: DatabaseSync, conversationId: string, beforeSeq: number | null): number {
  let visited = 0;
  db.function("bench_visit", { deterministic: false, varargs: true }, () => {
    visited++;
    return 1;
  });
  const sql = PAGE_TURNS_SQL.replace("AND seq < ?", "AND seq < ? AND bench_visit(seq)");
  db.prepare(sql).all(conversationId, beforeSeq ?? Number.MAX_SAFE_INTEGER, TURN_PAGE_DEFAULT + 1);
  return visited;
}

function ms(start: number): number {
  return Math.round((performance.now() - start) * 1000) / 1000;
}

const dir = Deno.makeTempDirSync({ prefix: "ab-bench-" });
Deno.chmodSync(dir, 0o700);
try {
  const home = resolveHome(dir);
  ensureHomeSkeleton(home);
  const registryDb = openDatabase({
    root: home.root,
    relative: "data/agent-registry.sqlite",
    migrations: REGISTRY_MIGRATIONS,
  });
  const pool = createAgentDbPool(home.root);
  const agents = createAgentService({
    registryDb,
    pool,
    capsule: { root: home.root },
    log: silent,
    faults: NO_FAULTS,
  });
  agents.recover();
  const conversations = createConversationService({ agents, cursors: createCursorCodec() });
  const agent = agents.create("bench").id;
  const target = conversations.create(agent, "10k turns").id;
  const neighbour = conversations.create(agent, "neighbour").id;
  const db = pool.get(agent);
  const t0 = performance.now();
  fill(db, target);
  fill(db, neighbour);
  console.log(`seeded 2 × ${TURNS} Turns (${MESSAGE_BYTES} B messages) in ${ms(t0)} ms`);

  const plan = db.prepare(`EXPLAIN QUERY PLAN ${PAGE_TURNS_SQL}`).all(target, 1, 33) as {
    detail: string;
  }[];
  console.log(`plan: ${plan.map((p) => p.detail).join(" | ")}`);

  let start = performance.now();
  let page = conversations.detail(agent, target);
  console.log(
    `first page: ${ms(start)} ms, turns ${page.turns[0].seq}..${page.turns.at(-1)!.seq}, ` +
      `rows visited ${rowsVisited(db, target, null)}`,
  );

  const times: number[] = [];
  let deep: { ms: number; first: number; last: number; visited: number } | null = null;
  let pages = 1;
  while (page.page.next_before_cursor) {
    const before = page.page.next_before_cursor;
    const boundary = page.turns[0].seq;
    start = performance.now();
    page = conversations.detail(agent, target, { before });
    const took = ms(start);
    times.push(took);
    pages++;
    if (!deep && page.turns[0].seq <= TURNS / 2) {
      deep = {
        ms: took,
        first: page.turns[0].seq,
        last: page.turns.at(-1)!.seq,
        visited: rowsVisited(db, target, boundary),
      };
    }
  }
  measure("paging", "deep page of 10,000 Turns", deep!.ms, "ms");
  measure("paging", "rows visited by the deep page", deep!.visited, "rows");
  console.log(
    `deep page: ${deep!.ms} ms, turns ${deep!.first}..${deep!.last}, rows visited ${deep!.visited}`,
  );
  console.log(
    `last page: turns ${page.turns[0].seq}..${page.turns.at(-1)!.seq}, rows visited ` +
      rowsVisited(db, target, page.turns.at(-1)!.seq + 1),
  );
  // Contrast that shows the counter works: an unpaged read visits the whole Conversation.
  let unbounded = 0;
  db.function("bench_all", { deterministic: false, varargs: true }, () => {
    unbounded++;
    return 1;
  });
  db.prepare("SELECT id FROM turns WHERE conversation_id = ? AND bench_all(seq)").all(target);
  console.log(`contrast: an unpaged read of the Conversation visits ${unbounded} rows`);
  times.sort((a, b) => a - b);
  measure("paging", "full walk, median page", times[times.length >> 1], "ms");
  console.log(
    `full walk: ${pages} pages, median ${times[times.length >> 1]} ms, max ${times.at(-1)} ms`,
  );
  pool.closeAll();
  registryDb.close();
} finally {
  Deno.removeSync(dir, { recursive: true });
}
