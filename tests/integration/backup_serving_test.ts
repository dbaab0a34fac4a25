/**
 * [OP-1, OP-2] Restore never runs under a live server: with the real server
 * holding the home lock, `restore --yes` (and the dry run) exits 3 with a
 * fixed message and leaves data/, backups/ and .runtime/recovery/ exactly as
 * they were; the server keeps serving. Once the server stops, the same
 * command succeeds.
 */
import { AppError } from "../../runtime/errors.ts";
import { restoreBackup } from "../../runtime/backup/restore.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { startTestServer } from "../helpers/server.ts";
import { runCli, treeSnapshot } from "./backup_fixture.ts";

Deno.test("restore is refused while a server holds the home, and allowed after it stops", async () => {
  const server = await startTestServer();
  const home = server.home;
  let stopped = false;
  try {
    const b = await runCli(["backup", "snap", "--home", home]);
    assertEquals(b.code, 0, b.stderr);
    const file = `${home}/backups/snap.tar`;
    // Only the server's own log and session files may change meanwhile.
    const watched = () => ({
      data: treeSnapshot(`${home}/data`),
      backups: treeSnapshot(`${home}/backups`),
      recovery: treeSnapshot(`${home}/.runtime/recovery`),
      runtime: [...Deno.readDirSync(`${home}/.runtime`)].map((e) => e.name).sort(),
    });
    const before = watched();

    for (const args of [["--yes"], []]) {
      const r = await runCli(["restore", file, ...args, "--home", home]);
      assertEquals(r.code, 3);
      assertEquals(
        r.stderr.trim(),
        "agent-builder restore: refused: a server is running for this home. Stop it first. " +
          "Nothing was changed.",
      );
      assertEquals(r.stdout, "");
    }
    let refused: unknown = null;
    try {
      restoreBackup({ root: home, file, apply: true });
    } catch (err) {
      refused = err;
    }
    assert(refused instanceof AppError && refused.code === "restore_refused", String(refused));
    assertEquals(watched(), before);
    const health = await fetch(`${server.url}/health`);
    assertEquals(health.status, 200);
    await health.body?.cancel();

    assertEquals(await server.stop(), 0);
    stopped = true;
    const ok = await runCli(["restore", file, "--yes", "--home", home]);
    assertEquals(ok.code, 0, ok.stderr);
    // The same files are back (database bytes may differ from the live files: snapshots).
    const names = (t: Record<string, string>) =>
      Object.keys(t).filter((k) => !/-(wal|shm)$/.test(k));
    assertEquals(names(treeSnapshot(`${home}/data`)), names(before.data));
  } finally {
    if (!stopped) await server.stop();
    Deno.removeSync(home, { recursive: true });
  }
});
