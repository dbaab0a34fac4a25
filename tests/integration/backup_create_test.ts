/**
 * [OP-1] What `backup` writes and refuses: links and special files in Agent
 * workspaces are skipped and never followed (their targets never reach the
 * archive, a fifo cannot stall the walk); a symlinked data/ is refused; the
 * entry/size bounds a restore enforces are enforced at backup time, leaving
 * nothing behind; progress appears on a terminal for large backups.
 */
import { AppError } from "../../runtime/errors.ts";
import { createBackup } from "../../runtime/backup/backup.ts";
import { restoreBackup } from "../../runtime/backup/restore.ts";
import { BACKUP_PROGRESS_MIN_BYTES } from "../../runtime/limits.ts";
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import { runInPty } from "../helpers/pty.ts";
import { DENO, REPO, RUN_FLAGS } from "../helpers/server.ts";
import { readEntries, runCli, seedHome } from "./backup_fixture.ts";

const SECRET = "TOP-SECRET-outside-data";

function includes(hay: Uint8Array, needle: string): boolean {
  return new TextDecoder("latin1").decode(hay).includes(needle);
}

async function refusal(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  throw new Error("expected a refusal");
}

Deno.test("backup skips links and special files in workspaces and never reads their targets", async () => {
  const home = makeTempHome();
  const other = makeTempHome();
  try {
    const [a] = seedHome(home);
    Deno.writeTextFileSync(`${home}/.runtime/secrets/outside`, SECRET, { mode: 0o600 });
    const ws = `${home}/data/agents/${a.id}/workspace`;
    Deno.symlinkSync(`${home}/.runtime/secrets/outside`, `${ws}/leak`);
    Deno.symlinkSync(`${home}/.runtime/secrets`, `${ws}/leakdir`);
    const mk = await new Deno.Command("mkfifo", { args: [`${ws}/pipe`] }).output();
    assert(mk.success, "mkfifo");
    Deno.writeFileSync(`${ws}/bad\nname`, new Uint8Array([1]), { mode: 0o600 });

    const r = await runCli(["backup", "b", "--home", home]);
    assertEquals(r.code, 0, r.stderr);
    assertMatch(r.stdout, /Skipped 4 entries/);
    for (const name of ["leak", "leakdir", "pipe", "bad\\nname"]) {
      assert(r.stdout.includes(`"data/agents/${a.id}/workspace/${name}"`), name);
    }
    const bytes = Deno.readFileSync(`${home}/backups/b.tar`);
    assert(!includes(bytes, SECRET), "a link target reached the archive");
    const paths = readEntries(bytes).map((e) => e.header.path);
    // Anchored on the workspace: a random UUID may well contain "bad".
    assert(
      paths.every((p) => !/\/workspace\/(leak|leakdir|pipe|bad\nname)(\/|$)/.test(p)),
      paths.join(),
    );
    assert(paths.includes(`data/agents/${a.id}/workspace/src/main.ts`));
    assert(paths.every((p) => !/-(wal|shm|journal)$/.test(p)), "no SQLite companions");

    restoreBackup({ root: other, file: `${home}/backups/b.tar`, apply: true });
    assertEquals(
      Deno.readTextFileSync(`${other}/data/agents/${a.id}/workspace/src/main.ts`),
      `console.log("Alpha");\n`,
    );
  } finally {
    Deno.removeSync(home, { recursive: true });
    Deno.removeSync(other, { recursive: true });
  }
});

Deno.test("backup refuses a symlinked data/ and leaves nothing behind", async () => {
  const home = makeTempHome();
  const elsewhere = makeTempHome();
  try {
    Deno.mkdirSync(`${elsewhere}/data`, { mode: 0o700 });
    Deno.symlinkSync(`${elsewhere}/data`, `${home}/data`);
    assertEquals(await refusal(() => createBackup({ root: home, name: "x" })), "unsafe_path");
    assertEquals([...Deno.readDirSync(`${home}/backups`)], []);
    const r = await runCli(["backup", "x", "--home", home]);
    assertEquals(r.code, 1);
    assertEquals(
      r.stderr.trim(),
      "agent-builder backup: A managed path failed its safety check. Nothing was written.",
    );
  } finally {
    Deno.removeSync(home, { recursive: true });
    Deno.removeSync(elsewhere, { recursive: true });
  }
});

Deno.test("backup enforces the entry, per-file and total bounds a restore accepts", async () => {
  const home = makeTempHome();
  try {
    seedHome(home);
    const full = await createBackup({ root: home, name: "full" });
    const entries = readEntries(Deno.readFileSync(full.path)).length; // includes the manifest
    const sizes = readEntries(Deno.readFileSync(full.path)).slice(0, -1).map((e) => e.data.length);
    const total = sizes.reduce((n, s) => n + s, 0);
    const largest = Math.max(...sizes);
    const base = { entriesMax: entries, entryMaxBytes: largest, totalMaxBytes: total };

    // Exactly at every bound: accepted, and the archive restores under the same bounds.
    const ok = await createBackup({ root: home, name: "at-bounds", limits: base });
    assertEquals(ok.dataBytes, total);
    const cases: [string, typeof base][] = [
      ["entries", { ...base, entriesMax: entries - 1 }],
      ["entry", { ...base, entryMaxBytes: largest - 1 }],
      ["total", { ...base, totalMaxBytes: total - 1 }],
    ];
    for (const [name, limits] of cases) {
      const code = await refusal(() => createBackup({ root: home, name, limits }));
      assertEquals(code, "backup_too_large", name);
    }
    const left = [...Deno.readDirSync(`${home}/backups`)].map((e) => e.name).sort();
    assertEquals(left, ["at-bounds.tar", "full.tar"], "refused backups leave no files or temps");
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("a large backup and restore show progress on a terminal and not on a pipe", async () => {
  const home = makeTempHome();
  try {
    const [a] = seedHome(home);
    // A sparse file: reading it is fast and it uses no disk until archived.
    const big = Deno.openSync(`${home}/data/agents/${a.id}/workspace/big.bin`, {
      write: true,
      createNew: true,
      mode: 0o600,
    });
    big.truncateSync(BACKUP_PROGRESS_MIN_BYTES + 8 * 1024 * 1024);
    big.close();
    const argv = [DENO, ...RUN_FLAGS, `${REPO}/main.ts`];
    const b = await runInPty([...argv, "backup", "big", "--home", home], []);
    assertEquals(b.code, 0, b.output);
    assertMatch(b.output, /\rbackup: \d+\.\d MiB, \d+ files/);
    assertMatch(b.output, /Backup written: backups\/big\.tar /);
    const file = `${home}/backups/big.tar`;
    const r = await runInPty([...argv, "restore", file, "--home", home], []);
    assertEquals(r.code, 0, r.output);
    assertMatch(r.output, /\rrestore: checked \d+\.\d MiB of \d+\.\d MiB/);
    assertMatch(r.output, /Dry run: nothing was changed/);

    Deno.removeSync(file);
    const piped = await runCli(["backup", "big2", "--home", home]);
    assertEquals(piped.code, 0);
    assert(!piped.stderr.includes("\r") && !piped.stdout.includes("\r"), "no progress on a pipe");
  } finally {
    Deno.removeSync(home, { recursive: true });
  }
});
