/**
 * What `serve` would make of a home's data, without changing it [AG-5, OP-4]:
 * the registry's file safety and schema (the CHECK constraints included), then
 * each registry row and each Agent's folders and database, with the same
 * checks and reasons as start-up (availability.ts). `doctor` prints it for the
 * live home; `restore` runs it on the staged archive and refuses anything
 * short of a home where every Agent serves.
 *
 * Databases are opened with query_only and trusted_schema off, after their
 * files passed the path checks; nothing is migrated, created or repaired.
 */
import { DatabaseSync } from "node:sqlite";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { REGISTRY_MIGRATIONS } from "../../migrations/registry/index.ts";
import { AppError } from "../errors.ts";
import { agentDataRel } from "../home.ts";
import { checkManagedPath, isValidId } from "../path_safety.ts";
import type { Migration } from "../store/migrate.ts";
import { listAgentRowsRaw } from "../store/registry_store.ts";
import { verifySchema } from "../store/schema_check.ts";
import { checkDatabaseFiles, openForReading, passesQuickCheck } from "../store/sqlite.ts";
import {
  checkAgentPaths,
  reasonOf,
  type UnavailableReason,
  validateRegistryRow,
  viewIdOf,
} from "./availability.ts";

export const REGISTRY_REL = "data/agent-registry.sqlite";

/** Why the registry itself cannot be served (serve refuses to start), or ok. */
export type RegistryVerdict =
  | "ok"
  | "missing"
  | "unsafe_path"
  | "database_unsafe"
  | "database_not_sqlite"
  | "database_corrupt"
  | "database_too_new"
  | "database_schema_mismatch";

export interface AgentInspection {
  /** The id the API uses (a surrogate for a malformed stored id). */
  id: string;
  name: string;
  reason: UnavailableReason | null;
}

export interface HomeInspection {
  registry: RegistryVerdict;
  agents: AgentInspection[];
  /** How many entries of data/agents/ have names that are not Agent ids. */
  strayAgentDirs: number;
}

/** Opens a database for reading only; its schema must be what its migrations made. */
function openChecked(path: string, migrations: readonly Migration[]): DatabaseSync {
  const db = openForReading(path);
  try {
    const verdict = verifySchema(db, migrations);
    if (verdict === "too_new") throw new AppError("database_too_new", path);
    if (verdict === "mismatch") throw new AppError("database_schema_mismatch", path);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function registryVerdict(err: unknown): RegistryVerdict {
  if (err instanceof AppError) {
    switch (err.code) {
      case "unsafe_path":
      case "database_unsafe":
      case "database_too_new":
      case "database_schema_mismatch":
        return err.code;
    }
  }
  const r = reasonOf(err);
  if (r === "database_not_sqlite" || r === "database_corrupt") return r;
  throw err;
}

/** One Agent's database, read-only: null when it would open and migrate. */
function checkAgentDatabase(
  root: string,
  agentId: string,
  quickCheck: boolean,
): UnavailableReason | null {
  const rel = `${agentDataRel(agentId)}/state.sqlite`;
  if (!checkManagedPath(root, rel, "file", true)) return null;
  try {
    const db = openChecked(`${root}/${rel}`, AGENT_MIGRATIONS);
    try {
      // A damaged page the open cannot see would fail a query later (serve marks the Agent then).
      if (quickCheck) {
        if (!passesQuickCheck(db)) return "database_corrupt";
      }
    } finally {
      db.close();
    }
    return null;
  } catch (err) {
    const reason = reasonOf(err);
    if (reason === "open_failed") throw err;
    return reason;
  }
}

export interface InspectOptions {
  /**
   * Run `PRAGMA quick_check` on every Agent database (doctor). Restore leaves it
   * off: it has already run integrity_check on every staged database.
   * @default true
   */
  quickCheck?: boolean;
}

/** Inspects the home at `root` (a live home, or a restore's staging root). */
export function inspectHome(root: string, opts: InspectOptions = {}): HomeInspection {
  const out: HomeInspection = { registry: "ok", agents: [], strayAgentDirs: 0 };
  if (checkManagedPath(root, "data/agents", "dir", true)) {
    for (const e of Deno.readDirSync(`${root}/data/agents`)) {
      if (!isValidId(e.name)) out.strayAgentDirs++;
    }
  }
  let rows: Record<string, unknown>[];
  try {
    if (!checkManagedPath(root, REGISTRY_REL, "file", true)) {
      out.registry = "missing";
      return out;
    }
    checkDatabaseFiles(root, REGISTRY_REL);
    const db = openChecked(`${root}/${REGISTRY_REL}`, REGISTRY_MIGRATIONS);
    try {
      rows = listAgentRowsRaw(db);
    } finally {
      db.close();
    }
  } catch (err) {
    out.registry = registryVerdict(err);
    return out;
  }
  for (const raw of rows) {
    const row = validateRegistryRow(raw);
    const name = typeof raw.name === "string" ? raw.name : "";
    if (!row) {
      out.agents.push({ id: viewIdOf(raw.id), name, reason: "registry_row_invalid" });
      continue;
    }
    const reason = checkAgentPaths(root, row.id) ??
      checkAgentDatabase(root, row.id, opts.quickCheck ?? true);
    out.agents.push({ id: row.id, name: row.name, reason });
  }
  return out;
}
