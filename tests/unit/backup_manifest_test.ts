/** [OP-1] The manifest: strict schema, exact comparison with what was extracted, progress text. */
import { ArchiveError, type ArchiveReason } from "../../runtime/backup/archive_error.ts";
import {
  compareDatabases,
  compareWithManifest,
  decodeManifest,
  encodeManifest,
  type Manifest,
  type ManifestEntry,
} from "../../runtime/backup/manifest.ts";
import { createProgressLine, formatBytes } from "../../runtime/backup/progress.ts";
import { BACKUP_MANIFEST_MAX_BYTES, BACKUP_PROGRESS_MIN_BYTES } from "../../runtime/limits.ts";
import { assertEquals } from "../helpers/assert.ts";

const SHA_A = "a".repeat(64);
const SHA_B = "b".repeat(64);

function manifest(entries: ManifestEntry[]): Manifest {
  return {
    format: "agent-builder-backup",
    version: 1,
    release: "0.1.0",
    created_at: "2026-11-29T21:00:00.000Z",
    entries,
    databases: [{ path: "data/agent-registry.sqlite", kind: "registry", user_version: 2 }],
  };
}

const ENTRIES: ManifestEntry[] = [
  { path: "data", type: "dir" },
  { path: "data/agent-registry.sqlite", type: "file", size: 10, sha256: SHA_A },
  { path: "data/notes", type: "file", size: 3, sha256: SHA_B },
];

function reason(fn: () => unknown): ArchiveReason | "ok" {
  try {
    fn();
    return "ok";
  } catch (err) {
    if (err instanceof ArchiveError) return err.reason;
    throw err;
  }
}

Deno.test("a manifest round-trips and foreign or loose JSON is refused", () => {
  const m = manifest(ENTRIES);
  assertEquals(decodeManifest(encodeManifest(m)), m);
  const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  const bad: unknown[] = [
    { ...m, format: "tar" },
    { ...m, version: 2 },
    { ...m, extra: 1 },
    { ...m, created_at: "yesterday" },
    { ...m, entries: [{ path: "data", type: "symlink" }] },
    { ...m, entries: [{ path: "data/x", type: "file", size: -1, sha256: SHA_A }] },
    { ...m, entries: [{ path: "data/x", type: "file", size: 1, sha256: "xyz" }] },
    { ...m, entries: [{ path: "data", type: "dir", mode: 0o777 }] },
    { ...m, databases: [{ path: "data/x.sqlite", kind: "mystery", user_version: 1 }] },
  ];
  for (const b of bad) assertEquals(reason(() => decodeManifest(enc(b))), "manifest_invalid");
  assertEquals(reason(() => decodeManifest(new TextEncoder().encode("{"))), "manifest_invalid");
  assertEquals(reason(() => decodeManifest(new Uint8Array([0xff, 0xfe]))), "manifest_invalid");
  assertEquals(
    reason(() => decodeManifest(new Uint8Array(BACKUP_MANIFEST_MAX_BYTES + 1))),
    "manifest_invalid",
  );
});

Deno.test("extracted entries must match the manifest exactly", () => {
  const m = manifest(ENTRIES);
  const cases: [string, ManifestEntry[], ArchiveReason | "ok"][] = [
    ["identical", ENTRIES, "ok"],
    ["reordered", [...ENTRIES].reverse(), "ok"],
    ["one missing", ENTRIES.slice(0, 2), "manifest_mismatch"],
    ["one extra", [...ENTRIES, { path: "data/x", type: "dir" }], "manifest_mismatch"],
    [
      "type changed",
      [ENTRIES[0], ENTRIES[1], { path: "data/notes", type: "dir" }],
      "manifest_mismatch",
    ],
    [
      "size changed",
      [ENTRIES[0], ENTRIES[1], { ...ENTRIES[2], size: 4 } as ManifestEntry],
      "manifest_mismatch",
    ],
    [
      "digest changed",
      [ENTRIES[0], ENTRIES[1], { ...ENTRIES[2], sha256: SHA_A } as ManifestEntry],
      "digest_mismatch",
    ],
  ];
  for (const [name, got, want] of cases) {
    assertEquals(reason(() => compareWithManifest(m, got)), want, name);
  }
  const dup = manifest([...ENTRIES, ENTRIES[2]]);
  assertEquals(reason(() => compareWithManifest(dup, ENTRIES)), "manifest_mismatch");
});

Deno.test("the databases found must be the manifest's, with the same schema versions", () => {
  const m = manifest(ENTRIES);
  const reg = { path: "data/agent-registry.sqlite", kind: "registry" as const, user_version: 2 };
  assertEquals(reason(() => compareDatabases(m, [reg])), "ok");
  assertEquals(reason(() => compareDatabases(m, [])), "manifest_mismatch");
  assertEquals(
    reason(() => compareDatabases(m, [{ ...reg, user_version: 1 }])),
    "manifest_mismatch",
  );
});

Deno.test("progress stays quiet below the threshold and is throttled above it", () => {
  const out: string[] = [];
  let t = 0;
  const p = createProgressLine({ write: (s) => out.push(s), intervalMs: 250, now: () => t });
  p.update(BACKUP_PROGRESS_MIN_BYTES - 1, "small");
  p.done();
  assertEquals(out, []);
  p.update(BACKUP_PROGRESS_MIN_BYTES, "one");
  t = 100;
  p.update(BACKUP_PROGRESS_MIN_BYTES + 1, "throttled");
  t = 300;
  p.update(BACKUP_PROGRESS_MIN_BYTES + 2, "two");
  p.done();
  assertEquals(out, ["\rone\u001b[K", "\rtwo\u001b[K", "\n"]);
  assertEquals(
    [0, 1023, 1536, 64 * 1024 * 1024, 3 * 1024 ** 3].map(formatBytes),
    ["0 B", "1023 B", "1.5 KiB", "64.0 MiB", "3.0 GiB"],
  );
});
