/**
 * The Agent instruction file `workspace/agent-builder.md` [CX-2] [AG-4].
 *
 * Reader enforces: exactly that one name in the Agent's workspace directory,
 * opened descriptor-anchored with O_NOFOLLOW (linuxfs/file_capture.ts):
 * regular file, current uid, one hard link, not group/world-writable, strict
 * UTF-8 text, ≤ 32 KiB, identity unchanged before/after the read. Any failure
 * is a refusal (the caller refuses the Run); a missing file is a no-op. No
 * upward search, no includes, no other file names.
 *
 * Provisioning enforces: private 0600 temp in the reserved write-temp
 * namespace, fsync, no-clobber `linkat` onto the name, directory fsync. An
 * existing entry (of any type) is never overwritten.
 */
import { AppError } from "../errors.ts";
import { INSTRUCTION_FILE_MAX_BYTES, INSTRUCTION_FILE_NAME, READ_TIMEOUT_MS } from "../limits.ts";
import { captureFile, type CaptureHooks } from "../../linuxfs/file_capture.ts";
import {
  type Fail,
  type FileIdentity,
  fsyncFd,
  linkIn,
  lstatIn,
  openBeneath,
  openDirChain,
  openWorkspaceRoot,
  unlinkIn,
  writeAll,
} from "../../linuxfs/fs_anchor.ts";
import { closeFd, EEXIST, ENOENT, O_CREAT, O_EXCL, O_WRONLY, syscall } from "../../sandbox/libc.ts";
import { contentDigest, decodeText } from "../tools/text.ts";
import { WRITE_TEMP_PREFIX } from "../tools/path.ts";

/** The neutral default text a new Agent starts with [AG-4]. */
export const DEFAULT_INSTRUCTION_TEXT = `# Agent instructions

This file holds standing instructions for this Agent. The operator may edit it.
It is read at the start of every Run and is limited to 32 KiB of UTF-8 text.

- Answer the operator's request directly and concisely.
- Use the workspace tools only when the request needs files from this workspace.
`;

export type InstructionFile =
  | { ok: true; present: false }
  | { ok: true; present: true; text: string; digest: string; identity: FileIdentity }
  | Fail;

/** Reads `<workspaceDir>/agent-builder.md`; any refusal code means: refuse the Run. */
export function readInstructionFile(
  workspaceDir: string,
  hooks: CaptureHooks = {},
): InstructionFile {
  const now = hooks.now ?? (() => performance.now());
  const deadline = now() + READ_TIMEOUT_MS;
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    const d = openDirChain(o.root, []);
    if (!d.ok) return d;
    try {
      const exists = lstatIn(d.fd, INSTRUCTION_FILE_NAME);
      if (!exists.ok && exists.errno === ENOENT) return { ok: true, present: false };
      const cap = captureFile(o.root, d.fd, INSTRUCTION_FILE_NAME, {
        maxBytes: INSTRUCTION_FILE_MAX_BYTES,
        deadline,
        hooks,
      });
      if (!cap.ok) return cap;
      const t = decodeText(cap.bytes);
      if (!t.ok) return t;
      return {
        ok: true,
        present: true,
        text: t.text,
        digest: contentDigest(cap.bytes),
        identity: cap.identity,
      };
    } finally {
      closeFd(d.fd);
    }
  } finally {
    o.root.close();
  }
}

function randomHex(bytes: number): string {
  const b = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * Creates the default instruction file if (and only if) the name is absent.
 * Throws AppError("unsafe_path") when the workspace or a step fails.
 */
export function ensureDefaultInstructionFile(workspaceDir: string): "created" | "exists" {
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) throw new AppError("unsafe_path", "instruction file: workspace refused");
  const dirfd = o.root.fd;
  try {
    const cur = lstatIn(dirfd, INSTRUCTION_FILE_NAME);
    if (cur.ok) return "exists";
    if (cur.errno !== ENOENT) throw new AppError("unsafe_path", `instruction file: ${cur.errno}`);
    const tmp = `${WRITE_TEMP_PREFIX}${randomHex(8)}`;
    // SECURITY: exclusive create of a private (0600) temp; never follows a link.
    const f = openBeneath(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0o600);
    if (f.fd < 0) throw new AppError("unsafe_path", `instruction temp: ${f.errno}`);
    let step: "write" | "link" | "exists" | "linked" = "write";
    try {
      const ok = syscall("fchmod", f.fd, 0o600).ret === 0n &&
        writeAll(f.fd, new TextEncoder().encode(DEFAULT_INSTRUCTION_TEXT)) && fsyncFd(f.fd);
      if (ok) {
        step = "link";
        const e = linkIn(dirfd, tmp, INSTRUCTION_FILE_NAME);
        if (e === EEXIST) step = "exists";
        else if (e === 0) step = "linked";
      }
    } finally {
      closeFd(f.fd);
    }
    // The temp is always removed; the linked name (if any) keeps the inode.
    const u = unlinkIn(dirfd, tmp);
    if (u !== 0) throw new AppError("unsafe_path", `instruction unlink: ${u}`);
    if (step === "exists") return "exists";
    if (step !== "linked") throw new AppError("unsafe_path", `instruction ${step} failed`);
    if (!fsyncFd(dirfd)) throw new AppError("unsafe_path", "instruction dir fsync");
    return "created";
  } finally {
    o.root.close();
  }
}
