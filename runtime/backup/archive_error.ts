/**
 * Why an archive was refused [OP-1]: one fixed reason per check, carried by an
 * AppError("backup_invalid"). Reasons are fixed text so the CLI can print them
 * without echoing anything the archive contains (names could hold terminal
 * escape sequences).
 */
import { AppError } from "../errors.ts";

export const ARCHIVE_REASONS = {
  not_tar: "it is not a ustar archive",
  gzip_invalid: "the gzip stream is corrupt",
  bad_header: "an entry header is malformed",
  path_absolute: "an entry has an absolute path",
  path_traversal: "an entry path contains '.' or '..' components",
  path_invalid: "an entry path is empty, too long, not UTF-8 or has control characters",
  path_outside_data: "an entry lies outside data/",
  link_entry: "it contains a symbolic or hard link",
  special_entry: "it contains a device, fifo or other special entry",
  unsupported_entry: "it contains an entry type this binary does not accept",
  duplicate_entry: "an entry appears twice",
  missing_parent: "an entry's parent directory is not in the archive",
  too_many_entries: "it has more entries than allowed",
  entry_too_large: "an entry is larger than allowed",
  archive_too_large: "it is larger than allowed",
  expanded_too_large:
    "it expands to more than allowed for its compressed size (gunzip it and restore the .tar)",
  truncated: "it is truncated",
  trailing_data: "it has data after the end-of-archive marker",
  manifest_missing: "the manifest is missing or not the last entry",
  manifest_invalid: "the manifest is malformed",
  manifest_mismatch: "the entries do not match the manifest",
  digest_mismatch: "a file's SHA-256 does not match the manifest",
  database_corrupt: "a database fails its integrity check",
  database_too_new: "a database schema is newer than this binary",
  database_unknown: "it contains a database this binary does not know",
  registry_missing: "it has no Agent registry (data/agent-registry.sqlite)",
  registry_invalid:
    "its Agent registry fails the checks the server applies (schema or CHECK constraints)",
  agent_row_invalid: "an Agent's registry row is invalid (malformed id, state or generation)",
  agent_unavailable: "an Agent's folder or database fails the checks the server applies",
  agent_dir_invalid: "data/agents/ holds a folder whose name is not an Agent id",
} as const;

export type ArchiveReason = keyof typeof ARCHIVE_REASONS;

/** AppError("backup_invalid") with a machine-readable, fixed-text reason. */
export class ArchiveError extends AppError {
  readonly reason: ArchiveReason;

  constructor(reason: ArchiveReason, detail?: string) {
    super("backup_invalid", detail ? `${reason}: ${detail}` : reason);
    this.reason = reason;
  }
}

/** The fixed operator-facing sentence for a reason. */
export function describeReason(reason: ArchiveReason): string {
  return ARCHIVE_REASONS[reason];
}
