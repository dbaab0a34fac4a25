/**
 * What a backup may contain and how its paths are classified [OP-1]. Pure.
 *
 * An archive holds `data/` (directories and regular files below it) and one
 * `manifest.json`. Every path is relative, `/`-separated, valid UTF-8 without
 * control characters, free of empty, `.` and `..` components, and within the
 * byte bounds. Product databases are recognised by location: the registry and
 * each Agent's state database have a known schema (migration list); any other
 * `*.sqlite` outside an Agent workspace is a database this binary does not
 * know. Files inside `data/agents/<id>/workspace/` are opaque Capsule content.
 */
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { BACKUP_NAME_MAX_CHARS, BACKUP_PATH_COMPONENT_MAX_BYTES } from "../limits.ts";
import { BACKUP_PATH_MAX_BYTES } from "../limits.ts";
import { AppError } from "../errors.ts";
import type { Migration } from "../store/migrate.ts";
import { isValidId } from "../path_safety.ts";
import { ArchiveError } from "./archive_error.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export const MANIFEST_PATH = "manifest.json";
export const DATA_DIR = "data";

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Validates one archive path and returns it unchanged. Throws ArchiveError
 * with the specific reason (absolute, traversal, invalid, outside data/).
 */
export function checkArchivePath(path: string): string {
  if (path.startsWith("/")) throw new ArchiveError("path_absolute");
  if (path.length === 0 || CONTROL.test(path) || path.includes("\\")) {
    throw new ArchiveError("path_invalid");
  }
  if (utf8Bytes(path) > BACKUP_PATH_MAX_BYTES) throw new ArchiveError("path_invalid");
  const parts = path.split("/");
  for (const p of parts) {
    if (p === "." || p === "..") throw new ArchiveError("path_traversal");
    if (p.length === 0 || utf8Bytes(p) > BACKUP_PATH_COMPONENT_MAX_BYTES) {
      throw new ArchiveError("path_invalid");
    }
  }
  if (path !== MANIFEST_PATH && parts[0] !== DATA_DIR) {
    throw new ArchiveError("path_outside_data");
  }
  return path;
}

/** The parent directory of an archive path ("" for top-level entries). */
export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}

/** True for paths inside an Agent's Capsule workspace (opaque content). */
export function isWorkspacePath(path: string): boolean {
  const p = path.split("/");
  return p.length >= 5 && p[0] === "data" && p[1] === "agents" && p[3] === "workspace";
}

export type DatabaseKind = "registry" | "agent_state" | "unknown";

/**
 * Known databases and the migrations that define their schema. Add a row
 * here when a new product database appears under data/.
 */
export function databaseKind(path: string): DatabaseKind | null {
  if (isWorkspacePath(path) || !path.endsWith(".sqlite")) return null;
  if (path === "data/agent-registry.sqlite") return "registry";
  const p = path.split("/");
  if (p.length === 4 && p[1] === "agents" && isValidId(p[2]) && p[3] === "state.sqlite") {
    return "agent_state";
  }
  return "unknown";
}

/** The migration list a known database kind is defined by. */
export function migrationsFor(kind: Exclude<DatabaseKind, "unknown">): readonly Migration[] {
  switch (kind) {
    case "registry":
      return REGISTRY_MIGRATIONS;
    case "agent_state":
      return AGENT_MIGRATIONS;
    default: {
      const never: never = kind;
      throw new Error(`unknown kind ${never}`);
    }
  }
}

/** SQLite's transient companions, never archived (the snapshot contains them). */
export function isDatabaseCompanion(path: string): boolean {
  for (const suffix of ["-wal", "-shm", "-journal"]) {
    if (path.endsWith(suffix) && databaseKind(path.slice(0, -suffix.length)) !== null) return true;
  }
  return false;
}

const NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * Backup names: 1..BACKUP_NAME_MAX_CHARS of `[A-Za-z0-9._-]`, no leading dot,
 * not ending in `.tar`/`.gz` (the extension is added). Throws
 * AppError("backup_name_invalid").
 */
export function validateBackupName(name: string): string {
  if (
    name.length === 0 || name.length > BACKUP_NAME_MAX_CHARS || !NAME_RE.test(name) ||
    /\.(tar|gz|tgz)$/i.test(name)
  ) {
    throw new AppError("backup_name_invalid");
  }
  return name;
}
