/**
 * Attachments [LC-4, UI-12]: a file the operator drops into a Conversation is
 * stored in the Agent's workspace under `attachments/`, where the model can
 * read it (file/read_text) or extract it (document/extract_text).
 *
 *   const name = attachmentName(req.headers.get("x-filename"));   // sanitized, or throws
 *   const a = await storeAttachment({ workspaceDir, name, body: req.body, declaredBytes });
 *   // { path: "attachments/report-2.pdf", name: "report-2.pdf", bytes: 1234 }
 *
 * What this file enforces:
 *  - the name (`X-Filename`, percent-encoded UTF-8) is sanitized: NFC; `/`,
 *    `\`, control, format (bidi, zero-width) and line/paragraph separator
 *    characters become `_`; leading dots and spaces are dropped (no `..`, no
 *    hidden or reserved temp names); ≤ ATTACHMENT_NAME_MAX_BYTES UTF-8 bytes
 *    with the extension kept; nothing left ⇒ `attachment`;
 *  - never overwriting: the body is streamed into an unnamed `O_TMPFILE` in
 *    the attachments directory (owner-only while written; a crash leaves
 *    nothing), then linked (`linkat`, which fails on an existing name) as the
 *    name, or `name-2.ext`, `name-3.ext` … up to ATTACHMENT_NAME_ATTEMPTS_MAX
 *    (`attachment_name_taken`); where the filesystem has no O_TMPFILE, a fresh
 *    `O_EXCL` reserved temp renamed with `RENAME_NOREPLACE` instead. The file
 *    appears whole or not at all;
 *  - ≤ DOCUMENT_MAX_BYTES: a declared length past it is refused before a byte
 *    is read, a stream past it is cut there; either way `body_too_large`
 *    (413) and the temp is removed — nothing is stored;
 *  - the directory is reached descriptor-anchored from the workspace root
 *    ([TL-4] checks: no symlink, a real directory of the workspace owner,
 *    not group/world-writable); a symlinked or foreign `attachments` is
 *    `attachments_dir_unsafe`; a missing one is created 0755.
 */
import { AppError } from "../errors.ts";
import {
  ATTACHMENT_NAME_ATTEMPTS_MAX,
  ATTACHMENT_NAME_MAX_BYTES,
  DOCUMENT_MAX_BYTES,
} from "../limits.ts";
import { utf8Bytes } from "../protocol/digest.ts";
import { canonicalPath } from "../tools/path.ts";
import { randomTempName } from "../tools/mutation_commit.ts";
import {
  fsyncFd,
  openBeneath,
  openDirChain,
  openWorkspaceRoot,
  renameIn,
  unlinkIn,
  writeAll,
} from "../../linuxfs/fs_anchor.ts";
import {
  closeFd,
  cstr,
  EEXIST,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_WRONLY,
  RENAME_NOREPLACE,
  syscall,
} from "../../sandbox/libc.ts";

const O_TMPFILE = 0o20000000 | O_DIRECTORY;
const AT_SYMLINK_FOLLOW = 0x400;

/**
 * Gives the unnamed file `fd` the name `name` in `dirfd`; errno (EEXIST when taken). The
 * source is this process's own descriptor; `name` is one component and never followed.
 */
function linkFd(fd: number, dirfd: number, name: string): number {
  const r = syscall(
    "linkat",
    -100,
    cstr(`/proc/self/fd/${fd}`),
    dirfd,
    cstr(name),
    AT_SYMLINK_FOLLOW,
  );
  return r.ret === 0n ? 0 : r.errno;
}

/** Where attachments go, relative to the workspace. */
export const ATTACHMENTS_DIR = "attachments";

export interface StoredAttachment {
  /** Workspace-relative path, e.g. `attachments/report.pdf`. */
  path: string;
  name: string;
  bytes: number;
}

/** The sanitized file name of an `X-Filename` header (percent-encoded UTF-8). */
export function attachmentName(header: string | null): string {
  if (header === null || header.length === 0 || header.length > 4096) {
    throw new AppError("attachment_name_invalid");
  }
  let raw: string;
  try {
    raw = decodeURIComponent(header);
  } catch {
    throw new AppError("attachment_name_invalid");
  }
  return sanitizeName(raw);
}

/** See the file header; pure. */
export function sanitizeName(raw: string): string {
  let s = raw.normalize("NFC")
    .replace(/[\/\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, "_")
    .replace(/[\uD800-\uDFFF]/g, "_") // lone surrogates (a well-formed pair was kept whole above)
    .trim()
    .replace(/^[.\s]+/u, "");
  // Keep the extension (≤ 16 characters of letters and digits) while cutting the base.
  const m = /\.([\p{L}\p{N}]{1,16})$/u.exec(s);
  const ext = m ? m[0] : "";
  let base = m ? s.slice(0, -ext.length) : s;
  while (utf8Bytes(base + ext) > ATTACHMENT_NAME_MAX_BYTES) {
    base = Array.from(base).slice(0, -1).join("");
  }
  s = base.trim() + ext;
  if (s.replace(/^[.\s]+/u, "") === "" || base.trim() === "") s = `attachment${ext}`;
  // The result must be a plain workspace name the file tools accept.
  if (!canonicalPath(`${ATTACHMENTS_DIR}/${s}`).ok) s = "attachment";
  return s;
}

/** `name`, then `base-2.ext`, `base-3.ext` … */
export function candidateName(name: string, attempt: number): string {
  if (attempt === 0) return name;
  const m = /\.([\p{L}\p{N}]{1,16})$/u.exec(name);
  const ext = m && m.index > 0 ? m[0] : "";
  const base = name.slice(0, name.length - ext.length);
  return `${base}-${attempt + 1}${ext}`;
}

export interface StoreOptions {
  workspaceDir: string;
  /** Already sanitized (attachmentName). */
  name: string;
  body: ReadableStream<Uint8Array> | null;
  /** Content-Length when the request declared one. */
  declaredBytes: number | null;
  /** @default DOCUMENT_MAX_BYTES */
  maxBytes?: number;
}

/** Streams `body` into `attachments/` under a free name; see the file header. */
export async function storeAttachment(o: StoreOptions): Promise<StoredAttachment> {
  const max = o.maxBytes ?? DOCUMENT_MAX_BYTES;
  if (o.declaredBytes !== null && o.declaredBytes > max) throw new AppError("body_too_large");
  const opened = openWorkspaceRoot(o.workspaceDir);
  if (!opened.ok) throw new AppError(opened.code);
  const ws = opened.root;
  let dirfd = -1;
  let temp: string | null = null;
  try {
    let dir = openDirChain(ws, [ATTACHMENTS_DIR]);
    if (!dir.ok && dir.code === "path_not_found") {
      const root = openDirChain(ws, []);
      if (!root.ok) throw new AppError(root.code);
      try {
        syscall("mkdirat", root.fd, cstr(ATTACHMENTS_DIR), 0o755);
      } finally {
        closeFd(root.fd);
      }
      dir = openDirChain(ws, [ATTACHMENTS_DIR]);
    }
    if (!dir.ok) {
      throw new AppError(
        dir.code === "path_symlink" || dir.code === "path_not_directory" ||
          dir.code === "path_unsafe_owner" || dir.code === "path_cross_device"
          ? "attachments_dir_unsafe"
          : dir.code,
      );
    }
    dirfd = dir.fd;
    // Preferably an unnamed file (O_TMPFILE): a crash leaves nothing behind. Where the
    // filesystem has none, a reserved temp name (swept at start-up like file/write's).
    const anon = syscall("openat", dirfd, cstr("."), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0o600);
    let f: { fd: number };
    if (anon.ret >= 0n) f = { fd: Number(anon.ret) };
    else {
      temp = randomTempName();
      // SECURITY: exclusive, no-follow, owner-only temp inside the checked directory.
      f = openBeneath(dirfd, temp, O_WRONLY | O_CREAT | O_EXCL, 0o600);
      if (f.fd < 0) {
        temp = null;
        throw new AppError("storage_full");
      }
    }
    let total = 0;
    let linked: string | null = null;
    try {
      if (o.body !== null) {
        const reader = o.body.getReader();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            total += value.byteLength;
            if (total > max) {
              await reader.cancel().catch(() => {});
              throw new AppError("body_too_large");
            }
            if (!writeAll(f.fd, value)) throw new AppError("storage_full");
          }
        } finally {
          reader.releaseLock();
        }
      }
      if (syscall("fchmod", f.fd, 0o644).ret !== 0n || !fsyncFd(f.fd)) {
        throw new AppError("storage_full");
      }
      // Never overwriting: link (unnamed file) or rename (temp) fails with EEXIST on a taken
      // name, and the next candidate is tried.
      for (let i = 0; i < ATTACHMENT_NAME_ATTEMPTS_MAX && linked === null; i++) {
        const name = candidateName(o.name, i);
        const errno = temp === null
          ? linkFd(f.fd, dirfd, name)
          : renameIn(dirfd, temp, name, RENAME_NOREPLACE);
        if (errno === EEXIST) continue;
        if (errno !== 0) throw new AppError("storage_full");
        temp = null;
        linked = name;
      }
    } finally {
      closeFd(f.fd);
    }
    if (linked === null) throw new AppError("attachment_name_taken");
    fsyncFd(dirfd);
    return { path: `${ATTACHMENTS_DIR}/${linked}`, name: linked, bytes: total };
  } finally {
    if (temp !== null && dirfd >= 0) unlinkIn(dirfd, temp);
    if (dirfd >= 0) closeFd(dirfd);
    ws.close();
  }
}
