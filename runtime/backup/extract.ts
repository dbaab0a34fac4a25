/**
 * Reading and validating a whole archive into a private staging directory
 * [OP-1]. Nothing outside `stagingRoot` is written.
 *
 * Enforces, in one streaming pass: the raw and decompressed size caps — a
 * gzip stream's expanded bytes are counted before they reach the tar parser
 * and refused the moment they pass max(floor, ratio × archive size), so a
 * compression bomb writes at most that cap to staging [OP-4]; the
 * strict ustar format (tar.ts: no links, devices, fifos, truncation,
 * trailing data); the path policy (paths.ts: no absolute or `..` paths,
 * everything under data/); each entry once, after its parent directory; no
 * SQLite companion files (a hot journal would be replayed on open); the
 * manifest as the last entry; and that the extracted entries, sizes and
 * SHA-256 digests are exactly the manifest's.
 *
 * SECURITY: staging is a fresh 0700 directory this process created, and every
 * file is created with O_EXCL (createNew) below a directory this pass created
 * itself, so no pre-existing link can redirect a write.
 */
import { createHash, type Hash } from "node:crypto";
import { Gunzip } from "fflate";
import {
  BACKUP_ARCHIVE_MAX_BYTES,
  BACKUP_ENTRIES_MAX,
  BACKUP_ENTRY_MAX_BYTES,
  BACKUP_GZIP_FLOOR_BYTES,
  BACKUP_GZIP_RATIO_MAX,
  BACKUP_GZIP_STEP_BYTES,
  BACKUP_MANIFEST_MAX_BYTES,
  BACKUP_PAX_MAX_BYTES,
  BACKUP_TOTAL_MAX_BYTES,
  BACKUP_TRAILER_MAX_BYTES,
} from "../limits.ts";
import { ArchiveError } from "./archive_error.ts";
import { compareWithManifest, decodeManifest, type Manifest } from "./manifest.ts";
import type { ManifestEntry } from "./manifest.ts";
import { checkArchivePath, isDatabaseCompanion, MANIFEST_PATH, parentOf } from "./paths.ts";
import { type TarEvent, type TarLimits, TarParser } from "./tar_parser.ts";

const CHUNK = 256 * 1024;

export const DEFAULT_TAR_LIMITS: TarLimits = {
  entriesMax: BACKUP_ENTRIES_MAX,
  entryMaxBytes: BACKUP_ENTRY_MAX_BYTES,
  totalMaxBytes: BACKUP_TOTAL_MAX_BYTES,
  streamMaxBytes: BACKUP_ARCHIVE_MAX_BYTES,
  paxMaxBytes: BACKUP_PAX_MAX_BYTES,
  trailerMaxBytes: BACKUP_TRAILER_MAX_BYTES,
};

/** How far a gzip archive may expand [OP-4]. */
export interface ExpansionLimits {
  /** Expanded bytes allowed per archive byte. @default BACKUP_GZIP_RATIO_MAX */
  ratioMax: number;
  /** Expanded bytes always allowed. @default BACKUP_GZIP_FLOOR_BYTES */
  floorBytes: number;
}

export const DEFAULT_EXPANSION: ExpansionLimits = {
  ratioMax: BACKUP_GZIP_RATIO_MAX,
  floorBytes: BACKUP_GZIP_FLOOR_BYTES,
};

/** The most a gzip archive of `archiveBytes` may expand to (never above the stream cap). */
export function expandedCap(
  archiveBytes: number,
  e: ExpansionLimits,
  streamMaxBytes: number,
): number {
  return Math.min(streamMaxBytes, Math.max(e.floorBytes, archiveBytes * e.ratioMax));
}

export interface ExtractOptions {
  /** Archive file chosen by the operator. */
  file: string;
  /** Existing private directory; `data/` is created inside it. */
  stagingRoot: string;
  /** @default DEFAULT_TAR_LIMITS */
  limits?: TarLimits;
  /** @default DEFAULT_EXPANSION */
  expansion?: ExpansionLimits;
  /** Raw bytes read so far and the archive's size. */
  onProgress?: (read: number, size: number) => void;
}

export interface Extracted {
  manifest: Manifest;
  entries: ManifestEntry[];
  gzip: boolean;
  archiveBytes: number;
}

function writeAll(f: Deno.FsFile, data: Uint8Array): void {
  let off = 0;
  while (off < data.length) off += f.writeSync(data.subarray(off));
}

/** Applies parser events to the staging tree. */
class Extractor {
  readonly entries: ManifestEntry[] = [];
  manifestBytes: Uint8Array | null = null;
  #root: string;
  #seen = new Set<string>();
  #dirs = new Set<string>([""]);
  #open: { path: string; file: Deno.FsFile; hash: Hash; size: number } | null = null;
  #manifest: { buf: Uint8Array; got: number } | null = null;

  constructor(root: string) {
    this.#root = root;
  }

  apply(ev: TarEvent): void {
    switch (ev.kind) {
      case "entry": {
        const { path, type, size, mode } = ev.entry;
        checkArchivePath(path);
        if (this.manifestBytes !== null || this.#manifest) {
          throw new ArchiveError("manifest_missing", "entry after manifest");
        }
        if (this.#seen.has(path)) throw new ArchiveError("duplicate_entry");
        this.#seen.add(path);
        if (path === MANIFEST_PATH) {
          if (type !== "file" || size > BACKUP_MANIFEST_MAX_BYTES) {
            throw new ArchiveError("manifest_invalid", "type or size");
          }
          this.#manifest = { buf: new Uint8Array(size), got: 0 };
          return;
        }
        if (!this.#dirs.has(parentOf(path))) throw new ArchiveError("missing_parent");
        if (isDatabaseCompanion(path)) throw new ArchiveError("unsupported_entry", "companion");
        if (type === "dir") {
          // SECURITY: 0700, created fresh (mkdir fails if anything exists there).
          Deno.mkdirSync(`${this.#root}/${path}`, { mode: 0o700 });
          this.#dirs.add(path);
          this.entries.push({ path, type: "dir" });
        } else {
          if (path === "data") throw new ArchiveError("bad_header", "data is not a directory");
          // SECURITY: O_EXCL create, private mode; only the owner-execute bit survives.
          const file = Deno.openSync(`${this.#root}/${path}`, {
            write: true,
            createNew: true,
            mode: 0o600 | (mode & 0o100),
          });
          this.#open = { path, file, hash: createHash("sha256"), size };
        }
        return;
      }
      case "data":
        if (this.#manifest) {
          this.#manifest.buf.set(ev.bytes, this.#manifest.got);
          this.#manifest.got += ev.bytes.length;
        } else if (this.#open) {
          writeAll(this.#open.file, ev.bytes);
          this.#open.hash.update(ev.bytes);
        }
        return;
      case "entry_end":
        if (this.#manifest) {
          this.manifestBytes = this.#manifest.buf;
          this.#manifest = null;
        } else if (this.#open) {
          const o = this.#open;
          this.#open = null;
          o.file.syncSync();
          o.file.close();
          this.entries.push({
            path: o.path,
            type: "file",
            size: o.size,
            sha256: o.hash.digest("hex"),
          });
        }
        return;
      case "end":
        return;
    }
  }

  close(): void {
    this.#open?.file.close();
    this.#open = null;
  }
}

function gzipError(err: unknown): ArchiveError | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (!(err instanceof Error) || typeof code !== "number") return null;
  return new ArchiveError(code === 0 ? "truncated" : "gzip_invalid", err.message);
}

/** Streams `opts.file` into `opts.stagingRoot` and checks it against its manifest. */
export function extractArchive(opts: ExtractOptions): Extracted {
  const limits = opts.limits ?? DEFAULT_TAR_LIMITS;
  const info = Deno.statSync(opts.file);
  if (!info.isFile) throw new ArchiveError("not_tar", "not a regular file");
  if (info.size > limits.streamMaxBytes) throw new ArchiveError("archive_too_large");
  const parser = new TarParser(limits);
  const ex = new Extractor(opts.stagingRoot);
  const feed = (chunk: Uint8Array) => {
    for (const ev of parser.push(chunk)) ex.apply(ev);
  };
  const cap = expandedCap(info.size, opts.expansion ?? DEFAULT_EXPANSION, limits.streamMaxBytes);
  let expanded = 0;
  const feedExpanded = (chunk: Uint8Array) => {
    // [OP-4] Counted before anything reaches staging: a bomb is refused at the cap.
    expanded += chunk.length;
    if (expanded > cap) throw new ArchiveError("expanded_too_large");
    feed(chunk);
  };
  const f = Deno.openSync(opts.file, { read: true });
  let gzip = false;
  try {
    const buf = new Uint8Array(CHUNK);
    let read = 0;
    let gunzip: Gunzip | null = null;
    for (;;) {
      const n = f.readSync(buf) ?? 0;
      if (read === 0 && n >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) {
        gzip = true;
        gunzip = new Gunzip((chunk) => feedExpanded(chunk));
      }
      read += n;
      if (read > limits.streamMaxBytes) throw new ArchiveError("archive_too_large");
      try {
        if (gunzip) {
          // Small steps: one step inflates to at most ~1032× its size in memory.
          for (let off = 0; off < n; off += BACKUP_GZIP_STEP_BYTES) {
            gunzip.push(buf.slice(off, Math.min(n, off + BACKUP_GZIP_STEP_BYTES)), false);
          }
          if (n === 0) gunzip.push(new Uint8Array(0), true);
        } else if (n > 0) feed(buf.subarray(0, n));
      } catch (err) {
        throw gzipError(err) ?? err;
      }
      opts.onProgress?.(read, info.size);
      if (n === 0) break;
    }
    parser.finish();
  } finally {
    f.close();
    ex.close();
  }
  if (ex.manifestBytes === null) throw new ArchiveError("manifest_missing");
  const manifest = decodeManifest(ex.manifestBytes);
  compareWithManifest(manifest, ex.entries);
  return { manifest, entries: ex.entries, gzip, archiveBytes: info.size };
}
