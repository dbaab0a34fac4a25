/**
 * The backup manifest [OP-1]: format version, creating release and time, every
 * archived entry with its size and SHA-256, and every database with its kind
 * and schema version. It is the archive's last entry, so each digest is of
 * the bytes actually written. Pure: schema, encoding and the comparison a
 * restore runs against what it extracted.
 */
import { z } from "zod";
import {
  BACKUP_ENTRIES_MAX,
  BACKUP_ENTRY_MAX_BYTES,
  BACKUP_MANIFEST_MAX_BYTES,
} from "../limits.ts";
import { ArchiveError } from "./archive_error.ts";

export const MANIFEST_FORMAT = "agent-builder-backup";
export const MANIFEST_VERSION = 1;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const DirEntry = z.object({ path: z.string().min(1), type: z.literal("dir") }).strict();
const FileEntry = z.object({
  path: z.string().min(1),
  type: z.literal("file"),
  size: z.number().int().min(0).max(BACKUP_ENTRY_MAX_BYTES),
  sha256: Sha256,
}).strict();

export const ManifestEntry = z.discriminatedUnion("type", [DirEntry, FileEntry]);
export type ManifestEntry = z.infer<typeof ManifestEntry>;

export const ManifestDatabase = z.object({
  path: z.string().min(1),
  kind: z.enum(["registry", "agent_state", "unknown"]),
  user_version: z.number().int().min(0),
}).strict();
export type ManifestDatabase = z.infer<typeof ManifestDatabase>;

export const Manifest = z.object({
  format: z.literal(MANIFEST_FORMAT),
  version: z.literal(MANIFEST_VERSION),
  release: z.string().max(64),
  created_at: z.iso.datetime(),
  entries: z.array(ManifestEntry).max(BACKUP_ENTRIES_MAX),
  databases: z.array(ManifestDatabase).max(BACKUP_ENTRIES_MAX),
}).strict();
export type Manifest = z.infer<typeof Manifest>;

export function encodeManifest(m: Manifest): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(Manifest.parse(m), null, 1) + "\n");
}

/** Parses manifest bytes strictly; throws ArchiveError("manifest_invalid"). */
export function decodeManifest(bytes: Uint8Array): Manifest {
  if (bytes.length > BACKUP_MANIFEST_MAX_BYTES) throw new ArchiveError("manifest_invalid", "size");
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof TypeError) {
      throw new ArchiveError("manifest_invalid", "not JSON");
    }
    throw err;
  }
  const r = Manifest.safeParse(raw);
  if (!r.success) throw new ArchiveError("manifest_invalid", "schema");
  return r.data;
}

/**
 * Checks that what was extracted is exactly what the manifest lists: the same
 * paths with the same types and sizes (manifest_mismatch) and the same
 * digests (digest_mismatch).
 */
export function compareWithManifest(m: Manifest, extracted: readonly ManifestEntry[]): void {
  const listed = new Map<string, ManifestEntry>();
  for (const e of m.entries) {
    if (listed.has(e.path)) throw new ArchiveError("manifest_mismatch", "duplicate path");
    listed.set(e.path, e);
  }
  if (listed.size !== extracted.length) throw new ArchiveError("manifest_mismatch", "count");
  let digestBad = false;
  for (const e of extracted) {
    const l = listed.get(e.path);
    if (!l || l.type !== e.type) throw new ArchiveError("manifest_mismatch", "entry");
    if (l.type === "file" && e.type === "file") {
      if (l.size !== e.size) throw new ArchiveError("manifest_mismatch", "size");
      if (l.sha256 !== e.sha256) digestBad = true;
    }
  }
  if (digestBad) throw new ArchiveError("digest_mismatch");
}

/** Checks the databases found (kind, schema version) against the manifest's list. */
export function compareDatabases(m: Manifest, databases: readonly ManifestDatabase[]): void {
  const key = (d: ManifestDatabase) => `${d.path}\n${d.kind}\n${d.user_version}`;
  const want = new Set(m.databases.map(key));
  if (want.size !== databases.length || !databases.every((d) => want.has(key(d)))) {
    throw new ArchiveError("manifest_mismatch", "databases");
  }
}
