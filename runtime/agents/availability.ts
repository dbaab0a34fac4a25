/**
 * [AG-5] One broken Agent never stops the server. This file decides, for one
 * Agent, whether it can be served and — when not — the one fixed reason:
 *
 * - its registry row fails validation (id not a lowercase UUIDv4, the system
 *   flag on another id, a pending generation outside an upgrade, timestamps out
 *   of range) → `registry_row_invalid`;
 * - a managed path fails the path-safety check (symlink, foreign owner,
 *   group/world-writable, wrong type): its folder `data/agents/<id>`, its
 *   `workspace/`, its runtime dir `.runtime/agents/<id>`, or `state.sqlite`
 *   and its -wal/-shm/-journal companions;
 * - its database is not SQLite, is damaged, is newer than this binary, carries
 *   a schema its migrations did not make, or fails to migrate;
 * - anything else thrown while it was opened → `open_failed` (logged).
 *
 * The check is the same for `serve` (service.recover), `doctor` and `restore`
 * (inspect.ts). Nothing here writes; an unavailable Agent's files are left
 * exactly as found, for the operator to repair or delete.
 */
import { isModelName } from "../protocol/model_name.ts";
import {
  AGENT_RUN_DEADLINE_MIN_S,
  RUN_DEADLINE_MS,
  WORKER_MODEL_CALLS_MAX,
  WORKER_TOOL_CALLS_MAX,
} from "../limits.ts";
import { createHash } from "node:crypto";
import { UNAVAILABLE_REASON_CODES } from "../protocol/api.ts";
import { AppError } from "../errors.ts";
import { agentDataRel, agentRuntimeRel } from "../home.ts";
import { SYSTEM_AGENT_ID } from "../limits.ts";
import { checkManagedPath, isValidId } from "../path_safety.ts";
import type { AgentRow, AgentState } from "../store/registry_store.ts";
import { checkDatabaseFiles, sqliteErrcode } from "../store/sqlite.ts";

/** Every reason an Agent can be unavailable, with the operator-facing sentence. */
export const UNAVAILABLE_REASONS = {
  registry_row_invalid: "its registry row fails validation (id, state, generation or timestamps)",
  agent_dir_unsafe: "its folder data/agents/<id> (or a file in it) fails the path-safety check",
  workspace_unsafe: "its workspace folder fails the path-safety check",
  runtime_dir_unsafe: "its runtime folder .runtime/agents/<id> fails the path-safety check",
  database_unsafe:
    "state.sqlite or its -wal/-shm/-journal file is a link, foreign-owned or not private",
  database_not_sqlite: "state.sqlite is not an SQLite database (zeroed or overwritten)",
  database_corrupt: "state.sqlite is damaged (truncated or malformed)",
  database_too_new: "state.sqlite has a schema newer than this binary",
  database_schema_mismatch: "state.sqlite has a schema its migrations did not make",
  migration_failed: "state.sqlite failed to migrate",
  open_failed: "opening it failed for another reason (see the server log)",
} as const satisfies Record<typeof UNAVAILABLE_REASON_CODES[number], string>;

export type UnavailableReason = typeof UNAVAILABLE_REASON_CODES[number];

const STATES: readonly AgentState[] = ["provisioning", "active", "upgrading", "deleting"];
/** The range of a JavaScript Date, so a timestamp always renders. */
const MAX_TIME_MS = 8.64e15;

function isTime(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 && v <= MAX_TIME_MS;
}

function isGeneration(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 1;
}

const intIn = (v: unknown, min: number, max: number): number | null =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max ? v : null;

/**
 * A registry row as this binary relies on it, or null. The registry's CHECK
 * constraints (verified at open) hold the column types; this adds what they
 * cannot express.
 */
export function validateRegistryRow(raw: Record<string, unknown>): AgentRow | null {
  const { id, name, state, generation, pending_generation, is_system, created_at, updated_at } =
    raw;
  if (!isValidId(id)) return null;
  if (typeof name !== "string" || name.length < 1 || name.length > 256) return null;
  if (typeof state !== "string" || !(STATES as readonly string[]).includes(state)) return null;
  if (!isGeneration(generation)) return null;
  if (pending_generation !== null) {
    if (state !== "upgrading" || !isGeneration(pending_generation)) return null;
    if (pending_generation !== generation + 1) return null;
  }
  if (is_system !== 0 && is_system !== 1) return null;
  if ((is_system === 1) !== (id === SYSTEM_AGENT_ID)) return null;
  if (!isTime(created_at) || !isTime(updated_at)) return null;
  return {
    id,
    name,
    state: state as AgentState,
    generation,
    pending_generation: pending_generation as number | null,
    is_system,
    created_at,
    updated_at,
    // Model settings [MB-12, MB-14]: anything unexpected reads as the defaults.
    default_model_id: isModelName(raw.default_model_id) ? raw.default_model_id : null,
    reasoning: raw.reasoning === 0 ? 0 : 1,
    // Agent-loop bounds [SB-8]: anything outside the product's bounds reads as unset.
    max_model_calls: intIn(raw.max_model_calls, 1, WORKER_MODEL_CALLS_MAX),
    max_tool_calls: intIn(raw.max_tool_calls, 0, WORKER_TOOL_CALLS_MAX),
    run_deadline_s: intIn(raw.run_deadline_s, AGENT_RUN_DEADLINE_MIN_S, RUN_DEADLINE_MS / 1000),
    // The ACP runner binding [LC-6]: anything that is not a runner name reads as native.
    runner: typeof raw.runner === "string" && /^[a-z][a-z0-9-]{0,31}$/.test(raw.runner)
      ? raw.runner
      : null,
    // Documents [LC-4]: anything unexpected reads as off (fail closed).
    documents: raw.documents === 1 ? 1 : 0,
  };
}

/**
 * The id under which the API names a row whose stored id is malformed
 * (`../../x`, an upper-case UUID …): a UUIDv4 derived from the stored value, so
 * the operator can still see and delete it while the stored value never
 * reaches a path or a URL.
 */
export function surrogateId(rawId: unknown): string {
  const h = createHash("sha256").update(`agent-builder:invalid-agent-id:${String(rawId)}`)
    .digest();
  h[6] = (h[6] & 0x0f) | 0x40;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The id the API names a stored row by: its own when valid, else the surrogate. */
export function viewIdOf(rawId: unknown): string {
  return isValidId(rawId) ? rawId : surrogateId(rawId);
}

/** A stored id that is one safe path component (an upper-case UUID): its folders may be removed. */
export function isRemovableRawId(rawId: unknown): rawId is string {
  return typeof rawId === "string" && /^[0-9A-Fa-f]{8}(-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}$/.test(
    rawId,
  );
}

/** Runs one check; an unsafe_path/database_unsafe refusal becomes `reason`. */
function pathCheck(reason: UnavailableReason, check: () => unknown): UnavailableReason | null {
  try {
    check();
    return null;
  } catch (err) {
    if (err instanceof AppError && (err.code === "unsafe_path" || err.code === "database_unsafe")) {
      return reason;
    }
    throw err;
  }
}

/**
 * The path-safety part of the check, in order: folder, workspace, runtime dir,
 * database files. Missing parts pass (provisioning adds them). Never writes.
 */
export function checkAgentPaths(root: string, agentId: string): UnavailableReason | null {
  const data = agentDataRel(agentId);
  // A missing parent (a staged archive has no .runtime/) is a missing part: serve creates it.
  const under = (parent: string, rel: string) => {
    const parts = parent.split("/");
    for (let i = 1; i <= parts.length; i++) {
      if (!checkManagedPath(root, parts.slice(0, i).join("/"), "dir", true)) return false;
    }
    return checkManagedPath(root, rel, "dir", true);
  };
  return pathCheck("agent_dir_unsafe", () => under("data/agents", data)) ??
    pathCheck(
      "workspace_unsafe",
      () => under("data/agents", data) && checkManagedPath(root, `${data}/workspace`, "dir", true),
    ) ??
    pathCheck(
      "runtime_dir_unsafe",
      () => under(".runtime/agents", agentRuntimeRel(agentId)),
    ) ??
    pathCheck("database_unsafe", () => {
      if (under("data/agents", data)) {
        checkDatabaseFiles(root, `${data}/state.sqlite`);
      }
    });
}

const SQLITE_CORRUPT = 11;
const SQLITE_NOTADB = 26;

/** The reason for an error thrown while an Agent was opened, provisioned or recovered. */
export function reasonOf(err: unknown): UnavailableReason {
  if (err instanceof AppError) {
    switch (err.code) {
      case "database_unsafe":
        return "database_unsafe";
      case "database_not_sqlite":
        return "database_not_sqlite";
      case "database_corrupt":
        return "database_corrupt";
      case "database_too_new":
        return "database_too_new";
      case "database_schema_mismatch":
        return "database_schema_mismatch";
      case "database_migration_failed":
        return "migration_failed";
      case "unsafe_path":
        return "agent_dir_unsafe";
      default:
        // The workspace file layer (instruction file) refuses with path_*/file_* codes.
        if (err.code.startsWith("path_") || err.code.startsWith("file_")) {
          return "workspace_unsafe";
        }
        return "open_failed";
    }
  }
  switch (sqliteErrcode(err)) {
    case SQLITE_NOTADB:
      return "database_not_sqlite";
    case SQLITE_CORRUPT:
      return "database_corrupt";
    default:
      return "open_failed";
  }
}
