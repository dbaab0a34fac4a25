/**
 * The git status section [CX-9], the pure part: `git status --porcelain=v2
 * --branch` output (≤ GIT_STATUS_OUTPUT_MAX_BYTES, as the runner captured it)
 * turned into a short, bounded context section.
 *
 * What this file enforces: at most GIT_STATUS_OUTPUT_MAX_BYTES of output are
 * read (a cut output says the counts are lower bounds); at most
 * GIT_STATUS_PATHS_MAX paths are listed, the rest is a count; paths are
 * listed as git printed them (C-quoted when unusual) and each line is cut
 * at 256 bytes; nothing but the branch line and the entries is kept.
 */
import { GIT_STATUS_OUTPUT_MAX_BYTES, GIT_STATUS_PATHS_MAX } from "../limits.ts";
import { utf8Bytes } from "../protocol/utf8.ts";

export interface GitStatus {
  branch: string | null;
  ahead: number | null;
  behind: number | null;
  /** Listed entries: a short code and the path. */
  paths: { code: string; path: string }[];
  /** All entries seen (≥ paths.length). */
  total: number;
  counts: {
    modified: number;
    added: number;
    deleted: number;
    renamed: number;
    untracked: number;
    conflicted: number;
  };
  /** The output passed the byte bound: counts are lower bounds. */
  cut: boolean;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function cutLine(s: string): string {
  const b = enc.encode(s);
  return b.length <= 256 ? s : dec.decode(b.slice(0, 256)).replace(/\uFFFD$/, "") + "…";
}

/** Parses porcelain v2 with --branch. Unknown lines are ignored. */
export function parseGitStatus(raw: string, totalBytes = utf8Bytes(raw)): GitStatus {
  const bytes = enc.encode(raw);
  const cut = Math.max(totalBytes, bytes.length) > GIT_STATUS_OUTPUT_MAX_BYTES;
  const lines = dec.decode(bytes.slice(0, GIT_STATUS_OUTPUT_MAX_BYTES)).split("\n");
  // A cut output's last line may be partial: drop it.
  if (cut) lines.pop();
  const s: GitStatus = {
    branch: null,
    ahead: null,
    behind: null,
    paths: [],
    total: 0,
    counts: { modified: 0, added: 0, deleted: 0, renamed: 0, untracked: 0, conflicted: 0 },
    cut,
  };
  const add = (code: string, path: string) => {
    s.total++;
    if (s.paths.length < GIT_STATUS_PATHS_MAX) s.paths.push({ code, path: cutLine(path) });
  };
  for (const line of lines) {
    if (line.startsWith("# branch.head ")) s.branch = line.slice(14);
    else if (line.startsWith("# branch.ab ")) {
      const m = line.match(/^# branch\.ab \+(\d+) -(\d+)$/);
      if (m) [s.ahead, s.behind] = [Number(m[1]), Number(m[2])];
    } else if (line.startsWith("1 ") || line.startsWith("2 ")) {
      const f = line.split(" ");
      const xy = f[1] ?? "..";
      const rest = line.startsWith("1 ") ? f.slice(8).join(" ") : f.slice(9).join(" ");
      const path = line.startsWith("2 ") ? rest.split("\t")[0] : rest;
      if (line.startsWith("2 ")) s.counts.renamed++;
      else if (xy.includes("A")) s.counts.added++;
      else if (xy.includes("D")) s.counts.deleted++;
      else s.counts.modified++;
      add(xy.replace(/\./g, " ").trimEnd() || "M", path);
    } else if (line.startsWith("u ")) {
      s.counts.conflicted++;
      add("U", line.split(" ").slice(10).join(" "));
    } else if (line.startsWith("? ")) {
      s.counts.untracked++;
      add("?", line.slice(2));
    }
  }
  return s;
}

/** The section text: branch, counts, ≤ 64 paths and how many more. */
export function gitStatusText(s: GitStatus): string {
  const c = s.counts;
  const ab = s.ahead !== null ? ` (ahead ${s.ahead}, behind ${s.behind})` : "";
  const at = s.cut ? "at least " : "";
  const kinds = [
    c.modified && `${c.modified} modified`,
    c.added && `${c.added} added`,
    c.deleted && `${c.deleted} deleted`,
    c.renamed && `${c.renamed} renamed`,
    c.conflicted && `${c.conflicted} conflicted`,
    c.untracked && `${c.untracked} untracked`,
  ].filter(Boolean).join(", ");
  const lines = [
    "Git status of the workspace (git status --porcelain=v2 --branch, read-only snapshot):",
    `Branch: ${s.branch ?? "unknown"}${ab}`,
    s.total === 0 ? "Working tree clean." : `Changes: ${at}${s.total} (${kinds})`,
    ...s.paths.map((p) => `${p.code.padEnd(2)} ${p.path}`),
  ];
  const more = s.total - s.paths.length;
  if (more > 0) lines.push(`… and ${at}${more} more path${more === 1 ? "" : "s"} not listed`);
  return lines.join("\n");
}
