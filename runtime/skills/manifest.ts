/**
 * `skill.json` [LC-3]: `{name, description, entry, args}` and the ToolSpec a
 * skill becomes.
 *
 * What this file enforces: the manifest is a strict object (no other key);
 * `name` is `[a-z][a-z0-9-]{1,31}` (it becomes the tool id `skill/<name>`);
 * `description` is 1..SKILL_DESCRIPTION_MAX_CHARS characters, offered to the
 * model escaped and behind a fixed, trusted prefix; `entry` is a plain file
 * name ending in `.ts`, `.js` or `.mjs` (never `skill.json`, never a path);
 * `args` is a JSON schema that maps onto the ToolSpec subset through the same
 * mapper MCP tools use (runtime/extensions/tool_map.ts) — a schema it
 * refuses is `skill_args_unsupported`, never silently narrowed. The tool is
 * always `ask`, high risk, serial. Pure.
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import {
  SKILL_ARGS_MAX_BYTES,
  SKILL_DESCRIPTION_MAX_CHARS,
  SKILL_TOOL_TIMEOUT_MS,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import { displayText, mapInputSchema } from "../extensions/tool_map.ts";

export const SKILL_NAME_RE = /^[a-z][a-z0-9-]{1,31}$/;
export const SKILL_ENTRY_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,59}\.(?:ts|js|mjs)$/;
export const SKILL_MANIFEST_FILE = "skill.json";

export const SkillManifestSchema = z.object({
  name: z.string().regex(SKILL_NAME_RE),
  description: z.string().min(1).max(SKILL_DESCRIPTION_MAX_CHARS),
  entry: z.string().regex(SKILL_ENTRY_RE).refine((e) => !e.includes("..")),
  args: z.record(z.string(), z.unknown()),
}).strict();
export type SkillManifest = z.infer<typeof SkillManifestSchema>;

/** The tool id of a skill. */
export function skillToolId(name: string): string {
  return `skill/${name}`;
}

/** `skill/<name>` → name; null for any other id. */
export function parseSkillToolId(id: string): string | null {
  const m = /^skill\/([a-z][a-z0-9-]{1,31})$/.exec(id);
  return m ? m[1] : null;
}

/** Parses `skill.json` bytes: strict schema, and its args within the ToolSpec subset. */
export function parseManifest(bytes: Uint8Array): { manifest: SkillManifest; spec: ToolSpec } {
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new AppError("skill_manifest_invalid", "not UTF-8 JSON");
  }
  const m = SkillManifestSchema.safeParse(raw);
  if (!m.success) throw new AppError("skill_manifest_invalid", m.error.issues[0]?.message);
  if (m.data.entry === SKILL_MANIFEST_FILE) throw new AppError("skill_manifest_invalid", "entry");
  return { manifest: m.data, spec: skillSpec(m.data) };
}

/** The ToolSpec of an installed skill (always `ask`). */
export function skillSpec(m: SkillManifest): ToolSpec {
  const mapped = mapInputSchema(m.args);
  if (!mapped.ok) throw new AppError("skill_args_unsupported", mapped.reason);
  const description = displayText(m.description.trim(), SKILL_DESCRIPTION_MAX_CHARS);
  return {
    id: skillToolId(m.name),
    version: 3,
    // Fixed, trusted prefix; the operator-installed text after it is data.
    description: `[Skill ${m.name}; sandboxed script, no workspace, no network] ${description}`
      .slice(0, 400),
    args: mapped.args,
    result: { kind: "text", trust: "untrusted_tool_output" },
    attributes: { read: false, write: false, risk: "high", concurrency: "serial" },
    default_policy: "ask",
    timeout_ms: SKILL_TOOL_TIMEOUT_MS,
    cancellable: true,
    input_max_bytes: SKILL_ARGS_MAX_BYTES,
    output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES,
  };
}
