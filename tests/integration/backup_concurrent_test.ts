/**
 * [OP-1] A backup taken while the server serves the home and another process
 * keeps committing to a live WAL database restores to exactly one committed state: integrity_check passes
 * and the Turn rows are a gap-free committed prefix (3 × revision rows, seq
 * 1..3 × revision) between what was committed when the backup started and
 * what was committed when the writer stopped.
 */
import { DatabaseSync } from "node:sqlite";
import { CONVERSATIONS_PER_AGENT_MAX } from "../../runtime/limits.ts";
import { insertConversation } from "../../runtime/store/agent_state_store.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { bulkTurns, openAgentState } from "../helpers/agent_state.ts";
import { makeTempHome } from "../helpers/home.ts";
import { DENO, REPO, RUN_FLAGS, startTestServer } from "../helpers/server.ts";
import { runCli, seedHome } from "./backup_fixture.ts";

/** Spawns the writer and tracks its latest committed transaction number. */
function startWriter(home: string, agent: string, conv: string) {
  const child = new Deno.Command(DENO, {
    args: [...RUN_FLAGS, `${REPO}/tests/integration/backup_writer.ts`, home, agent, conv],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
    env: { DENO_NO_UPDATE_CHECK: "1" },
  }).spawn();
  let committed = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const pump = (async () => {
    let buf = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop()!;
      if (lines.length) committed = Number(lines[lines.length - 1]);
      for (const w of waiters.splice(0)) {
        if (committed >= w.n) w.resolve();
        else waiters.push(w);
      }
    }
  })();
  return {
    committed: () => committed,
    reach: (n: number) =>
      committed >= n ? Promise.resolve() : new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
      }),
    async stop(): Promise<number> {
      await child.stdin.close();
      const status = await child.status;
      await pump;
      assertEquals(status.code, 0);
      return committed;
    },
  };
}

Deno.test("a backup during active writes restores to a consistent committed prefix", async () => {
  const home = makeTempHome();
  const restored = makeTempHome();
  try {
    const [agent] = seedHome(home);
    const conv = crypto.randomUUID();
    const db = openAgentState(home, agent.id);
    try {
      insertConversation(db, { id: conv, title: "load", now: 1 }, CONVERSATIONS_PER_AGENT_MAX);
      // Make the database large enough that the snapshot is not instantaneous.
      bulkTurns(db, agent.conversations[0], 20_000);
    } finally {
      db.close();
    }
    // The server serves the home meanwhile (it holds the registry and state databases open).
    const server = await startTestServer({ home });
    const writer = startWriter(home, agent.id, conv);
    let atStart = 0;
    let atEnd = 0;
    let final = 0;
    try {
      await writer.reach(20);
      atStart = writer.committed();
      const r = await runCli(["backup", "busy", "--home", home]);
      assertEquals(r.code, 0, r.stderr);
      atEnd = writer.committed();
    } finally {
      final = await writer.stop();
      assertEquals(await server.stop(), 0);
    }
    assert(atEnd > atStart, `the writer kept committing during the backup (${atStart}→${atEnd})`);

    const r = await runCli(["restore", `${home}/backups/busy.tar`, "--yes", "--home", restored]);
    assertEquals(r.code, 0, r.stderr);
    const snap = new DatabaseSync(`${restored}/data/agents/${agent.id}/state.sqlite`, {
      readOnly: true,
    });
    try {
      assertEquals(snap.prepare("PRAGMA integrity_check").all(), [{ integrity_check: "ok" }]);
      const { revision } = snap.prepare("SELECT revision FROM conversations WHERE id = ?").get(
        conv,
      ) as { revision: number };
      const rows = snap.prepare(
        "SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM turns WHERE conversation_id = ?",
      ).get(conv) as { n: number; lo: number; hi: number };
      assert(
        revision >= atStart && revision <= final,
        `snapshot revision ${revision} within [${atStart}, ${final}]`,
      );
      assertEquals([rows.n, rows.lo, rows.hi], [3 * revision, 1, 3 * revision]);
      const bulk = snap.prepare("SELECT count(*) AS n FROM turns WHERE conversation_id = ?").get(
        agent.conversations[0],
      ) as { n: number };
      assertEquals(bulk.n, 3 + 20_000);
    } finally {
      snap.close();
    }
  } finally {
    Deno.removeSync(home, { recursive: true });
    Deno.removeSync(restored, { recursive: true });
  }
});
