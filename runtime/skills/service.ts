/**
 * The one owner of skills [LC-3]: install (a verified archive into the
 * Agent's database), list, inspect, remove, the ToolSpecs of an Agent's
 * skills for its Runs, and one call of `skill/<name>`.
 *
 * What this file enforces: an install is verified whole (archive.ts) before
 * anything is stored, and stored in one transaction that also decides
 * `skill_exists` and `skill_limit` (≤ SKILLS_PER_AGENT_MAX); nothing is
 * written to the workspace; a Run's toolset names only skills installed when
 * it was prepared, and a call runs the stored script only when the stored
 * manifest still declares the same tool (a skill removed or replaced since is
 * `skill_not_found`, nothing runs).
 */
import type { DatabaseSync } from "node:sqlite";
import { AppError } from "../errors.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import {
  deleteSkillRow,
  getSkillRow,
  insertSkillRow,
  listSkillRows,
  type SkillRow,
} from "../store/skill_store.ts";
import { verifySkillArchive } from "./archive.ts";
import { parseManifest, parseSkillToolId, SKILL_NAME_RE, type SkillManifest } from "./manifest.ts";
import { runSkillScript, type SkillRunResult } from "./skill_run.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { isHiddenCodePoint } from "../display_name.ts";
import { displayText } from "../extensions/tool_map.ts";
import { SKILL_DESCRIPTION_MAX_CHARS } from "../limits.ts";

/** What a call's approval binds: the stored skill at preview time. */
export interface SkillPlan {
  name: string;
  entry: string;
  digest: string;
}

/** What the API and the UI show of one skill. */
export interface SkillView {
  name: string;
  description: string;
  entry: string;
  tool_id: string;
  digest: string;
  archive_bytes: number;
  installed_at: number;
  /** The declared argument names. */
  args: string[];
}

export interface SkillDetail extends SkillView {
  manifest: SkillManifest;
  manifest_text: string;
  /** The entry script as text (UTF-8, ≤ 16 KiB), exactly as installed. */
  source: string;
  /** Hidden code points of the source (bidi, invisible, controls other than tab/CR/LF). */
  hidden_characters: number;
  /** The source with each hidden code point written as `\u{HEX}` (what the UI shows). */
  source_visible: string;
}

/** Makes hidden code points visible (display_name.ts's rule), keeping tabs and line breaks. */
function visible(text: string): { text: string; hidden: number } {
  let hidden = 0;
  let out = "";
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c !== 9 && c !== 10 && c !== 13 && isHiddenCodePoint(c)) {
      hidden++;
      out += `\\u{${c.toString(16).toUpperCase()}}`;
    } else out += ch;
  }
  return { text: out, hidden };
}

export interface SkillServiceOptions {
  /** The Agent's state database (requires a usable Agent). */
  stateDb(agentId: string): DatabaseSync;
  now?: () => number;
}

function view(row: SkillRow): SkillView {
  const { manifest } = parseManifest(new TextEncoder().encode(row.manifest_json));
  return {
    name: row.name,
    description: displayText(row.description, SKILL_DESCRIPTION_MAX_CHARS),
    entry: row.entry,
    tool_id: `skill/${row.name}`,
    digest: row.digest,
    archive_bytes: row.archive_bytes,
    installed_at: row.installed_at,
    args: Object.keys((manifest.args.properties ?? {}) as Record<string, unknown>),
  };
}

export function createSkillService(opts: SkillServiceOptions) {
  const now = opts.now ?? Date.now;

  function requireName(name: string): string {
    if (!SKILL_NAME_RE.test(name)) throw new AppError("skill_not_found");
    return name;
  }

  return {
    /** Verifies and stores an uploaded archive. */
    async install(agentId: string, bytes: Uint8Array, digestHeader: string | null) {
      const db = opts.stateDb(agentId);
      const v = await verifySkillArchive(bytes, digestHeader);
      insertSkillRow(db, {
        name: v.manifest.name,
        description: v.manifest.description,
        entry: v.manifest.entry,
        manifest_json: v.manifestText,
        digest: v.digest,
        archive_bytes: v.archiveBytes,
        script: v.script,
        installed_at: now(),
      });
      return view(getSkillRow(db, v.manifest.name)!);
    },

    list(agentId: string): SkillView[] {
      return listSkillRows(opts.stateDb(agentId)).map(view);
    },

    get(agentId: string, name: string): SkillDetail {
      const row = getSkillRow(opts.stateDb(agentId), requireName(name));
      if (!row) throw new AppError("skill_not_found");
      const { manifest } = parseManifest(new TextEncoder().encode(row.manifest_json));
      const source = new TextDecoder().decode(row.script);
      const shown = visible(source);
      return {
        ...view(row),
        manifest,
        manifest_text: visible(row.manifest_json).text,
        source,
        hidden_characters: shown.hidden,
        source_visible: shown.text,
      };
    },

    remove(agentId: string, name: string): void {
      if (!deleteSkillRow(opts.stateDb(agentId), requireName(name))) {
        throw new AppError("skill_not_found");
      }
    },

    /**
     * The Agent's skills as tools (always `ask`). None in a compiled build: it
     * has no Deno CLI to run a script with, so the model is never offered a
     * tool that could only fail (`skill_unavailable`).
     */
    specsFor(agentId: string): ToolSpec[] {
      if (Deno.build.standalone) return [];
      return listSkillRows(opts.stateDb(agentId)).map((r) =>
        parseManifest(new TextEncoder().encode(r.manifest_json)).spec
      );
    },

    /**
     * What an approval shows and binds for a call of `toolId`: the stored
     * skill's name, entry, archive digest; null when the Run's tool is not
     * (any more) the stored one.
     */
    planCall(agentId: string, toolId: string, spec: ToolSpec): SkillPlan | null {
      const name = parseSkillToolId(toolId);
      const row = name === null ? null : getSkillRow(opts.stateDb(agentId), name);
      if (!row) return null;
      const current = parseManifest(new TextEncoder().encode(row.manifest_json)).spec;
      if (canonicalJson(current) !== canonicalJson(spec)) return null;
      return { name: row.name, entry: row.entry, digest: row.digest };
    },

    /** One call, after its approval: the stored script in the runner, if still the approved one. */
    async call(
      agentId: string,
      plan: SkillPlan,
      args: Record<string, unknown>,
      runKey: string,
      signal?: AbortSignal,
    ): Promise<SkillRunResult> {
      const row = getSkillRow(opts.stateDb(agentId), plan.name);
      if (!row || row.digest !== plan.digest || row.entry !== plan.entry) {
        return { ok: false, code: "skill_not_found" };
      }
      return await runSkillScript({
        skill: {
          name: row.name,
          entry: row.entry,
          manifestText: row.manifest_json,
          script: row.script,
        },
        args,
        runKey,
        signal,
      });
    },
  };
}

export type SkillService = ReturnType<typeof createSkillService>;
