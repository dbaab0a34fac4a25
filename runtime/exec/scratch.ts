/**
 * The scratch copy of a workspace [EX-3]: made at a Run's first command,
 * refreshed from the workspace before each later one, deleted at the Run's
 * terminal. Commands run here, never on the workspace itself.
 *
 * What this file enforces:
 * - the workspace is walked descriptor-anchored (sandbox/fs_anchor.ts
 *   `openBeneath`: no symlink, magic link or mount is ever followed); the
 *   scratch is written the same way, so a link a command planted in the
 *   scratch cannot redirect a sync;
 * - ≤ SCRATCH_ENTRIES_MAX entries and ≤ SCRATCH_BYTES_MAX bytes of regular
 *   files, else `workspace_too_large` (a first copy that fails is removed);
 * - FIFOs, sockets, devices, hard-linked files, entries on another device and
 *   names that are not UTF-8 are left out, each with a note (the count is
 *   exact, the list bounded);
 * - a later sync copies in exactly the files whose workspace identity changed
 *   since the last sync and removes what the workspace removed (the workspace
 *   wins); files the command changed and the workspace did not stay;
 * - the base (each file's workspace identity and its scratch identity at the
 *   last sync) is what change sets and exec/apply bind to;
 * - copies are reflinks (FICLONE) where the filesystem supports it, else
 *   kernel copies; everything created is owned by the runner's uid when one
 *   is given, so the unprivileged command can read and write it.
 */
import { listDir } from "../../linuxfs/dirents.ts";
import {
  type Fail,
  type FileIdentity,
  identityOf,
  lstatIn,
  openWorkspaceRoot,
  sameIdentity,
} from "../../linuxfs/fs_anchor.ts";
import {
  closeFd,
  cstr,
  fstatx,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  S_IFBLK,
  S_IFCHR,
  S_IFDIR,
  S_IFIFO,
  S_IFLNK,
  S_IFMT,
  S_IFREG,
  S_IFSOCK,
  type Statx,
  syscall,
} from "../../sandbox/libc.ts";
import {
  SCRATCH_BYTES_MAX,
  SCRATCH_DEPTH_MAX,
  SCRATCH_ENTRIES_MAX,
  SCRATCH_NOTES_MAX,
} from "../limits.ts";
import { isReservedName } from "../tools/path.ts";
import {
  copyInto,
  makeDirIn,
  openDirIn,
  openSourceFile,
  removeEntryAt,
  type ScratchOwner,
} from "./scratch_fs.ts";

const AT_SYMLINK_NOFOLLOW = 0x100;

export type NoteReason =
  | "fifo"
  | "socket"
  | "device"
  | "hardlink"
  | "other_device"
  | "invalid_name"
  | "depth"
  | "unreadable"
  | "changed_during_copy";

export interface ScratchNote {
  /** Workspace-relative path; null for a name that is not UTF-8. */
  path: string | null;
  reason: NoteReason;
}

export interface BaseFile {
  /** The workspace file's identity when it was copied in. */
  ws: FileIdentity;
  /** The copy's identity right after the copy (a command that touches it changes it). */
  scratch: FileIdentity;
}

/** What the scratch was synced from. Change sets and exec/apply bind to it. */
export interface ScratchBase {
  files: Map<string, BaseFile>;
  links: Map<string, BaseFile>;
  dirs: Set<string>;
}

export interface SyncReport {
  first: boolean;
  entries: number;
  bytes: number;
  copied: number;
  removed: number;
  reflinked: number;
  notes: ScratchNote[];
  notes_total: number;
  elapsed_ms: number;
}

export interface ScratchBounds {
  /** @default SCRATCH_ENTRIES_MAX */
  entries: number;
  /** @default SCRATCH_BYTES_MAX */
  bytes: number;
}

export interface ScratchOptions {
  workspaceDir: string;
  /** Absolute path of the scratch directory; created by the first sync, must not exist. */
  scratchDir: string;
  /** Owner of everything created in the scratch (the runner's uid); null: the server's. */
  owner: ScratchOwner | null;
  /** @default SCRATCH_ENTRIES_MAX / SCRATCH_BYTES_MAX */
  bounds?: Partial<ScratchBounds>;
}

/** One Run's scratch copy. Not thread-safe: the Run runs ≤ 1 command at a time. */
export class ScratchCopy {
  readonly base: ScratchBase = { files: new Map(), links: new Map(), dirs: new Set() };
  readonly #o: ScratchOptions;
  readonly #bounds: ScratchBounds;
  #created = false;

  constructor(opts: ScratchOptions) {
    this.#o = opts;
    this.#bounds = {
      entries: opts.bounds?.entries ?? SCRATCH_ENTRIES_MAX,
      bytes: opts.bounds?.bytes ?? SCRATCH_BYTES_MAX,
    };
  }

  get dir(): string {
    return this.#o.scratchDir;
  }

  get exists(): boolean {
    return this.#created;
  }

  /** Opens the scratch root (no symlink); the caller closes the fd. -1 when it is gone. */
  openRoot(): number {
    const r = syscall(
      "openat",
      -100,
      cstr(this.#o.scratchDir),
      O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
      0,
    );
    return r.ret < 0n ? -1 : Number(r.ret);
  }

  /** Makes (first call) or refreshes the copy. */
  sync(): ({ ok: true } & SyncReport) | Fail {
    const t0 = performance.now();
    const first = !this.#created;
    const ws = openWorkspaceRoot(this.#o.workspaceDir);
    if (!ws.ok) return ws;
    let scFd = -1;
    try {
      if (first) {
        try {
          Deno.mkdirSync(this.#o.scratchDir, { mode: 0o700 });
        } catch (err) {
          if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
          return { ok: false, code: "unsafe_path" };
        }
        this.#created = true;
        const o = this.#o.owner;
        if (o) Deno.chownSync(this.#o.scratchDir, o.uid, o.gid);
      }
      scFd = this.openRoot();
      if (scFd < 0) return { ok: false, code: "unsafe_path" };
      const s: SyncState = {
        first,
        base: this.base,
        owner: this.#o.owner,
        bounds: this.#bounds,
        rootDev: [ws.root.devMajor, ws.root.devMinor],
        entries: 0,
        bytes: 0,
        copied: 0,
        removed: 0,
        reflinked: 0,
        notes: [],
        notesTotal: 0,
        seenFiles: new Set(),
        seenLinks: new Set(),
        seenDirs: new Set(),
      };
      const r = syncDir(s, ws.root.fd, scFd, [], 0);
      if (r !== null) {
        if (first) {
          closeFd(scFd);
          scFd = -1;
          this.removeSync();
        }
        return r;
      }
      removeVanished(s, scFd);
      return {
        ok: true,
        first,
        entries: s.entries,
        bytes: s.bytes,
        copied: s.copied,
        removed: s.removed,
        reflinked: s.reflinked,
        notes: s.notes,
        notes_total: s.notesTotal,
        elapsed_ms: Math.round(performance.now() - t0),
      };
    } finally {
      if (scFd >= 0) closeFd(scFd);
      ws.root.close();
    }
  }

  /** Deletes the copy (the Run's terminal). Idempotent. */
  removeSync(): void {
    this.base.files.clear();
    this.base.links.clear();
    this.base.dirs.clear();
    if (!this.#created) return;
    try {
      // Recursive removal never follows symlinks inside the tree.
      Deno.removeSync(this.#o.scratchDir, { recursive: true });
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    this.#created = false;
  }
}

interface SyncState {
  /** The copy is new and empty: nothing in it needs to be looked at or replaced. */
  first: boolean;
  base: ScratchBase;
  owner: ScratchOwner | null;
  bounds: ScratchBounds;
  rootDev: [number, number];
  entries: number;
  bytes: number;
  copied: number;
  removed: number;
  reflinked: number;
  notes: ScratchNote[];
  notesTotal: number;
  seenFiles: Set<string>;
  seenLinks: Set<string>;
  seenDirs: Set<string>;
}

function note(s: SyncState, path: string | null, reason: NoteReason): void {
  s.notesTotal++;
  if (s.notes.length < SCRATCH_NOTES_MAX) s.notes.push({ path, reason });
}

const tooLarge: Fail = { ok: false, code: "workspace_too_large" };

function syncDir(
  s: SyncState,
  wsFd: number,
  scFd: number,
  prefix: string[],
  depth: number,
): Fail | null {
  const listed = listDir(wsFd, s.bounds.entries - s.entries);
  if (!listed.ok) {
    return listed.reason === "entries" ? tooLarge : { ok: false, code: "file_changed" };
  }
  s.entries += listed.seen;
  for (let i = 0; i < listed.invalid; i++) note(s, null, "invalid_name");
  const names = listed.entries.map((e) => e.name).sort();
  for (const name of names) {
    if (isReservedName(name)) continue;
    const path = [...prefix, name].join("/");
    const st = lstatIn(wsFd, name);
    if (!st.ok) {
      note(s, path, "unreadable");
      continue;
    }
    if (st.st.devMajor !== s.rootDev[0] || st.st.devMinor !== s.rootDev[1]) {
      note(s, path, "other_device");
      continue;
    }
    const type = st.st.mode & S_IFMT;
    if (type === S_IFDIR) {
      if (depth + 1 > SCRATCH_DEPTH_MAX) {
        note(s, path, "depth");
        continue;
      }
      const wsChild = openDirIn(wsFd, name);
      if (wsChild < 0) {
        note(s, path, "unreadable");
        continue;
      }
      try {
        const scChild = ensureDir(s, scFd, name, st.st.mode);
        if (scChild < 0) return { ok: false, code: "storage_full" };
        s.seenDirs.add(path);
        s.base.dirs.add(path);
        try {
          const r = syncDir(s, wsChild, scChild, [...prefix, name], depth + 1);
          if (r !== null) return r;
        } finally {
          closeFd(scChild);
        }
      } finally {
        closeFd(wsChild);
      }
      continue;
    }
    if (type === S_IFREG) {
      if (st.st.nlink !== 1) {
        note(s, path, "hardlink");
        continue;
      }
      s.bytes += Number(st.st.size);
      if (s.bytes > s.bounds.bytes) return tooLarge;
      const id = identityOf(st.st);
      const b = s.base.files.get(path);
      s.seenFiles.add(path);
      if (b && sameIdentity(b.ws, id)) continue;
      const r = copyFileIn(s, wsFd, scFd, name, path, st.st);
      if (r !== null) return r;
      continue;
    }
    if (type === S_IFLNK) {
      s.seenLinks.add(path);
      const id = identityOf(st.st);
      const b = s.base.links.get(path);
      if (b && sameIdentity(b.ws, id)) continue;
      const r = copyLinkIn(s, wsFd, scFd, name, path, id);
      if (r !== null) return r;
      continue;
    }
    note(
      s,
      path,
      type === S_IFIFO
        ? "fifo"
        : type === S_IFSOCK
        ? "socket"
        : type === S_IFCHR || type === S_IFBLK
        ? "device"
        : "unreadable",
    );
  }
  return null;
}

/** Opens (or makes) directory `name` in the scratch; anything else at the name is removed. */
function ensureDir(s: SyncState, scFd: number, name: string, mode: number): number {
  if (s.first) return makeDirIn(scFd, name, mode, s.owner);
  const cur = lstatIn(scFd, name);
  if (cur.ok && (cur.st.mode & S_IFMT) === S_IFDIR) {
    const fd = openDirIn(scFd, name);
    if (fd >= 0) return fd;
  }
  if (cur.ok) {
    if (!removeEntryAt(scFd, name)) return -1;
    s.removed++;
  }
  return makeDirIn(scFd, name, mode, s.owner);
}

function copyFileIn(
  s: SyncState,
  wsFd: number,
  scFd: number,
  name: string,
  path: string,
  st: Statx,
): Fail | null {
  const src = openSourceFile(wsFd, name, st);
  if (src === null) {
    s.seenFiles.delete(path);
    note(s, path, "unreadable");
    return null;
  }
  try {
    // The workspace wins: whatever the scratch holds at this name is replaced.
    if (!s.first && lstatIn(scFd, name).ok && !removeEntryAt(scFd, name)) {
      return { ok: false, code: "storage_full" };
    }
    const before = identityOf(src.st);
    const copy = copyInto(src, scFd, name, s.owner);
    if (copy === null) return { ok: false, code: "storage_full" };
    const after = fstatx(src.fd);
    if (!after.ok || !sameIdentity(before, identityOf(after.st))) {
      removeEntryAt(scFd, name);
      s.base.files.delete(path);
      s.seenFiles.delete(path);
      note(s, path, "changed_during_copy");
      return null;
    }
    s.base.files.set(path, { ws: before, scratch: copy });
    s.copied++;
    return null;
  } finally {
    closeFd(src.fd);
  }
}

function copyLinkIn(
  s: SyncState,
  wsFd: number,
  scFd: number,
  name: string,
  path: string,
  id: FileIdentity,
): Fail | null {
  const buf = new Uint8Array(4096);
  const r = syscall("readlinkat", wsFd, cstr(name), buf, buf.length);
  if (r.ret < 0n || r.ret >= BigInt(buf.length)) {
    s.seenLinks.delete(path);
    note(s, path, "unreadable");
    return null;
  }
  const target = buf.slice(0, Number(r.ret));
  if (lstatIn(scFd, name).ok && !removeEntryAt(scFd, name)) {
    return { ok: false, code: "storage_full" };
  }
  const t = new Uint8Array(target.length + 1);
  t.set(target);
  // A link is recreated verbatim and never followed by the Control Plane; inside the
  // sandbox the command resolves it under its own Landlock rules.
  if (syscall("symlinkat", t, scFd, cstr(name)).ret !== 0n) {
    return { ok: false, code: "storage_full" };
  }
  if (s.owner) {
    syscall("fchownat", scFd, cstr(name), s.owner.uid, s.owner.gid, AT_SYMLINK_NOFOLLOW);
  }
  const sc = lstatIn(scFd, name);
  if (!sc.ok) return { ok: false, code: "storage_full" };
  s.base.links.set(path, { ws: id, scratch: identityOf(sc.st) });
  s.copied++;
  return null;
}

/** Removes from the scratch what the workspace no longer has (the workspace wins). */
function removeVanished(s: SyncState, scRoot: number): void {
  const gone: string[] = [];
  for (const p of s.base.files.keys()) if (!s.seenFiles.has(p)) gone.push(p);
  for (const p of gone) s.base.files.delete(p);
  const goneLinks: string[] = [];
  for (const p of s.base.links.keys()) if (!s.seenLinks.has(p)) goneLinks.push(p);
  for (const p of goneLinks) s.base.links.delete(p);
  const goneDirs: string[] = [];
  for (const p of s.base.dirs) if (!s.seenDirs.has(p)) goneDirs.push(p);
  for (const p of goneDirs) s.base.dirs.delete(p);
  for (const p of [...gone, ...goneLinks, ...goneDirs]) {
    if (removeAtPath(scRoot, p)) s.removed++;
  }
}

/** Removes `path` below the scratch root, opening each parent without following links. */
export function removeAtPath(root: number, path: string): boolean {
  const parts = path.split("/");
  let cur = -1;
  try {
    let at = root;
    for (const c of parts.slice(0, -1)) {
      const next = openDirIn(at, c);
      if (cur >= 0) closeFd(cur);
      cur = next;
      if (cur < 0) return false;
      at = cur;
    }
    const leaf = parts[parts.length - 1];
    if (!lstatIn(at, leaf).ok) return false;
    return removeEntryAt(at, leaf);
  } finally {
    if (cur >= 0) closeFd(cur);
  }
}
