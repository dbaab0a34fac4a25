/**
 * The operator's own view of an Agent's workspace [#18]: a read-only browser
 * (one directory at a time, one file at a time) and the edit of the
 * instruction file `agent-builder.md`.
 *
 * What this file enforces: every access opens the workspace root and each
 * path component descriptor-anchored exactly as the file tools do
 * (linuxfs/fs_anchor.ts — no symlinks, owner and mode checks, no escape from
 * the root); a listing shows at most WORKSPACE_BROWSE_ENTRIES_MAX entries and
 * hides the reserved write-temp names and shows names with control and bidi
 * characters escaped (runtime/display_name.ts); a file is read whole up to
 * READ_FILE_MAX_BYTES. The instruction edit goes through file/write's own
 * planner and committer (runtime/tools/file_write.ts, mutation_commit.ts):
 * the operator's read of the file is the receipt, the edit is refused with
 * `file_changed` unless the file still has the digest the operator edited,
 * and `dry_run` returns the exact diff the commit would write.
 */
import { captureFile } from "../../linuxfs/file_capture.ts";
import { escapeName } from "../display_name.ts";
import { DT_DIR, listDir } from "../../linuxfs/dirents.ts";
import { type Fail, openDirChain, openWorkspaceRoot } from "../../linuxfs/fs_anchor.ts";
import { closeFd } from "../../sandbox/libc.ts";
import {
  INSTRUCTION_FILE_NAME,
  READ_FILE_MAX_BYTES,
  READ_TIMEOUT_MS,
  WORKSPACE_BROWSE_ENTRIES_MAX,
} from "../limits.ts";
import { fileStat } from "../tools/file_stat.ts";
import { prepareWrite } from "../tools/file_write.ts";
import { commitMutation } from "../tools/mutation_commit.ts";
import type { MutationBinding } from "../tools/mutation_plan.ts";
import { canonicalDirPath, canonicalPath, isReservedName } from "../tools/path.ts";
import { contentDigest, decodeText } from "../tools/text.ts";
import { readInstructionFile } from "./instruction_file.ts";

export interface BrowseEntry {
  name: string;
  kind: "file" | "directory" | "other";
  size: number | null;
  modified_ms: number | null;
}

export type BrowseResult =
  | { ok: true; path: string; entries: BrowseEntry[]; truncated: boolean }
  | Fail;

const nsToMs = (ns: string) => Number(BigInt(ns) / 1_000_000n);

/** One directory of the workspace, directories first, then by name. */
export function listWorkspaceDir(workspaceDir: string, path: string): BrowseResult {
  const p = canonicalDirPath(path);
  if (!p.ok) return p;
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    const d = openDirChain(o.root, p.components);
    if (!d.ok) return d;
    let listed;
    try {
      listed = listDir(d.fd, WORKSPACE_BROWSE_ENTRIES_MAX + 1);
    } finally {
      closeFd(d.fd);
    }
    const raw = listed.ok ? listed.entries : listed.reason === "entries" ? null : undefined;
    if (raw === undefined) return { ok: false, code: "path_unsafe_owner" };
    // Past the bound the listing is cut (the operator is told), never partial in a silent way.
    const entries = (raw ?? []).filter((e) => !isReservedName(e.name));
    const truncated = raw === null || entries.length > WORKSPACE_BROWSE_ENTRIES_MAX;
    const shown = entries.slice(0, WORKSPACE_BROWSE_ENTRIES_MAX).map((e): BrowseEntry => {
      const rel = [...p.components, e.name].join("/");
      const s = fileStat(o.root, { path: rel });
      if (!s.ok) {
        return {
          name: escapeName(e.name),
          kind: e.type === DT_DIR ? "other" : "other",
          size: null,
          modified_ms: null,
        };
      }
      return {
        name: escapeName(e.name),
        kind: s.kind,
        size: s.kind === "file" ? s.size : null,
        modified_ms: nsToMs(s.identity.mtime_ns),
      };
    });
    shown.sort((a, b) =>
      a.kind === b.kind
        ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
        : a.kind === "directory"
        ? -1
        : b.kind === "directory"
        ? 1
        : 0
    );
    return { ok: true, path: p.path, entries: shown, truncated };
  } finally {
    o.root.close();
  }
}

export type FileReadResult =
  | {
    ok: true;
    path: string;
    bytes: Uint8Array;
    text: string | null;
    size: number;
    modified_ms: number;
  }
  | Fail;

/** One workspace file, whole (≤ READ_FILE_MAX_BYTES); `text` is null when it is not UTF-8 text. */
export function readWorkspaceFile(workspaceDir: string, path: string): FileReadResult {
  const p = canonicalPath(path);
  if (!p.ok) return p;
  const leaf = p.components[p.components.length - 1];
  if (isReservedName(leaf)) return { ok: false, code: "path_invalid" };
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    const d = openDirChain(o.root, p.components.slice(0, -1));
    if (!d.ok) return d;
    try {
      const cap = captureFile(o.root, d.fd, leaf, {
        maxBytes: READ_FILE_MAX_BYTES,
        deadline: performance.now() + READ_TIMEOUT_MS,
      });
      if (!cap.ok) return cap;
      const t = decodeText(cap.bytes);
      return {
        ok: true,
        path: p.path,
        bytes: cap.bytes,
        text: t.ok ? t.text : null,
        size: cap.bytes.length,
        modified_ms: nsToMs(cap.identity.mtime_ns),
      };
    } finally {
      closeFd(d.fd);
    }
  } finally {
    o.root.close();
  }
}

export type InstructionsView =
  | { ok: true; present: boolean; text: string; digest: string | null }
  | Fail;

export function readInstructions(workspaceDir: string): InstructionsView {
  const r = readInstructionFile(workspaceDir);
  if (!r.ok) return r;
  if (!r.present) return { ok: true, present: false, text: "", digest: null };
  return { ok: true, present: true, text: r.text, digest: r.digest };
}

export type InstructionsWrite =
  | { ok: true; diff: string; committed: boolean; digest: string }
  | Fail;

/**
 * Replaces (or creates) the instruction file with `text` through file/write's planner and
 * committer. `baseDigest` is the digest the operator edited (null: the file did not exist).
 */
export function writeInstructions(
  workspaceDir: string,
  text: string,
  baseDigest: string | null,
  binding: MutationBinding,
  dryRun: boolean,
): InstructionsWrite {
  const cur = readInstructionFile(workspaceDir);
  if (!cur.ok) return cur;
  if ((cur.present ? cur.digest : null) !== baseDigest) return { ok: false, code: "file_changed" };
  const o = openWorkspaceRoot(workspaceDir);
  if (!o.ok) return o;
  try {
    const bytes = new TextEncoder().encode(cur.present ? cur.text : "");
    const receipt = cur.present
      ? {
        kind: "file/read_text" as const,
        path: INSTRUCTION_FILE_NAME,
        identity: cur.identity,
        content_digest: cur.digest,
        range: { start: 0, end: bytes.length },
        truncated: "none" as const,
      }
      : null;
    const plan = prepareWrite(o.root, { path: INSTRUCTION_FILE_NAME, content: text }, {
      receipt,
      binding,
    });
    if (!plan.ok) return plan;
    const digest = contentDigest(new TextEncoder().encode(text));
    if (dryRun) return { ok: true, diff: plan.diff, committed: false, digest };
    const c = commitMutation(o.root, plan.plan, { binding });
    if (!c.ok) return c;
    return { ok: true, diff: plan.diff, committed: true, digest: c.content_digest };
  } finally {
    o.root.close();
  }
}
