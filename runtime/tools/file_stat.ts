/**
 * `file/stat` executor [TL-4]: metadata of one workspace path, reached by the
 * descriptor walk. Enforces the same object rules as read_text (directories
 * owned, not group/world-writable, same device; files regular, one link, not
 * sparse) except the size cap, since stat reads no content. Never follows a
 * symlink; a FIFO/socket/device is refused, not described.
 */
import { closeFd, fstatx, O_PATH, S_IFDIR, S_IFMT } from "../../sandbox/libc.ts";
import {
  checkDirectory,
  classifyOpenErrno,
  type Fail,
  type FileIdentity,
  identityOf,
  openBeneath,
  openDirChain,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { checkRegularFile } from "../../linuxfs/file_capture.ts";
import { canonicalDirPath } from "./path.ts";

export interface FileStatArgs {
  path: string;
}

export type FileStatResult =
  | {
    ok: true;
    path: string;
    kind: "file" | "directory";
    size: number;
    identity: FileIdentity;
  }
  | Fail;

export function fileStat(root: WorkspaceRoot, args: FileStatArgs): FileStatResult {
  const p = canonicalDirPath(args.path);
  if (!p.ok) return p;
  if (p.components.length === 0) {
    const d = openDirChain(root, []);
    if (!d.ok) return d;
    try {
      const s = fstatx(d.fd);
      if (!s.ok) return { ok: false, code: "path_unsafe_owner" };
      return { ok: true, path: ".", kind: "directory", size: 0, identity: identityOf(s.st) };
    } finally {
      closeFd(d.fd);
    }
  }
  const leaf = p.components[p.components.length - 1];
  const parent = openDirChain(root, p.components.slice(0, -1));
  if (!parent.ok) return parent;
  try {
    const o = openBeneath(parent.fd, leaf, O_PATH);
    if (o.fd < 0) return { ok: false, code: classifyOpenErrno(parent.fd, leaf, o.errno) };
    try {
      const s = fstatx(o.fd);
      if (!s.ok) return { ok: false, code: "path_unsafe_owner" };
      if ((s.st.mode & S_IFMT) === S_IFDIR) {
        const bad = checkDirectory(root, s.st);
        if (bad !== null) return { ok: false, code: bad };
        return { ok: true, path: p.path, kind: "directory", size: 0, identity: identityOf(s.st) };
      }
      const bad = checkRegularFile(root, s.st, Number.MAX_SAFE_INTEGER);
      if (bad !== null) return { ok: false, code: bad };
      return {
        ok: true,
        path: p.path,
        kind: "file",
        size: Number(s.st.size),
        identity: identityOf(s.st),
      };
    } finally {
      closeFd(o.fd);
    }
  } finally {
    closeFd(parent.fd);
  }
}
