/**
 * The runner profile of a skill script [LC-3, EX-1]: one call of `skill/<name>`
 * runs the skill's entry script with the product's runtime (`deno`, this
 * process's own executable) in a freshly confined runner (runtime/exec/
 * runner.ts: unprivileged uid, Landlock, seccomp, rlimits, own PID and mount
 * namespaces as root).
 *
 * What this file enforces:
 *  - the skill's own directory (skill.json + the entry script, materialised
 *    from the Agent's database into a private 0700 temp) is the runner's
 *    scratch, mounted and ruled READ-ONLY; a second private directory is the
 *    one OUTPUT directory (read-write, `SKILL_OUTPUT_DIR`, also HOME and
 *    TMPDIR); the workspace is never mounted, copied or named;
 *  - two layers refuse the rest: Deno's permissions (read: the two
 *    directories; write: the output directory; env: SKILL_OUTPUT_DIR only; no
 *    net, run, ffi, sys; no remote or npm imports, no config) and under them
 *    the runner's kernel confinement (TCP/UDP sockets EPERM by seccomp, the
 *    skill's directory EROFS, everything else EACCES by Landlock);
 *  - the validated arguments are the script's stdin as one JSON object;
 *  - wall time SKILL_WALL_MS (then everything is killed: `skill_timeout`);
 *    the runner's slots (≤ 1 per Run, ≤ 2 in the server) are taken like
 *    exec/command's;
 *  - stdout is the answer: decoded, ANSI-stripped, its head kept up to
 *    SKILL_ANSWER_MAX_BYTES with a fixed cut marker; stderr's tail up to
 *    SKILL_STDERR_MAX_BYTES; the canonical result always fits one [TL-3]
 *    projection;
 *  - files left in the output directory are listed (path, size; ≤
 *    SKILL_OUTPUT_FILES_LISTED_MAX, the count exact) and then deleted with
 *    both directories at every outcome.
 */
import type { ErrorCode } from "../errors.ts";
import {
  RUNNER_RELEASE_TIMEOUT_MS,
  SKILL_ANSWER_MAX_BYTES,
  SKILL_OUTPUT_FILES_LISTED_MAX,
  SKILL_STDERR_MAX_BYTES,
  SKILL_WALL_MS,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import {
  acquireCommandSlot,
  boundedText,
  executeInRunner,
  handOverToSandbox,
  RUNNER_PATH,
} from "../exec/runner.ts";
import { RUNNER_SCRATCH_MOUNT, RUNNER_TMP_MOUNT } from "../../sandbox/runner_entry.ts";
import { selfIsRoot } from "../../sandbox/attestation.ts";
import { canonicalJson, utf8Bytes } from "../protocol/digest.ts";
import { SKILL_MANIFEST_FILE } from "./manifest.ts";

export interface SkillScript {
  name: string;
  entry: string;
  manifestText: string;
  script: Uint8Array;
}

export interface RunSkillOptions {
  skill: SkillScript;
  /** The validated arguments (they become stdin). */
  args: Record<string, unknown>;
  /** Runner slot key: ≤ 1 runner job per Run. */
  runKey: string;
  signal?: AbortSignal;
  /**
   * Deno permission layer. "skill" (the product's). "all" exists only for the
   * escape suite, to prove the kernel layer refuses on its own.
   * @default "skill"
   */
  permissions?: "skill" | "all";
  /** @default SKILL_WALL_MS */
  wallMs?: number;
}

export type SkillRunResult = { ok: true; text: string } | { ok: false; code: ErrorCode };

const enc = new TextEncoder();

/** Cuts `text` to at most `max` UTF-8 bytes at a code-point boundary. */
function headBytes(text: string, max: number): string {
  const b = enc.encode(text);
  if (b.length <= max) return text;
  return new TextDecoder().decode(b.subarray(0, max)).replace(/\uFFFD$/, "");
}

function tailBytes(text: string, max: number): string {
  const b = enc.encode(text);
  if (b.length <= max) return text;
  return new TextDecoder().decode(b.subarray(b.length - max)).replace(/^\uFFFD/, "");
}

/** Files below `dir` (never following links), sorted, bounded. */
async function listOutput(
  dir: string,
): Promise<{ files: { path: string; size: number }[]; total: number }> {
  const files: { path: string; size: number }[] = [];
  let total = 0;
  let visited = 0;
  const walk = async (rel: string, depth: number) => {
    if (depth > 16) return;
    for await (const e of Deno.readDir(rel === "" ? dir : `${dir}/${rel}`)) {
      if (++visited > 4096) return;
      const p = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory) await walk(p, depth + 1);
      else if (e.isFile) {
        total++;
        const st = await Deno.lstat(`${dir}/${p}`);
        files.push({ path: p, size: st.size });
      }
    }
  };
  await walk("", 0);
  files.sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return {
    files: files.slice(0, SKILL_OUTPUT_FILES_LISTED_MAX).map((f) => ({
      path: [...f.path].length > 80 ? `${[...f.path].slice(0, 80).join("")}…` : f.path,
      size: f.size,
    })),
    total,
  };
}

/** Deno flags of a skill script: the permission layer above the runner's confinement. */
export function skillDenoFlags(skillDir: string, outDir: string, p: "skill" | "all"): string[] {
  const base = ["run", "--no-prompt", "--no-remote", "--no-npm", "--no-config", "--no-lock"];
  if (p === "all") return [...base, "--allow-all"];
  return [
    ...base,
    `--allow-read=${skillDir},${outDir}`,
    `--allow-write=${outDir}`,
    "--allow-env=SKILL_OUTPUT_DIR",
  ];
}

/** Runs one skill call in the runner; see the file header. */
export async function runSkillScript(o: RunSkillOptions): Promise<SkillRunResult> {
  // A compiled executable is not a Deno CLI: it cannot run a script.
  if (Deno.build.standalone) return { ok: false, code: "skill_unavailable" };
  const stdin = JSON.stringify(o.args);
  const wallMs = o.wallMs ?? SKILL_WALL_MS;
  const release = await acquireCommandSlot(o.runKey, undefined, o.signal);
  const base = await Deno.makeTempDir({ prefix: "ab-skill-" });
  try {
    await Deno.chmod(base, 0o700);
    const skillDir = `${base}/skill`;
    const outDir = `${base}/out`;
    await Deno.mkdir(skillDir, { mode: 0o755 });
    await Deno.mkdir(outDir, { mode: 0o700 });
    await Deno.writeFile(`${skillDir}/${SKILL_MANIFEST_FILE}`, enc.encode(o.skill.manifestText), {
      mode: 0o644,
      createNew: true,
    });
    await Deno.writeFile(`${skillDir}/${o.skill.entry}`, o.skill.script, {
      mode: 0o644,
      createNew: true,
    });
    await Deno.chmod(skillDir, 0o755);
    // Only the output directory is handed to the sandbox uid; the skill's own stays root's.
    handOverToSandbox(outDir);
    const root = selfIsRoot();
    const seenSkill = root ? RUNNER_SCRATCH_MOUNT : skillDir;
    const seenOut = root ? RUNNER_TMP_MOUNT : outDir;
    const r = await executeInRunner({
      job: {
        kind: "command",
        path: Deno.execPath(),
        argv: [
          "deno",
          ...skillDenoFlags(seenSkill, seenOut, o.permissions ?? "skill"),
          `${seenSkill}/${o.skill.entry}`,
        ],
        cwd: "",
        env: {
          PATH: RUNNER_PATH.join(":"),
          HOME: seenOut,
          TMPDIR: seenOut,
          SKILL_OUTPUT_DIR: seenOut,
          LANG: "C.UTF-8",
          // Inside the read-only directory: Deno keeps its caches in memory.
          DENO_DIR: `${seenSkill}/.deno`,
          DENO_NO_UPDATE_CHECK: "1",
          NO_COLOR: "1",
        },
        timeout_ms: wallMs,
        stdin: btoa(String.fromCharCode(...enc.encode(stdin))),
      },
      scratchDir: skillDir,
      tmpDir: outDir,
      readOnlyScratch: true,
      backstopMs: wallMs + RUNNER_RELEASE_TIMEOUT_MS,
      signal: o.signal,
    });
    const d = r.done;
    if (d?.ended === "cancelled" || (o.signal?.aborted && d?.ended !== "exited")) {
      return { ok: false, code: "run_cancelled" };
    }
    if (d?.ended === "timeout") return { ok: false, code: "skill_timeout" };
    if (d === null || !r.released || d.ended === "spawn_failed") {
      return { ok: false, code: "skill_failed" };
    }
    const fromB64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
    const out = boundedText(fromB64(d.stdout.head), fromB64(d.stdout.tail), d.stdout.total_bytes);
    const err = boundedText(fromB64(d.stderr.head), fromB64(d.stderr.tail), d.stderr.total_bytes);
    const listed = await listOutput(outDir);
    return { ok: true, text: shapeResult(o.skill.name, d, out.text, err.text, listed) };
  } finally {
    release();
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
}

const CUT = "\n[… answer cut: the skill printed more than fits …]";

/**
 * The canonical result, made to fit one projection. The answer has priority:
 * the stderr tail and the file list give way first (512 → 128 → 0 bytes; 16
 * → 8 → 0 files, the count stays exact), then the answer is cut further.
 */
function shapeResult(
  name: string,
  d: {
    exit_code: number | null;
    signal: string | null;
    duration_ms: number;
    stdout: { total_bytes: number };
  },
  answer: string,
  stderr: string,
  listed: { files: { path: string; size: number }[]; total: number },
): string {
  const build = (room: number, errMax: number, files: number) => {
    const cut = utf8Bytes(answer) > room;
    return canonicalJson({
      skill: name,
      trust: "untrusted",
      exit_code: d.exit_code,
      signal: d.signal,
      duration_ms: d.duration_ms,
      answer: cut ? headBytes(answer, room) + CUT : answer,
      answer_bytes: d.stdout.total_bytes,
      answer_truncated: cut,
      stderr: errMax === 0 ? "" : tailBytes(stderr, errMax),
      output_files: listed.files.slice(0, files),
      output_files_total: listed.total,
    });
  };
  const fits = (body: string) => utf8Bytes(body) <= TOOL_RESULT_PROJECTION_MAX_BYTES;
  for (const [errMax, files] of [[SKILL_STDERR_MAX_BYTES, listed.files.length], [128, 8], [0, 0]]) {
    const body = build(SKILL_ANSWER_MAX_BYTES, errMax, files);
    if (fits(body)) return body;
  }
  let room = SKILL_ANSWER_MAX_BYTES;
  for (;;) {
    const body = build(room, 0, 0);
    const over = utf8Bytes(body) - TOOL_RESULT_PROJECTION_MAX_BYTES;
    if (over <= 0 || room === 0) return body;
    room = Math.max(0, Math.min(room, utf8Bytes(answer)) - over - 64);
  }
}
