/**
 * [OP-4] Restore validates contents, not only integrity: an archive whose
 * databases pass integrity_check but that `serve` would refuse — a registry
 * row with a traversal id or an upper-case UUID, a registry that lost its
 * CHECK constraints or whose recorded version does not match its schema, an
 * unknown schema version, an Agent database with a foreign schema, a folder
 * under data/agents/ that is not an Agent id, no registry at all — is refused
 * with its fixed reason before anything is swapped (the home is byte-identical
 * afterwards). And a gzip bomb generated here (~9 MB expanding to ~9 GiB) is
 * refused once its expanded bytes pass the cap: the bytes the restoring thread
 * passed to write(2) (/proc/thread-self/io wchar) stay at most the cap.
 */
import { gunzipSync, gzipSync } from "fflate";
import { DatabaseSync } from "node:sqlite";
import { ArchiveError, type ArchiveReason } from "../../runtime/backup/archive_error.ts";
import { createBackup } from "../../runtime/backup/backup.ts";
import { DEFAULT_EXPANSION, expandedCap } from "../../runtime/backup/extract.ts";
import { restoreBackup } from "../../runtime/backup/restore.ts";
import { encodeHeader } from "../../runtime/backup/tar.ts";
import {
  BACKUP_ARCHIVE_MAX_BYTES,
  BACKUP_ENTRY_MAX_BYTES,
  BACKUP_GZIP_FLOOR_BYTES,
  BACKUP_GZIP_RATIO_MAX,
} from "../../runtime/limits.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { makeTempHome } from "../helpers/home.ts";
import {
  type ArchiveEntry,
  readEntries,
  refreshManifest,
  runCli,
  seedHome,
  treeSnapshot,
  writeEntries,
} from "./backup_fixture.ts";

const MiB = 1024 * 1024;
const REGISTRY = "data/agent-registry.sqlite";

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
  return { source, target, scratch: Deno.makeTempDirSync({ prefix: "ab-restore-" }) };
}

function find(list: ArchiveEntry[], path: string | ((p: string) => boolean)): ArchiveEntry {
  const e = list.find((x) =>
    typeof path === "string" ? x.header.path === path : path(x.header.path)
  );
  assert(e, `entry not found: ${path}`);
  return e;
}

/** Edits one database entry through SQLite on a scratch copy; returns its new user_version. */
function editDatabase(f: Fixture, e: ArchiveEntry, sql: string): number {
  const path = `${f.scratch}/edit-${crypto.randomUUID()}.sqlite`;
  Deno.writeFileSync(path, e.data);
  const db = new DatabaseSync(path);
  db.exec(sql);
  const v = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
  db.close();
  e.data = Deno.readFileSync(path);
  e.header.size = e.data.length;
  return v;
}

/** An archive whose one database was edited, with a manifest that matches it again. */
function withEditedDatabase(f: Fixture, path: string | ((p: string) => boolean), sql: string) {
  const list = readEntries(f.source);
  const e = find(list, path);
  const version = editDatabase(f, e, sql);
  refreshManifest(list, (m) => {
    for (const d of m.databases) if (d.path === e.header.path) d.user_version = version;
  });
  return writeEntries(list);
}

const NOW = Date.now();
const insertRow = (id: string) =>
  `INSERT INTO agents (id, name, state, generation, is_system, created_at, updated_at)
   VALUES ('${id}', 'bad', 'active', 1, 0, ${NOW}, ${NOW});`;

/** The registry's agents table re-created without a single CHECK constraint. */
const DROP_CHECKS = `
  CREATE TABLE agents_loose (id TEXT PRIMARY KEY, name TEXT, state TEXT, generation INTEGER,
    is_system INTEGER, created_at INTEGER, updated_at INTEGER, pending_generation INTEGER);
  INSERT INTO agents_loose SELECT id, name, state, generation, is_system, created_at, updated_at,
    pending_generation FROM agents;
  DROP TABLE agents;
  ALTER TABLE agents_loose RENAME TO agents;
  CREATE UNIQUE INDEX agents_one_system ON agents(is_system) WHERE is_system = 1;`;

type Case = [name: string, reason: ArchiveReason, build: (f: Fixture) => Uint8Array];

const CASES: Case[] = [
  [
    "a registry row whose id is a '../../' traversal",
    "agent_row_invalid",
    (f) => withEditedDatabase(f, REGISTRY, insertRow("../../" + "x".repeat(30))),
  ],
  [
    "a registry row whose id is an upper-case UUID",
    "agent_row_invalid",
    (f) => withEditedDatabase(f, REGISTRY, insertRow(crypto.randomUUID().toUpperCase())),
  ],
  [
    "a registry without its CHECK constraints",
    "registry_invalid",
    (f) => withEditedDatabase(f, REGISTRY, DROP_CHECKS),
  ],
  [
    "a registry without its CHECK constraints holding a row the constraints would refuse",
    "registry_invalid",
    (f) =>
      withEditedDatabase(
        f,
        REGISTRY,
        DROP_CHECKS + `INSERT INTO agents (id, name, state, generation, is_system, created_at,
          updated_at) VALUES ('x', 'y', 'exploded', -1, 0, 0, 0);`,
      ),
  ],
  [
    "a registry whose recorded version is older than its schema",
    "registry_invalid",
    (f) => withEditedDatabase(f, REGISTRY, "PRAGMA user_version = 1"),
  ],
  [
    "a registry with an unknown (newer) schema version",
    "database_too_new",
    (f) =>
      withEditedDatabase(f, REGISTRY, `PRAGMA user_version = ${REGISTRY_MIGRATIONS.length + 7}`),
  ],
  [
    "an Agent database with a table its migrations did not make",
    "agent_unavailable",
    (f) => withEditedDatabase(f, (p) => p.endsWith("/state.sqlite"), "CREATE TABLE intruder (x)"),
  ],
  ["a folder under data/agents/ that is not an Agent id", "agent_dir_invalid", (f) => {
    const list = readEntries(f.source);
    const at = list.findIndex((e) => e.header.path === "data/agents") + 1;
    list.splice(at, 0, {
      header: { path: "data/agents/not-an-id", type: "dir", size: 0, mode: 0o700, mtime: 0 },
      data: new Uint8Array(0),
    });
    refreshManifest(list);
    return writeEntries(list);
  }],
  ["an archive without the registry", "registry_missing", (f) => {
    const list = readEntries(f.source).filter((e) => e.header.path !== REGISTRY);
    refreshManifest(list, (m) => {
      m.databases = m.databases.filter((d) => d.path !== REGISTRY);
    });
    return writeEntries(list);
  }],
];

function refusal(fn: () => unknown): ArchiveError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ArchiveError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

Deno.test("restore refuses every archive serve would refuse, with nothing swapped", async (t) => {
  const f = await fixture();
  try {
    const before = treeSnapshot(f.target);
    for (const [name, reason, build] of CASES) {
      await t.step(`${name} → ${reason}`, () => {
        const file = `${f.scratch}/case.tar`;
        Deno.writeFileSync(file, build(f));
        const err = refusal(() => restoreBackup({ root: f.target, file, apply: true }));
        assertEquals(err.reason, reason);
        assertEquals(treeSnapshot(f.target), before);
      });
    }

    await t.step("the CLI exits 5 with the fixed sentence and changes nothing", async () => {
      const file = `${f.scratch}/cli.tar`;
      Deno.writeFileSync(file, CASES[1][2](f));
      const r = await runCli(["restore", file, "--yes", "--home", f.target]);
      assertEquals(r.code, 5);
      assertEquals(
        r.stderr.trim(),
        "agent-builder restore: the archive is invalid: an Agent's registry row is invalid " +
          "(malformed id, state or generation). Nothing was changed.",
      );
      assertEquals(treeSnapshot(f.target), before);
    });

    await t.step("the unedited archive restores (the cases differ only by their edit)", () => {
      const file = `${f.scratch}/good.tar`;
      Deno.writeFileSync(file, writeEntries(readEntries(f.source)));
      assert(restoreBackup({ root: f.target, file, apply: true }).applied);
    });
  } finally {
    Deno.removeSync(f.target, { recursive: true });
    Deno.removeSync(f.scratch, { recursive: true });
  }
});

Deno.test("a gzip archive may expand exactly to its cap and not one byte more", async () => {
  const f = await fixture();
  try {
    const gz = gzipSync(f.source);
    const file = `${f.scratch}/ok.tar.gz`;
    Deno.writeFileSync(file, gz);
    const expanded = gunzipSync(gz).length;
    const atCap = { ratioMax: 0, floorBytes: expanded };
    assert(restoreBackup({ root: f.target, file, apply: false, expansion: atCap }).gzip);
    const pastCap = { ratioMax: 0, floorBytes: expanded - 1 };
    const err = refusal(() =>
      restoreBackup({ root: f.target, file, apply: false, expansion: pastCap })
    );
    assertEquals(err.reason, "expanded_too_large");
    // The cap: the floor for small archives, the ratio beyond, never past the stream cap.
    assertEquals(expandedCap(1000, DEFAULT_EXPANSION, BACKUP_ARCHIVE_MAX_BYTES), 256 * MiB);
    assertEquals(
      expandedCap(64 * MiB, DEFAULT_EXPANSION, BACKUP_ARCHIVE_MAX_BYTES),
      64 * MiB * BACKUP_GZIP_RATIO_MAX,
    );
    assertEquals(
      expandedCap(1024 * MiB, DEFAULT_EXPANSION, BACKUP_ARCHIVE_MAX_BYTES),
      BACKUP_ARCHIVE_MAX_BYTES,
    );
  } finally {
    Deno.removeSync(f.target, { recursive: true });
    Deno.removeSync(f.scratch, { recursive: true });
  }
});

/**
 * Bytes this thread passed to write(2) so far. Restore writes synchronously on
 * the calling thread; test modules running in parallel (other threads of this
 * process) are not counted.
 */
function writtenBytes(): number {
  const io = Deno.readTextFileSync("/proc/thread-self/io");
  return Number(/^wchar: (\d+)$/m.exec(io)![1]);
}

/**
 * A ~9 MB gzip stream of a ustar archive with 8 entries of 1 GiB of zeros
 * (8 GiB of file data): multi-member gzip (RFC 1952 §2.2), one member per
 * header and one 1 MiB zero member repeated — each member valid on its own.
 */
function gzipBomb(): { bytes: Uint8Array; expandsTo: number } {
  const zeros = gzipSync(new Uint8Array(MiB), { level: 9 });
  const parts: Uint8Array[] = [gzipSync(encodeHeader({
    path: "data",
    type: "dir",
    size: 0,
    mode: 0o700,
    mtime: 0,
  }))];
  let expandsTo = 512;
  for (let i = 0; i < 8; i++) {
    const header = encodeHeader({
      path: `data/bomb-${i}`,
      type: "file",
      size: BACKUP_ENTRY_MAX_BYTES,
      mode: 0o600,
      mtime: 0,
    });
    parts.push(gzipSync(header));
    expandsTo += header.length;
    for (let m = 0; m < BACKUP_ENTRY_MAX_BYTES / MiB; m++) parts.push(zeros);
    expandsTo += BACKUP_ENTRY_MAX_BYTES;
  }
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    bytes.set(p, off);
    off += p.length;
  }
  return { bytes, expandsTo };
}

Deno.test("a 9 MB gzip bomb is refused after writing at most the cap to staging", () => {
  const target = makeTempHome();
  const scratch = Deno.makeTempDirSync({ prefix: "ab-bomb-" });
  try {
    seedHome(target);
    const before = treeSnapshot(target);
    const bomb = gzipBomb();
    assert(bomb.bytes.length > 8 * MiB && bomb.bytes.length < 10 * MiB, `${bomb.bytes.length}`);
    assert(bomb.expandsTo > 8 * 1024 * MiB);
    const file = `${scratch}/bomb.tar.gz`;
    Deno.writeFileSync(file, bomb.bytes);
    const cap = Math.max(BACKUP_GZIP_FLOOR_BYTES, bomb.bytes.length * BACKUP_GZIP_RATIO_MAX);
    assert(cap < 512 * MiB, "the cap for this bomb is well below a GiB");

    const w0 = writtenBytes();
    const err = refusal(() => restoreBackup({ root: target, file, apply: true }));
    const written = writtenBytes() - w0;
    assertEquals(err.reason, "expanded_too_large");
    // Everything this thread wrote meanwhile (staging files plus the lock's pid record).
    assert(written <= cap + 64 * 1024, `wrote ${written} bytes, cap ${cap}`);
    assertEquals(treeSnapshot(target), before);
    assertEquals(
      [...Deno.readDirSync(`${target}/.runtime`)].filter((e) => e.name.startsWith("restore-")),
      [],
    );
  } finally {
    Deno.removeSync(target, { recursive: true });
    Deno.removeSync(scratch, { recursive: true });
  }
});
