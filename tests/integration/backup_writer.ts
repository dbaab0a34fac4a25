/**
 * A concurrent writer for the backup consistency test (run as a child
 * process): appends Turns to one Conversation of a real per-Agent
 * state.sqlite, three per transaction, and moves the Conversation's revision
 * to the transaction number in the same transaction. Any committed state
 * therefore has exactly 3 × revision Turns with seq 1..3 × revision.
 * Prints the number of committed transactions after each commit and stops
 * when its stdin closes (or after a fixed bound).
 *
 * Usage: backup_writer.ts HOME AGENT_ID CONVERSATION_ID
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { openDatabase, transaction } from "../../runtime/store/sqlite.ts";

const MAX_TRANSACTIONS = 20_000;
const [home, agent, conv] = Deno.args;
const db = openDatabase({
  root: home,
  relative: `data/agents/${agent}/state.sqlite`,
  migrations: AGENT_MIGRATIONS,
  create: false,
});
let stop = false;
(async () => {
  for await (const _ of Deno.stdin.readable) { /* closed by the test */ }
  stop = true;
})();
const ins = db.prepare(
  `INSERT INTO turns (id, conversation_id, seq, state, user_message, assistant_message,
                      created_at, finished_at)
   VALUES (?, ?, ?, 'completed', ?, ?, ?, ?)`,
);
const bump = db.prepare("UPDATE conversations SET revision = ? WHERE id = ?");
const out = new TextEncoder();
for (let i = 1; i <= MAX_TRANSACTIONS && !stop; i++) {
  transaction(db, () => {
    for (let k = 1; k <= 3; k++) {
      const seq = 3 * (i - 1) + k;
      ins.run(crypto.randomUUID(), conv, seq, `m${seq}`, "x".repeat(200), seq, seq);
    }
    bump.run(i, conv);
  });
  await Deno.stdout.write(out.encode(`${i}\n`));
  // Yield so the stdin watcher runs; the loop is bounded by MAX_TRANSACTIONS.
  await new Promise((r) => setTimeout(r, 0));
}
db.close();
