/**
 * [OP-1] Hostile and damaged archives are refused before anything in the home
 * changes: each case restores (with --yes semantics) into a seeded home and
 * asserts the exact refusal reason and a byte-identical home tree afterwards.
 */
import { gzipSync } from "fflate";
import { DatabaseSync } from "node:sqlite";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { ArchiveError, type ArchiveReason } from "../../runtime/backup/archive_error.ts";
import { createBackup } from "../../runtime/backup/backup.ts";
import { restoreBackup } from "../../runtime/backup/restore.ts";
import { BACKUP_ARCHIVE_MAX_BYTES, BACKUP_ENTRY_MAX_BYTES } from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import {
  type ArchiveEntry,
  rawHeader,
  readEntries,
  refreshManifest,
  runCli,
  seedHome,
  treeSnapshot,
  writeEntries,
} from "./backup_fixture.ts";

const enc = new TextEncoder();

interface Fixture {
  source: Uint8Array;
  target: string;
  scratch: string;
}

async function fixture(): Promise<Fixture> {
  const src = makeTempHome();
  seedHome(src);
  const b = await createBackup({ root: src, name: "source" });
  const source = Deno.readFileSync(b.path);
  Deno.removeSync(src, { recursive: true });
  const target = makeTempHome();
  seedHome(target);
  return { source, target, scratch: Deno.makeTempDirSync({ prefix: "ab-tamper-" }) };
}

function entries(f: Fixture): ArchiveEntry[] {
  return readEntries(f.source);
}

function beforeManifest(list: ArchiveEntry[], ...extra: ArchiveEntry[]): ArchiveEntry[] {
  return [...list.slice(0, -1), ...extra, list[list.length - 1]];
}

function fileEntry(path: string, data: Uint8Array): ArchiveEntry {
  return { header: { path, type: "file", size: data.length, mode: 0o600, mtime: 0 }, data };
}

function rawEntry(path: string, flag: string, linkname = ""): ArchiveEntry {
  return {
    header: { path, type: "file", size: 0, mode: 0o600, mtime: 0 },
    data: new Uint8Array(0),
    raw: rawHeader(path, flag, 0, linkname),
  };
}

function find(list: ArchiveEntry[], pred: (p: string) => boolean): ArchiveEntry {
  const e = list.find((x) => pred(x.header.path));
  assert(e, "entry not found");
  return e;
}

/** Edits one database entry through SQLite on a scratch copy. */
function editDatabase(f: Fixture, e: ArchiveEntry, sql: string): void {
  const path = `${f.scratch}/edit-${crypto.randomUUID()}.sqlite`;
  Deno.writeFileSync(path, e.data);
  const db = new DatabaseSync(path);
  db.exec(sql);
  db.close();
  e.data = Deno.readFileSync(path);
  e.header.size = e.data.length;
}

type Case = [name: string, reason: ArchiveReason, build: (f: Fixture) => Uint8Array];

const isState = (p: string) => p.endsWith("/state.sqlite");
const isWorkspaceFile = (p: string) => p.endsWith("/workspace/src/main.ts");

const CASES: Case[] = [
  [
    "a '..' traversal entry",
    "path_traversal",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("data/../escape", enc.encode("x")))),
  ],
  [
    "a leading '..' entry",
    "path_traversal",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("../escape", enc.encode("x")))),
  ],
  [
    "an absolute path",
    "path_absolute",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("/tmp/evil", enc.encode("x")))),
  ],
  [
    "an entry outside data/",
    "path_outside_data",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("etc/passwd", enc.encode("x")))),
  ],
  [
    "a symlink entry",
    "link_entry",
    (f) => writeEntries(beforeManifest(entries(f), rawEntry("data/evil", "2", "/etc/passwd"))),
  ],
  ["a hard-link entry", "link_entry", (f) =>
    writeEntries(
      beforeManifest(entries(f), rawEntry("data/evil", "1", "data/agent-registry.sqlite")),
    )],
  [
    "a character-device entry",
    "special_entry",
    (f) => writeEntries(beforeManifest(entries(f), rawEntry("data/null", "3"))),
  ],
  [
    "a block-device entry",
    "special_entry",
    (f) => writeEntries(beforeManifest(entries(f), rawEntry("data/sda", "4"))),
  ],
  [
    "a fifo entry",
    "special_entry",
    (f) => writeEntries(beforeManifest(entries(f), rawEntry("data/pipe", "6"))),
  ],
  ["a file whose bytes do not match its digest", "digest_mismatch", (f) => {
    const list = entries(f);
    const e = find(list, isWorkspaceFile);
    e.data = e.data.slice();
    e.data[0] ^= 0x20;
    return writeEntries(list);
  }],
  [
    "a truncated archive",
    "truncated",
    (f) => f.source.subarray(0, Math.floor(f.source.length * 0.6)),
  ],
  ["a truncated gzip archive", "truncated", (f) => {
    const gz = gzipSync(f.source);
    return gz.subarray(0, Math.floor(gz.length / 2));
  }],
  ["a corrupt gzip stream", "gzip_invalid", (f) => {
    const gz = gzipSync(f.source).slice();
    for (let i = 20; i < 60; i++) gz[i] ^= 0xa5;
    return gz;
  }],
  ["an entry over the per-entry bound", "entry_too_large", (f) => {
    const list = entries(f);
    const big: ArchiveEntry = {
      header: { path: "data/big", type: "file", size: 0, mode: 0o600, mtime: 0 },
      data: new Uint8Array(0),
      raw: rawHeader("data/big", "0", BACKUP_ENTRY_MAX_BYTES + 1),
    };
    return writeEntries(beforeManifest(list, big));
  }],
  ["a corrupt database", "database_corrupt", (f) => {
    const list = entries(f);
    const e = find(list, isState);
    e.data = e.data.slice();
    e.data.fill(0xee, 4096 + 100, 2 * 4096);
    refreshManifest(list);
    return writeEntries(list);
  }],
  ["a database that is not SQLite at all", "database_corrupt", (f) => {
    const list = entries(f);
    const e = find(list, isState);
    e.data = enc.encode("definitely not a database".repeat(200));
    e.header.size = e.data.length;
    refreshManifest(list);
    return writeEntries(list);
  }],
  ["a database with a schema newer than this binary", "database_too_new", (f) => {
    const list = entries(f);
    editDatabase(f, find(list, isState), `PRAGMA user_version = ${AGENT_MIGRATIONS.length + 1}`);
    refreshManifest(list);
    return writeEntries(list);
  }],
  ["a database this binary does not know", "database_unknown", (f) => {
    const list = entries(f);
    const other = fileEntry("data/other.sqlite", find(list, isState).data);
    const out = beforeManifest(list, other);
    refreshManifest(out);
    return writeEntries(out);
  }],
  ["a SQLite hot journal beside a database", "unsupported_entry", (f) => {
    const list = entries(f);
    const e = find(list, isState);
    const out = beforeManifest(list, fileEntry(`${e.header.path}-journal`, enc.encode("j")));
    refreshManifest(out);
    return writeEntries(out);
  }],
  ["a missing manifest", "manifest_missing", (f) => writeEntries(entries(f).slice(0, -1))],
  [
    "an entry after the manifest",
    "manifest_missing",
    (f) => writeEntries([...entries(f), fileEntry("data/late", enc.encode("x"))]),
  ],
  [
    "a file the manifest does not list",
    "manifest_mismatch",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("data/extra", enc.encode("x")))),
  ],
  ["a manifest that is not the product's schema", "manifest_invalid", (f) => {
    const list = entries(f);
    list[list.length - 1].data = enc.encode(JSON.stringify({ format: "tar", entries: [] }));
    return writeEntries(list);
  }],
  ["a duplicated entry", "duplicate_entry", (f) => {
    const list = entries(f);
    const e = find(list, isWorkspaceFile);
    return writeEntries(beforeManifest(list, { ...e }));
  }],
  [
    "an entry whose parent directory is missing",
    "missing_parent",
    (f) => writeEntries(beforeManifest(entries(f), fileEntry("data/nowhere/x", enc.encode("x")))),
  ],
  ["random bytes", "not_tar", () => crypto.getRandomValues(new Uint8Array(4096))],
];

Deno.test("tampered archives are refused with the exact reason and nothing in the home changes", async (t) => {
  const f = await fixture();
  try {
    const before = treeSnapshot(f.target);
    for (const [name, reason, build] of CASES) {
      await t.step(`${name} → ${reason}`, () => {
        const file = `${f.scratch}/case.tar`;
        Deno.writeFileSync(file, build(f));
        let got: unknown = null;
        try {
          restoreBackup({ root: f.target, file, apply: true });
        } catch (err) {
          got = err;
        }
        assert(got instanceof ArchiveError, `expected a refusal, got ${got}`);
        assertEquals(got.reason, reason);
        assertEquals(got.code, "backup_invalid");
        assertEquals(treeSnapshot(f.target), before);
      });
    }

    await t.step("an archive larger than the stream bound is refused from its size alone", () => {
      const file = `${f.scratch}/huge.tar`;
      const h = Deno.openSync(file, { write: true, create: true, truncate: true });
      h.truncateSync(BACKUP_ARCHIVE_MAX_BYTES + 1); // sparse: no disk is used
      h.close();
      let got: unknown = null;
      try {
        restoreBackup({ root: f.target, file, apply: true });
      } catch (err) {
        got = err;
      }
      assert(got instanceof ArchiveError);
      assertEquals(got.reason, "archive_too_large");
      Deno.removeSync(file);
      assertEquals(treeSnapshot(f.target), before);
    });

    await t.step("the CLI exits 5 with a fixed sentence and changes nothing", async () => {
      const file = `${f.scratch}/cli.tar`;
      Deno.writeFileSync(file, CASES[4][2](f)); // the symlink entry
      const r = await runCli(["restore", file, "--yes", "--home", f.target]);
      assertEquals(r.code, 5);
      assertEquals(
        r.stderr.trim(),
        "agent-builder restore: the archive is invalid: it contains a symbolic or hard link. " +
          "Nothing was changed.",
      );
      assertEquals(treeSnapshot(f.target), before);
    });

    await t.step(
      "the untampered archive restores (the cases above differ only by their edit)",
      () => {
        const file = `${f.scratch}/good.tar`;
        Deno.writeFileSync(file, writeEntries(entries(f)));
        const r = restoreBackup({ root: f.target, file, apply: true });
        assert(r.applied && r.recoveryRel !== null);
      },
    );

    await t.step("an empty database file (an Agent caught mid-creation) is accepted", () => {
      const list = entries(f);
      const e = find(list, isState);
      e.data = new Uint8Array(0);
      e.header.size = 0;
      refreshManifest(list, (m) => {
        for (const d of m.databases) if (d.path === e.header.path) d.user_version = 0;
      });
      const file = `${f.scratch}/empty-db.tar`;
      Deno.writeFileSync(file, writeEntries(list));
      const home = makeTempHome();
      try {
        const r = restoreBackup({ root: home, file, apply: true });
        assert(r.databases.some((d) => d.path === e.header.path && d.user_version === 0));
      } finally {
        Deno.removeSync(home, { recursive: true });
      }
    });
  } finally {
    Deno.removeSync(f.target, { recursive: true });
    Deno.removeSync(f.scratch, { recursive: true });
  }
});
