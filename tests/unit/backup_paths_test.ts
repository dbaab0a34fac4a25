/** [OP-1] Archive path policy, backup names and database classification, as tables. */
import { ArchiveError, type ArchiveReason } from "../../runtime/backup/archive_error.ts";
import {
  checkArchivePath,
  databaseKind,
  isDatabaseCompanion,
  isWorkspacePath,
  validateBackupName,
} from "../../runtime/backup/paths.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  BACKUP_NAME_MAX_CHARS,
  BACKUP_PATH_COMPONENT_MAX_BYTES,
  BACKUP_PATH_MAX_BYTES,
} from "../../runtime/limits.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

const ID = "3da14386-bd1a-412e-aa55-63ce6ac49c2a";

function reasonOf(path: string): ArchiveReason | "ok" {
  try {
    checkArchivePath(path);
    return "ok";
  } catch (err) {
    if (err instanceof ArchiveError) return err.reason;
    throw err;
  }
}

Deno.test("checkArchivePath accepts data/ paths and the manifest, and refuses everything else", () => {
  const deep = "data/" + Array.from({ length: 20 }, (_, i) => `d${i}`).join("/");
  const atMax = "data/" + "a/".repeat(2000) + "b".repeat(BACKUP_PATH_MAX_BYTES - 5 - 4000);
  const cases: [string, ArchiveReason | "ok"][] = [
    ["data", "ok"],
    ["manifest.json", "ok"],
    [`data/agents/${ID}/workspace/héllo wörld.md`, "ok"],
    [deep, "ok"],
    [atMax, "ok"],
    [atMax + "c", "path_invalid"],
    ["data/" + "x".repeat(BACKUP_PATH_COMPONENT_MAX_BYTES), "ok"],
    ["data/" + "x".repeat(BACKUP_PATH_COMPONENT_MAX_BYTES + 1), "path_invalid"],
    ["/etc/passwd", "path_absolute"],
    ["/data/x", "path_absolute"],
    ["../x", "path_traversal"],
    ["data/../x", "path_traversal"],
    ["data/a/..", "path_traversal"],
    ["data/./x", "path_traversal"],
    ["./data", "path_traversal"],
    ["", "path_invalid"],
    ["data//x", "path_invalid"],
    ["data/x/", "path_invalid"],
    ["data/a\u0000b", "path_invalid"],
    ["data/a\nb", "path_invalid"],
    ["data/\u001b[31mred", "path_invalid"],
    ["data/a\\..\\b", "path_invalid"],
    ["etc/passwd", "path_outside_data"],
    ["database/x", "path_outside_data"],
    [".runtime/secrets/web-bootstrap-token", "path_outside_data"],
    ["backups/x.tar", "path_outside_data"],
  ];
  for (const [path, want] of cases) assertEquals(reasonOf(path), want, JSON.stringify(path));
  assertEquals(new TextEncoder().encode(atMax).length, BACKUP_PATH_MAX_BYTES);
});

Deno.test("backup names: 1..64 safe characters, no leading dot, no archive extension", () => {
  const valid = (n: string) => {
    try {
      return validateBackupName(n) === n;
    } catch (err) {
      assert(err instanceof AppError && err.code === "backup_name_invalid");
      return false;
    }
  };
  const cases: [string, boolean][] = [
    ["nightly", true],
    ["2026-11-29_before.upgrade", true],
    ["a", true],
    ["x".repeat(BACKUP_NAME_MAX_CHARS), true],
    ["x".repeat(BACKUP_NAME_MAX_CHARS + 1), false],
    ["", false],
    [".hidden", false],
    ["..", false],
    ["a/b", false],
    ["a b", false],
    ["ünïcode", false],
    ["semi;colon", false],
    ["x.tar", false],
    ["x.tar.gz", false],
    ["x.TGZ", false],
    ["-dash-first", true],
  ];
  for (const [name, ok] of cases) assertEquals(valid(name), ok, name);
});

Deno.test("databases are classified by location; workspace files are opaque", () => {
  const cases: [string, ReturnType<typeof databaseKind>][] = [
    ["data/agent-registry.sqlite", "registry"],
    [`data/agents/${ID}/state.sqlite`, "agent_state"],
    [`data/agents/not-an-id/state.sqlite`, "unknown"],
    [`data/agents/${ID}/other.sqlite`, "unknown"],
    ["data/other.sqlite", "unknown"],
    [`data/agents/${ID}/workspace/app.sqlite`, null],
    [`data/agents/${ID}/workspace/state.sqlite`, null],
    [`data/agents/${ID}/manifest.json`, null],
  ];
  for (const [path, kind] of cases) assertEquals(databaseKind(path), kind, path);
  assert(isWorkspacePath(`data/agents/${ID}/workspace/x`));
  assert(!isWorkspacePath(`data/agents/${ID}/workspace`));
  assert(isDatabaseCompanion("data/agent-registry.sqlite-wal"));
  assert(isDatabaseCompanion(`data/agents/${ID}/state.sqlite-shm`));
  assert(isDatabaseCompanion(`data/agents/${ID}/state.sqlite-journal`));
  assert(!isDatabaseCompanion(`data/agents/${ID}/workspace/app.sqlite-wal`));
  assert(!isDatabaseCompanion("data/notes-wal"));
});
