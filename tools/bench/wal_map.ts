/**
 * Where a Turn's WAL frames go [PF-4]: runs a few Turns against a real server
 * (scripted model, pooled Worker), checkpoints the Agent database (TRUNCATE),
 * runs one more Turn, then parses the WAL frame by frame and maps each page to
 * its b-tree with `dbstat`, per transaction. Deterministic, unlike
 * `/proc/<pid>/io` (docs/performance.md, "Disk bytes per Turn").
 *
 * With a second argument N > 1 it maps N consecutive Turns of one Conversation instead (after 20
 * short Turns in two others, as the bench runs them, auto-checkpoint off): the frames of each
 * Turn (three commits each) and each b-tree's average per Turn. Pages that no b-tree holds at
 * the end (freed again within the window) count as "(freed)".
 *
 * Run: ./node_modules/deno/deno run --config deno.json -A tools/bench/wal_map.ts [words] [turns]
 */
import { DatabaseSync } from "node:sqlite";
import { wordsAnswer } from "../fake_ollama/scenarios.ts";
import { newConversation, readSse, startRunHarness, submit } from "../../tests/helpers/runs.ts";

const words = Number(Deno.args[0] ?? 20);
const turns = Number(Deno.args[1] ?? 1);

const h = await startRunHarness({ args: ["--worker-pool", "1"] });
const path = `${h.server.home}/data/agents/${h.agent}/state.sqlite`;
async function turn(conv: string): Promise<void> {
  h.ollama.enqueue(wordsAnswer(words));
  const r = await submit(h, conv, "benchmark question");
  if (r.status !== 202) throw new Error(`submit ${r.status}`);
  await readSse(h, r.body.run_id, {
    until: (f) => f.event === "run.completed" || f.event === "run.failed",
  });
}

/** The WAL's frames as b-tree names, one map per committed transaction. */
function mapWal(db: DatabaseSync): { pageSize: number; perTx: Map<string, number>[] } {
  const wal = Deno.readFileSync(`${path}-wal`);
  const pageSize = new DataView(wal.buffer).getUint32(8);
  const names = new Map<number, string>();
  for (const r of db.prepare("SELECT name, pageno FROM dbstat").all()) {
    const row = r as { name: string; pageno: number };
    names.set(row.pageno, row.name);
  }
  const perTx: Map<string, number>[] = [new Map()];
  for (let off = 32; off + 24 + pageSize <= wal.length; off += 24 + pageSize) {
    const dv = new DataView(wal.buffer, off);
    const page = dv.getUint32(0);
    const name = page === 1
      ? "(page 1)"
      : names.get(page) ?? (turns > 1 ? "(freed)" : `(page ${page})`);
    const m = perTx.at(-1)!;
    m.set(name, (m.get(name) ?? 0) + 1);
    if (dv.getUint32(4) !== 0) perTx.push(new Map()); // a commit frame ends the transaction
  }
  perTx.pop();
  return { pageSize, perTx };
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

try {
  if (turns > 1) {
    for (let k = 0; k < 2; k++) {
      const c = await newConversation(h);
      for (let i = 0; i < 10; i++) {
        h.ollama.enqueue(wordsAnswer(20));
        const r = await submit(h, c, "benchmark question");
        if (r.status !== 202) throw new Error(`submit ${r.status}`);
        await readSse(h, r.body.run_id, {
          until: (f) => f.event === "run.completed" || f.event === "run.failed",
        });
      }
    }
  }
  const conv = await newConversation(h);
  if (turns === 1) { for (let i = 0; i < 6; i++) await turn(conv); }
  const db = new DatabaseSync(path);
  try {
    if (turns > 1) db.exec("PRAGMA wal_autocheckpoint = 0");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    for (let i = 0; i < turns; i++) await turn(conv);
    const { pageSize, perTx } = mapWal(db);
    if (turns === 1) {
      let total = 0;
      perTx.forEach((m, i) => {
        const n = sum(m);
        total += n;
        const parts = [...m.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v}`);
        console.log(`transaction ${i + 1} (${n} frames): ${parts.join(" ")}`);
      });
      console.log(`${total} frames of ${pageSize} B pages for a ${words}-word answer`);
    } else {
      const per: number[] = [];
      const all = new Map<string, number>();
      for (let t = 0; t + 3 <= perTx.length; t += 3) {
        per.push(perTx.slice(t, t + 3).reduce((a, m) => a + sum(m), 0));
        for (const m of perTx.slice(t, t + 3)) {
          for (const [k, v] of m) all.set(k, (all.get(k) ?? 0) + v);
        }
      }
      const avg = [...all.entries()].sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k}=${(v / per.length).toFixed(1)}`);
      const median = [...per].sort((a, b) => a - b)[Math.floor(per.length / 2)];
      console.log(`frames per Turn (${words}-word answers): ${per.join(" ")} (median ${median})`);
      console.log(`per Turn, by b-tree: ${avg.join(" ")}`);
    }
  } finally {
    db.close();
  }
} finally {
  await h.close();
}
