/**
 * Managed-path safety [PK-4]: every path the product manages under its home is
 * checked component by component — no symlinks, owned by the current uid, not
 * group/world-writable, and of the expected type. Refusals throw
 * AppError("unsafe_path") with the reason in the log-only detail.
 *
 * This module enforces the policy on paths the Control Plane itself manages
 * (home, data, runtime dirs, databases). Model-chosen workspace paths go
 * through the descriptor-anchored executors in sandbox/, not through here.
 */
import { AppError } from "./errors.ts";

export type EntryKind = "dir" | "file";

/** The real uid of this process (Deno.uid() is null only on Windows). */
export function currentUid(): number {
  const uid = Deno.uid();
  if (uid === null) throw new AppError("unsafe_path", "no uid on this platform");
  return uid;
}

function checkInfo(path: string, info: Deno.FileInfo, kind: EntryKind, uid: number): void {
  if (info.isSymlink) throw new AppError("unsafe_path", `symlink: ${path}`);
  if (kind === "dir" && !info.isDirectory) throw new AppError("unsafe_path", `not a dir: ${path}`);
  if (kind === "file" && !info.isFile) throw new AppError("unsafe_path", `not a file: ${path}`);
  if (info.uid !== uid) throw new AppError("unsafe_path", `foreign owner: ${path}`);
  if (info.mode === null || (info.mode & 0o022) !== 0) {
    throw new AppError("unsafe_path", `group/world-writable: ${path}`);
  }
}

/**
 * Checks `relative` (a `/`-separated path below `root`) component by component.
 * `root` itself must be a directory owned by us and not group/world-writable.
 * Intermediate components must be directories; the leaf must be `leafKind`.
 * A missing leaf returns false when `allowMissingLeaf` is set; any other
 * missing component, and every unsafe one, throws.
 */
export function checkManagedPath(
  root: string,
  relative: string,
  leafKind: EntryKind,
  allowMissingLeaf = false,
): boolean {
  const uid = currentUid();
  checkInfo(root, Deno.lstatSync(root), "dir", uid);
  const parts = relative.split("/").filter((p) => p.length > 0);
  for (const p of parts) {
    if (p === "." || p === "..") throw new AppError("unsafe_path", `dot component in ${relative}`);
  }
  let path = root;
  for (let i = 0; i < parts.length; i++) {
    path = `${path}/${parts[i]}`;
    const isLeaf = i === parts.length - 1;
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound && isLeaf && allowMissingLeaf) return false;
      if (err instanceof Deno.errors.NotFound) {
        throw new AppError("unsafe_path", `missing: ${path}`);
      }
      throw err;
    }
    checkInfo(path, info, isLeaf ? leafKind : "dir", uid);
  }
  return true;
}

/**
 * Creates (if missing) a private 0700 directory chain below `root`, checking
 * every existing component first. Never follows a symlink it did not create.
 */
export function ensurePrivateDir(root: string, relative: string): string {
  const uid = currentUid();
  checkInfo(root, Deno.lstatSync(root), "dir", uid);
  const parts = relative.split("/").filter((p) => p.length > 0);
  let path = root;
  for (const p of parts) {
    if (p === "." || p === "..") throw new AppError("unsafe_path", `dot component in ${relative}`);
    path = `${path}/${p}`;
    // Looked at first: an existing component (the usual case, e.g. every Run's runs/ directory)
    // costs one lstat, not a refused mkdir's thrown error as well [PF-1].
    let info: Deno.FileInfo | null = null;
    try {
      info = Deno.lstatSync(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    if (info === null) {
      try {
        Deno.mkdirSync(path, { mode: 0o700 });
      } catch (err) {
        if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      }
      info = Deno.lstatSync(path);
    }
    checkInfo(path, info, "dir", uid);
  }
  return path;
}

/**
 * Writes `data` to `root/relative` atomically and privately: a 0600 temp file
 * in the same directory (created exclusively), fsync, rename over the target,
 * then fsync of the directory.
 */
export function writePrivateFileAtomic(root: string, relative: string, data: Uint8Array): void {
  const slash = relative.lastIndexOf("/");
  const dirRel = slash >= 0 ? relative.slice(0, slash) : "";
  const name = slash >= 0 ? relative.slice(slash + 1) : relative;
  const dir = dirRel ? ensurePrivateDir(root, dirRel) : root;
  checkManagedPath(root, relative, "file", true);
  const rand = crypto.getRandomValues(new Uint8Array(8));
  const tmp = `${dir}/.${name}.tmp-${
    Array.from(rand, (b) => b.toString(16).padStart(2, "0")).join("")
  }`;
  const file = Deno.openSync(tmp, { write: true, createNew: true, mode: 0o600 });
  try {
    let off = 0;
    while (off < data.length) off += file.writeSync(data.subarray(off));
    file.syncSync();
  } finally {
    file.close();
  }
  try {
    Deno.renameSync(tmp, `${dir}/${name}`);
  } catch (err) {
    Deno.removeSync(tmp);
    throw err;
  }
  fsyncDir(dir);
}

/** fsync a directory so a rename/create inside it is durable. */
/** Whether anything (a link included, never followed) is at `path`; other errors propagate. */
export function pathExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

export function fsyncDir(dir: string): void {
  const d = Deno.openSync(dir, { read: true });
  try {
    d.syncSync();
  } finally {
    d.close();
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Agent, Conversation, Turn and Run ids are lowercase UUIDv4 strings [PK-4]. */
export function isValidId(value: unknown): value is string {
  return typeof value === "string" && UUID_RE.test(value);
}

export function assertValidId(value: unknown): string {
  if (!isValidId(value)) throw new AppError("invalid_id");
  return value;
}
