/**
 * Skill archives [LC-3]: the raw `.tar.gz` body of `POST …/skills`, checked
 * against the operator's `X-Skill-SHA256` before anything else looks at it.
 *
 * What this file enforces, in order (each refusal one fixed code):
 *  - the digest header is 64 hex digits (`skill_digest_missing`) and the
 *    archive is ≤ SKILL_ARCHIVE_MAX_BYTES (`skill_archive_too_large`);
 *  - SHA-256 of the exact bytes equals it (`skill_digest_mismatch`) — nothing
 *    is decompressed before the pin holds;
 *  - gzip only; the expanded tar stream is counted before it reaches the
 *    parser and cut at SKILL_TAR_STREAM_MAX_BYTES (`skill_expanded_too_large`),
 *    inflated in BACKUP_GZIP_STEP_BYTES steps (the backup restore's bound);
 *  - the strict ustar parser of the backups (runtime/backup/tar_parser.ts):
 *    links, devices and fifos → `skill_link_refused`; a member past
 *    SKILL_EXPANDED_MAX_BYTES (or skill.json past SKILL_MANIFEST_MAX_BYTES) →
 *    `skill_member_too_large`; members past SKILL_EXPANDED_MAX_BYTES together
 *    → `skill_expanded_too_large`; anything malformed → `skill_archive_invalid`;
 *  - members: exactly `skill.json` and the entry script it names, at the top
 *    level (a `./` prefix and a `.` directory entry are tolerated, as `tar -C
 *    dir .` writes them); any other file, directory or a duplicate →
 *    `skill_extra_file`;
 *  - the manifest (manifest.ts) and a UTF-8 entry script.
 * Pure (no I/O).
 */
import { Gunzip } from "fflate";
import { AppError, type ErrorCode } from "../errors.ts";
import {
  BACKUP_GZIP_STEP_BYTES,
  SKILL_ARCHIVE_MAX_BYTES,
  SKILL_EXPANDED_MAX_BYTES,
  SKILL_MANIFEST_MAX_BYTES,
  SKILL_TAR_STREAM_MAX_BYTES,
} from "../limits.ts";
import { ArchiveError, type ArchiveReason } from "../backup/archive_error.ts";
import { TarParser } from "../backup/tar_parser.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import { parseManifest, SKILL_MANIFEST_FILE, type SkillManifest } from "./manifest.ts";

export const SKILL_DIGEST_RE = /^[0-9a-fA-F]{64}$/;

/** What a verified archive holds. */
export interface VerifiedSkill {
  manifest: SkillManifest;
  /** The exact `skill.json` text (shown to the operator). */
  manifestText: string;
  spec: ToolSpec;
  script: Uint8Array;
  /** Lower-case hex SHA-256 of the archive. */
  digest: string;
  archiveBytes: number;
}

const REASON_CODES: Partial<Record<ArchiveReason, ErrorCode>> = {
  link_entry: "skill_link_refused",
  special_entry: "skill_link_refused",
  entry_too_large: "skill_member_too_large",
  archive_too_large: "skill_expanded_too_large",
  too_many_entries: "skill_extra_file",
};

function fromArchiveError(err: unknown): unknown {
  if (!(err instanceof ArchiveError)) return err;
  return new AppError(REASON_CODES[err.reason] ?? "skill_archive_invalid", err.reason);
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A member name as written by `tar` (`./x` or `x`); null for the top directory itself. */
function memberName(path: string): string | null {
  const p = path.startsWith("./") ? path.slice(2) : path;
  return p === "" || p === "." ? null : p;
}

/** Verifies an uploaded skill archive; throws AppError with a fixed `skill_*` code. */
export async function verifySkillArchive(
  bytes: Uint8Array,
  digestHeader: string | null,
): Promise<VerifiedSkill> {
  if (digestHeader === null || !SKILL_DIGEST_RE.test(digestHeader.trim())) {
    throw new AppError("skill_digest_missing");
  }
  if (bytes.length > SKILL_ARCHIVE_MAX_BYTES) throw new AppError("skill_archive_too_large");
  const digest = await sha256Hex(bytes);
  if (digest !== digestHeader.trim().toLowerCase()) throw new AppError("skill_digest_mismatch");
  if (bytes.length < 2 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    throw new AppError("skill_archive_invalid", "not gzip");
  }
  const files = new Map<string, Uint8Array>();
  let open: { name: string; parts: Uint8Array[]; got: number } | null = null;
  const parser = new TarParser({
    entriesMax: 3,
    entryMaxBytes: SKILL_EXPANDED_MAX_BYTES,
    totalMaxBytes: SKILL_EXPANDED_MAX_BYTES,
    streamMaxBytes: SKILL_TAR_STREAM_MAX_BYTES,
    paxMaxBytes: 512,
    trailerMaxBytes: SKILL_TAR_STREAM_MAX_BYTES,
  });
  const feed = (chunk: Uint8Array) => {
    for (const ev of parser.push(chunk)) {
      if (ev.kind === "entry") {
        const name = memberName(ev.entry.path);
        if (ev.entry.type === "dir") {
          if (name !== null) throw new AppError("skill_extra_file", "directory");
          continue;
        }
        if (name === null || name.includes("/") || files.has(name) || open !== null) {
          throw new AppError("skill_extra_file", "member name");
        }
        if (name === SKILL_MANIFEST_FILE && ev.entry.size > SKILL_MANIFEST_MAX_BYTES) {
          throw new AppError("skill_member_too_large", "skill.json");
        }
        open = { name, parts: [], got: 0 };
      } else if (ev.kind === "data") {
        if (open === null) throw new AppError("skill_archive_invalid", "data");
        open.parts.push(ev.bytes.slice());
        open.got += ev.bytes.length;
      } else if (ev.kind === "entry_end") {
        if (open === null) continue; // a directory entry
        const all = new Uint8Array(open.got);
        let off = 0;
        for (const p of open.parts) {
          all.set(p, off);
          off += p.length;
        }
        files.set(open.name, all);
        open = null;
      }
    }
  };
  let expanded = 0;
  try {
    const gunzip = new Gunzip((chunk) => {
      // Counted before the parser sees it: a bomb stops at the cap.
      expanded += chunk.length;
      if (expanded > SKILL_TAR_STREAM_MAX_BYTES) throw new AppError("skill_expanded_too_large");
      feed(chunk);
    });
    for (let off = 0; off < bytes.length; off += BACKUP_GZIP_STEP_BYTES) {
      const end = Math.min(bytes.length, off + BACKUP_GZIP_STEP_BYTES);
      gunzip.push(bytes.subarray(off, end), end === bytes.length);
    }
    parser.finish();
  } catch (err) {
    if (err instanceof AppError && !(err instanceof ArchiveError)) throw err;
    if (err instanceof ArchiveError) throw fromArchiveError(err);
    throw new AppError("skill_archive_invalid", "gzip");
  }
  const manifestBytes = files.get(SKILL_MANIFEST_FILE);
  if (manifestBytes === undefined) throw new AppError("skill_manifest_invalid", "missing");
  const { manifest, spec } = parseManifest(manifestBytes);
  const script = files.get(manifest.entry);
  if (script === undefined) throw new AppError("skill_manifest_invalid", "entry missing");
  if (files.size !== 2) throw new AppError("skill_extra_file", "extra member");
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(script);
  } catch {
    throw new AppError("skill_archive_invalid", "script not UTF-8");
  }
  return {
    manifest,
    manifestText: new TextDecoder().decode(manifestBytes),
    spec,
    script,
    digest,
    archiveBytes: bytes.length,
  };
}
