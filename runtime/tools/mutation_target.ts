/**
 * Locating and verifying a mutation target before a plan is made [TL-6].
 *
 * Enforces: canonical path outside the reserved temp namespace; the parent
 * chain is walked descriptor-anchored; an existing target needs a
 * `file/read_text` receipt of the same path whose identity and full content
 * digest still match (the receipt's Run binding is the caller's duty: it
 * passes only receipts recorded for the current Run); an existing target must
 * be workspace text. A missing target is a create bound to the parent identity.
 */
import { captureFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  type FileIdentity,
  identityOf,
  lstatIn,
  openDirChain,
  sameIdentity,
  type WorkspaceRoot,
} from "../../linuxfs/fs_anchor.ts";
import { closeFd, ENOENT, fstatx } from "../../sandbox/libc.ts";
import { EDIT_TIMEOUT_MS, READ_FILE_MAX_BYTES } from "../limits.ts";
import type { ReadReceipt } from "./file_read_text.ts";
import { canonicalPath, isReservedName } from "./path.ts";
import { contentDigest, decodeText } from "./text.ts";

export type MutationTarget =
  | {
    ok: true;
    path: string;
    parent: FileIdentity;
    existing: { identity: FileIdentity; digest: string; text: string } | null;
  }
  | Fail;

export interface TargetOptions {
  now?: () => number;
}

export function locateTarget(
  root: WorkspaceRoot,
  rawPath: unknown,
  receipt: ReadReceipt | null,
  opts: TargetOptions = {},
): MutationTarget {
  const now = opts.now ?? (() => performance.now());
  const deadline = now() + EDIT_TIMEOUT_MS;
  const p = canonicalPath(rawPath);
  if (!p.ok) return p;
  const leaf = p.components[p.components.length - 1];
  // SECURITY: the write-temp namespace is never a model-chosen target.
  if (isReservedName(leaf)) return { ok: false, code: "path_invalid" };
  const parent = openDirChain(root, p.components.slice(0, -1));
  if (!parent.ok) return parent;
  try {
    const ps = fstatx(parent.fd);
    if (!ps.ok) return { ok: false, code: "path_unsafe_owner" };
    const parentId = identityOf(ps.st);
    const cur = lstatIn(parent.fd, leaf);
    if (!cur.ok) {
      if (cur.errno !== ENOENT) return { ok: false, code: "path_unsafe_owner" };
      return { ok: true, path: p.path, parent: parentId, existing: null };
    }
    if (receipt === null || receipt.kind !== "file/read_text" || receipt.path !== p.path) {
      return { ok: false, code: "receipt_required" };
    }
    const cap = captureFile(root, parent.fd, leaf, {
      maxBytes: READ_FILE_MAX_BYTES,
      deadline,
      hooks: { now },
    });
    if (!cap.ok) return cap;
    const digest = contentDigest(cap.bytes);
    if (!sameIdentity(cap.identity, receipt.identity) || digest !== receipt.content_digest) {
      return { ok: false, code: "receipt_stale" };
    }
    const t = decodeText(cap.bytes);
    if (!t.ok) return t;
    return {
      ok: true,
      path: p.path,
      parent: parentId,
      existing: { identity: cap.identity, digest, text: t.text },
    };
  } finally {
    closeFd(parent.fd);
  }
}
