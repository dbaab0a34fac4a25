/**
 * `backup NAME` [OP-1]: streams a consistent snapshot of `data/` into
 * `backups/NAME.tar` (or `.tar.gz`), with the manifest as the last entry.
 *
 * Enforces: a validated name; private modes (backups/ 0700, archive 0600);
 * the archive is written to a private temp file and only then renamed into
 * place without replacing anything (an existing name is refused, never
 * overwritten); the data bounds a restore will accept (entries, per-file
 * and total bytes), so no backup is written that could not be restored.
 * Works while the server runs (see snapshot.ts).
 */
import { createHash } from "node:crypto";
import { Gzip } from "fflate";
import { AppError } from "../errors.ts";
import { BACKUP_ENTRIES_MAX, BACKUP_ENTRY_MAX_BYTES, BACKUP_TOTAL_MAX_BYTES } from "../limits.ts";
import { RELEASE } from "../limits.ts";
import { ensurePrivateDir, fsyncDir, pathExists } from "../path_safety.ts";
import { closeFd, randomSuffix, readFd, renameNoReplace } from "./fs.ts";
import { encodeManifest, type ManifestDatabase, type ManifestEntry } from "./manifest.ts";
import { MANIFEST_FORMAT, MANIFEST_VERSION } from "./manifest.ts";
import { MANIFEST_PATH, validateBackupName } from "./paths.ts";
import { snapshotDatabase, walkData } from "./snapshot.ts";
import { TarWriter } from "./tar.ts";

const CHUNK = 1024 * 1024;

export interface BackupProgress {
  /** File bytes archived so far. */
  bytes: number;
  files: number;
}

export interface BackupOptions {
  /** Home root (absolute, resolved). */
  root: string;
  name: string;
  /** Write `NAME.tar.gz` instead of `NAME.tar`. @default false */
  gzip?: boolean;
  /** Called as file bytes are archived (the CLI throttles its output). */
  onProgress?: (p: BackupProgress) => void;
  /** Bounds; tests lower them to hit them cheaply. @default the BACKUP_* constants */
  limits?: { entriesMax: number; entryMaxBytes: number; totalMaxBytes: number };
  /** @default () => new Date() */
  now?: () => Date;
}

export interface BackupResult {
  /** Absolute path of the finished archive. */
  path: string;
  /** Path relative to the home, e.g. `backups/nightly.tar`. */
  relative: string;
  dirs: number;
  files: number;
  databases: ManifestDatabase[];
  /** Sum of archived file sizes. */
  dataBytes: number;
  /** Size of the archive file. */
  archiveBytes: number;
  /** Entries that could not be archived (links, special files, unusable names). */
  skipped: (string | null)[];
}

/** Creates the backup; on any failure nothing is left under backups/ but the dir itself. */
export async function createBackup(opts: BackupOptions): Promise<BackupResult> {
  const name = validateBackupName(opts.name);
  const limits = opts.limits ??
    {
      entriesMax: BACKUP_ENTRIES_MAX,
      entryMaxBytes: BACKUP_ENTRY_MAX_BYTES,
      totalMaxBytes: BACKUP_TOTAL_MAX_BYTES,
    };
  const now = opts.now ?? (() => new Date());
  // SECURITY: backups/ is private (0700); every archive inside is 0600.
  const dir = ensurePrivateDir(opts.root, "backups");
  const fileName = `${name}.${opts.gzip ? "tar.gz" : "tar"}`;
  for (const taken of [`${name}.tar`, `${name}.tar.gz`]) {
    if (pathExists(`${dir}/${taken}`)) throw new AppError("backup_exists");
  }
  const work = `${dir}/.tmp-${randomSuffix()}`;
  Deno.mkdirSync(work, { mode: 0o700 });
  try {
    const archive = `${work}/archive`;
    const out = Deno.openSync(archive, { write: true, createNew: true, mode: 0o600 });
    let result: Omit<BackupResult, "path" | "relative" | "archiveBytes">;
    try {
      result = await writeArchive(opts, out, work, limits, now);
      out.syncSync();
    } finally {
      out.close();
    }
    const archiveBytes = Deno.statSync(archive).size;
    if (renameNoReplace(archive, `${dir}/${fileName}`) === "exists") {
      throw new AppError("backup_exists");
    }
    fsyncDir(dir);
    return {
      ...result,
      path: `${dir}/${fileName}`,
      relative: `backups/${fileName}`,
      archiveBytes,
    };
  } finally {
    Deno.removeSync(work, { recursive: true });
  }
}

function writeAllSync(f: Deno.FsFile, data: Uint8Array): void {
  let off = 0;
  while (off < data.length) off += f.writeSync(data.subarray(off));
}

async function writeArchive(
  opts: BackupOptions,
  out: Deno.FsFile,
  work: string,
  limits: NonNullable<BackupOptions["limits"]>,
  now: () => Date,
): Promise<Omit<BackupResult, "path" | "relative" | "archiveBytes">> {
  let gz: Gzip | null = null;
  if (opts.gzip) {
    gz = new Gzip({ level: 6 }, (chunk) => writeAllSync(out, chunk));
  }
  const tar = new TarWriter((chunk) => gz ? gz.push(chunk) : writeAllSync(out, chunk));
  const entries: ManifestEntry[] = [];
  const databases: ManifestDatabase[] = [];
  const skipped: (string | null)[] = [];
  const buf = new Uint8Array(CHUNK);
  let dataBytes = 0;
  let streamed = 0;
  const onChunk = (n: number) => {
    streamed += n;
    opts.onProgress?.({ bytes: streamed, files });
  };
  let files = 0;
  let dirs = 0;
  const account = (size: number) => {
    if (size > limits.entryMaxBytes) throw new AppError("backup_too_large", "entry");
    dataBytes += size;
    if (dataBytes > limits.totalMaxBytes) throw new AppError("backup_too_large", "total");
  };
  const createdAt = now().toISOString();
  // The registry first: an Agent created during the walk then has a directory but no
  // registry row (an orphan the server ignores), never a row without a directory.
  let registrySnapshot: { path: string; userVersion: number } | null = null;
  const regRel = "data/agent-registry.sqlite";
  if (pathExists(`${opts.root}/${regRel}`)) {
    const p = `${work}/db-registry`;
    registrySnapshot = { path: p, userVersion: await snapshotDatabase(opts.root, regRel, p) };
  }
  for (const item of walkData(opts.root, limits.entriesMax)) {
    if (item.kind === "dir") {
      tar.addDir(item.path, 0o700, item.mtime);
      entries.push({ path: item.path, type: "dir" });
      dirs++;
    } else if (item.kind === "skipped") {
      skipped.push(item.path);
    } else if (item.kind === "file") {
      try {
        account(item.size);
        const read = (view: Uint8Array) => readFd(item.fd, view);
        const sha256 = streamFile(tar, buf, read, item, onChunk);
        entries.push({ path: item.path, type: "file", size: item.size, sha256 });
      } finally {
        closeFd(item.fd);
      }
      files++;
    } else {
      let snap: string;
      let userVersion: number;
      if (item.path === regRel && registrySnapshot) {
        ({ path: snap, userVersion } = registrySnapshot);
      } else {
        snap = `${work}/db-${files}`;
        userVersion = await snapshotDatabase(opts.root, item.path, snap);
      }
      const f = Deno.openSync(snap, { read: true });
      const size = f.statSync().size;
      try {
        account(size);
        const read = (view: Uint8Array) => f.readSync(view) ?? 0;
        const mtime = now().getTime() / 1000;
        const sha256 = streamFile(tar, buf, read, { ...item, size, mode: 0o600, mtime }, onChunk);
        entries.push({ path: item.path, type: "file", size, sha256 });
      } finally {
        f.close();
      }
      Deno.removeSync(snap);
      databases.push({ path: item.path, kind: item.db, user_version: userVersion });
      files++;
    }
  }
  const manifest = encodeManifest({
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    release: RELEASE,
    created_at: createdAt,
    entries,
    databases,
  });
  tar.addFile(MANIFEST_PATH, manifest, 0o600, now().getTime() / 1000);
  tar.finish();
  gz?.push(new Uint8Array(0), true);
  return { dirs, files, databases, dataBytes, skipped };
}

/**
 * Copies exactly `size` bytes of one file into the archive and returns their
 * SHA-256. A file that shrinks while being read fails the backup (file_changed)
 * rather than archiving bytes that never existed together.
 */
function streamFile(
  tar: TarWriter,
  buf: Uint8Array,
  read: (view: Uint8Array) => number,
  file: { path: string; size: number; mode: number; mtime: number },
  onChunk: (n: number) => void,
): string {
  const hash = createHash("sha256");
  const { size } = file;
  tar.beginFile(file.path, size, file.mode, file.mtime);
  let left = size;
  while (left > 0) {
    const want = Math.min(left, buf.length);
    const n = read(buf.subarray(0, want));
    if (n <= 0) throw new AppError("file_changed", "file shrank during backup");
    const chunk = buf.subarray(0, n);
    hash.update(chunk);
    tar.write(chunk);
    left -= n;
    onChunk(n);
  }
  tar.endFile();
  return hash.digest("hex");
}
