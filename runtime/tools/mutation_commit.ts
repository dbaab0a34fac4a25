/**
 * Committing an approved mutation plan [TL-6].
 *
 * Enforces, inside one 2 s deadline and under an exclusive flock on the
 * parent directory fd (per-target serialisation that also holds across
 * processes):
 * - the plan is intact (plan digest) and bound to the current Agent
 *   generation, Run and call; its path is canonical and outside the reserved
 *   namespace and its content within the bounds (re-checked, not trusted);
 * - the diff of the current content to the new content has the approved
 *   diff digest;
 * - the parent directory is the same object the plan saw;
 * - create: the name is absent, and the new file appears only through
 *   renameat2(RENAME_NOREPLACE) from a private temp;
 * - replace: the target still has the planned identity and content digest,
 *   the new content goes to a same-directory 0600 temp in the reserved
 *   `.agent-builder-write-*` namespace, is fsynced, swapped in with
 *   renameat2(RENAME_EXCHANGE); the swapped-out object must be the planned
 *   inode with the planned content, else the exchange is undone;
 * - exactly two fsyncs on success: the temp file and the parent directory;
 * - the verified bytes it replaced are returned (`before`), so the caller can
 *   keep the [TL-11] checkpoint.
 * No in-place write, no plain rename over a target, no symlink fallback.
 */
import { captureFile } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  type FileIdentity,
  fsyncFd,
  identityOf,
  lstatIn,
  openBeneath,
  openDirChain,
  renameIn,
  sameIdentity,
  sameObject,
  unlinkIn,
  type WorkspaceRoot,
  writeAll,
} from "../../linuxfs/fs_anchor.ts";
import {
  closeFd,
  EEXIST,
  ENOENT,
  fstatx,
  LOCK_EX,
  LOCK_NB,
  O_CREAT,
  O_EXCL,
  O_WRONLY,
  RENAME_EXCHANGE,
  RENAME_NOREPLACE,
  syscall,
} from "../../sandbox/libc.ts";
import {
  EDIT_FRAGMENT_MAX_BYTES,
  EDIT_TIMEOUT_MS,
  READ_FILE_MAX_BYTES,
  WRITE_CONTENT_MAX_BYTES,
} from "../limits.ts";
import {
  diffDigest,
  lineDiff,
  type MutationBinding,
  type MutationPlan,
  MutationPlanSchema,
  newContentDigest,
  planDigest,
  sameBinding,
} from "./mutation_plan.ts";
import { applyEdit } from "./file_edit.ts";
import { canonicalPath, isReservedName, WRITE_TEMP_PREFIX } from "./path.ts";
import { contentDigest, decodeText } from "./text.ts";
import { utf8Bytes } from "../protocol/digest.ts";

/** Test seams that make races deterministic; production passes none. */
export interface CommitHooks {
  /** After the target was re-verified, before the temp is swapped in. */
  beforeSwap?: () => void;
  now?: () => number;
}

export interface CommitOptions {
  /** The binding of the dispatch now: must equal the plan's. */
  binding: MutationBinding;
  hooks?: CommitHooks;
}

export type CommitResult =
  | {
    ok: true;
    path: string;
    outcome: "created" | "replaced";
    identity: FileIdentity;
    content_digest: string;
    bytes: number;
    /** What the commit replaced (verified bytes), null for a create: the checkpoint [TL-11]. */
    before: Uint8Array | null;
  }
  | Fail;

const fail = (code: Fail["code"]): Fail => ({ ok: false, code });

export function randomTempName(): string {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return WRITE_TEMP_PREFIX + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Polls a non-blocking exclusive flock until the deadline (5 ms steps). */
export function lockDir(fd: number, deadline: number, now: () => number): boolean {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    if (syscall("flock", fd, LOCK_EX | LOCK_NB).ret === 0n) return true;
    if (now() + 5 > deadline) return false;
    Atomics.wait(cell, 0, 0, 5);
  }
}

/** Writes `data` to a fresh private temp in `dirfd` (fsynced, `mode`); returns its name or null. */
export function writeTemp(dirfd: number, data: Uint8Array, mode = 0o600): string | null {
  const name = randomTempName();
  // SECURITY: exclusive, no-follow, owner-only temp inside the checked parent.
  const f = openBeneath(dirfd, name, O_WRONLY | O_CREAT | O_EXCL, 0o600);
  if (f.fd < 0) return null;
  let ok = false;
  try {
    ok = syscall("fchmod", f.fd, mode).ret === 0n && writeAll(f.fd, data) && fsyncFd(f.fd);
  } finally {
    closeFd(f.fd);
  }
  if (!ok) {
    unlinkIn(dirfd, name);
    return null;
  }
  return name;
}

/** The [TL-6] content bounds and text rules, re-checked on the plan itself. */
function checkPlanSizes(plan: MutationPlan): Fail["code"] | null {
  const enc = new TextEncoder();
  if (plan.content !== null) {
    if (!plan.content.isWellFormed()) return "file_invalid_utf8";
    const bytes = enc.encode(plan.content);
    if (bytes.length > WRITE_CONTENT_MAX_BYTES) return "content_too_large";
    const t = decodeText(bytes);
    if (!t.ok) return t.code;
  }
  for (const frag of [plan.old_text, plan.new_text]) {
    if (frag !== null && utf8Bytes(frag) > EDIT_FRAGMENT_MAX_BYTES) {
      return "content_too_large";
    }
  }
  return null;
}

/** Computes the new content the plan will commit, given the current text. */
function newTextOf(plan: MutationPlan, current: string | null): string | null {
  if (plan.tool === "file/write") return plan.content;
  if (current === null || plan.old_text === null || plan.new_text === null) return null;
  const e = applyEdit(current, plan.old_text, plan.new_text);
  return e.ok ? e.text : null;
}

export function commitMutation(
  root: WorkspaceRoot,
  planInput: unknown,
  opts: CommitOptions,
): CommitResult {
  const now = opts.hooks?.now ?? (() => performance.now());
  const deadline = now() + EDIT_TIMEOUT_MS;
  const parsed = MutationPlanSchema.safeParse(planInput);
  if (!parsed.success) return fail("approval_stale");
  const plan = parsed.data;
  const { plan_digest: _d, ...rest } = plan;
  if (planDigest(rest) !== plan.plan_digest) return fail("approval_stale");
  if (!sameBinding(plan.binding, opts.binding)) return fail("approval_stale");
  // The plan digest is not a MAC: re-check what prepare checked, so a rewritten
  // persisted plan cannot reach the reserved namespace or exceed the bounds.
  const p = canonicalPath(plan.path);
  if (!p.ok) return p;
  const components = p.components;
  const leaf = components[components.length - 1];
  if (isReservedName(leaf)) return fail("path_invalid");
  const sized = checkPlanSizes(plan);
  if (sized !== null) return fail(sized);
  const parent = openDirChain(root, components.slice(0, -1));
  if (!parent.ok) return parent;
  const dirfd = parent.fd;
  try {
    const ps = fstatx(dirfd);
    if (!ps.ok || !sameObject(identityOf(ps.st), plan.parent)) return fail("file_changed");
    if (!lockDir(dirfd, deadline, now)) return fail("file_timeout");
    let current: string | null = null;
    let before: Uint8Array | null = null;
    if (plan.kind === "replace") {
      const cap = captureFile(root, dirfd, leaf, {
        maxBytes: READ_FILE_MAX_BYTES,
        deadline,
        hooks: { now },
      });
      if (!cap.ok) return cap.code === "path_not_found" ? fail("file_changed") : cap;
      if (plan.target === null || !sameIdentity(cap.identity, plan.target)) {
        return fail("file_changed");
      }
      if (contentDigest(cap.bytes) !== plan.old_digest) return fail("file_changed");
      const t = decodeText(cap.bytes);
      if (!t.ok) return fail("file_changed");
      current = t.text;
      before = cap.bytes;
    } else {
      const cur = lstatIn(dirfd, leaf);
      if (cur.ok) return fail("file_exists");
      if (cur.errno !== ENOENT) return fail("path_unsafe_owner");
    }
    const text = newTextOf(plan, current);
    if (text === null || newContentDigest(text) !== plan.new_digest) return fail("file_changed");
    // What is committed must be exactly the change the operator approved.
    if (diffDigest(lineDiff(plan.path, current, text)) !== plan.diff_digest) {
      return fail("approval_stale");
    }
    if (now() > deadline) return fail("file_timeout");
    const tmp = writeTemp(dirfd, new TextEncoder().encode(text));
    if (tmp === null) return fail("storage_full");
    opts.hooks?.beforeSwap?.();
    if (plan.kind === "create") {
      const e = renameIn(dirfd, tmp, leaf, RENAME_NOREPLACE);
      if (e !== 0) {
        unlinkIn(dirfd, tmp);
        return fail(e === EEXIST ? "file_exists" : "file_changed");
      }
    } else {
      const e = renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE);
      if (e !== 0) {
        unlinkIn(dirfd, tmp);
        return fail(e === ENOENT ? "file_changed" : "path_unsafe_owner");
      }
      // The temp name now holds whatever was at the target: it must be the
      // planned inode with the planned content, or the swap is undone.
      const old = captureFile(root, dirfd, tmp, {
        maxBytes: READ_FILE_MAX_BYTES,
        deadline,
        hooks: { now },
      });
      const verified = old.ok && plan.target !== null && sameObject(old.identity, plan.target) &&
        contentDigest(old.bytes) === plan.old_digest;
      if (!verified) {
        const back = renameIn(dirfd, tmp, leaf, RENAME_EXCHANGE);
        if (back === 0) unlinkIn(dirfd, tmp);
        return fail("file_changed");
      }
      unlinkIn(dirfd, tmp);
    }
    if (!fsyncFd(dirfd)) return fail("storage_full");
    const fin = lstatIn(dirfd, leaf);
    if (!fin.ok) return fail("file_changed");
    return {
      ok: true,
      path: plan.path,
      outcome: plan.kind === "create" ? "created" : "replaced",
      identity: identityOf(fin.st),
      content_digest: plan.new_digest,
      bytes: utf8Bytes(text),
      before,
    };
  } finally {
    closeFd(dirfd); // also releases the flock
  }
}
