/**
 * MCP tools → ToolSpecs [LC-5, TL-1, TL-3].
 *
 * What this file enforces:
 * - a listed tool is offered only when its name is `[A-Za-z0-9_-]{1,64}` and
 *   its input schema maps onto the ToolSpec subset: a flat object whose
 *   properties are bounded strings, integers, booleans or arrays of strings
 *   with `maxItems`; `$ref`, `oneOf`/`anyOf`/`allOf`/`not`, nested objects,
 *   numbers, unbounded arrays, extra keywords that change meaning — each is
 *   refused with its fixed reason, and the refusal is listed, never hidden;
 * - at most MCP_TOOLS_PER_SERVER_MAX tools are offered per server (the rest
 *   are refused `tool_limit`);
 * - the description the model and the operator read is escaped (control,
 *   bidi and invisible characters become `\u{HEX}`, display_name.ts), cut to
 *   a bound, and prefixed with a fixed marker naming the server and saying
 *   it is untrusted; names shown for refused tools are escaped and cut too;
 * - the tool's id is `mcp/<server>/<tool>`, policy `ask` by default, and its
 *   result is text only, wrapped as `{server, tool, trust: "untrusted", …}`
 *   (non-text content replaced by a fixed note).
 * Pure.
 */
import { escapeName } from "../display_name.ts";
import {
  MCP_ARGS_MAX_BYTES,
  MCP_CALL_TIMEOUT_MS,
  MCP_TOOL_ARGS_MAX,
  MCP_TOOL_DESCRIPTION_MAX_CHARS,
  MCP_TOOL_NAME_MAX_BYTES,
  MCP_TOOLS_PER_SERVER_MAX,
  TOOL_RESULT_PROJECTION_MAX_BYTES,
} from "../limits.ts";
import type { ToolSpec } from "../tools/catalog.ts";
import { canonicalJson } from "../protocol/digest.ts";
import { type CallResult, ListedToolSchema } from "./mcp_client.ts";

export const SERVER_NAME_RE = /^[a-z][a-z0-9-]{0,15}$/;
export const MCP_TOOL_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

export type RefusalReason =
  | "name_invalid"
  | "schema_invalid"
  | "schema_ref"
  | "schema_combinator"
  | "schema_nested"
  | "schema_type"
  | "schema_unbounded_array"
  | "schema_arg_name"
  | "schema_too_many_args"
  | "tool_limit"
  | "duplicate_name";

export interface RefusedTool {
  /** The name as listed, escaped and cut for display. */
  name: string;
  reason: RefusalReason;
}

export interface OfferedTool {
  /** The server's own name of the tool (what tools/call sends). */
  name: string;
  /** The description as the model and the operator see it (escaped, cut). */
  description: string;
  spec: ToolSpec;
}

const ARG_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
const STRING_MAX_BYTES = 16384;
const ITEM_MAX_BYTES = 4096;
/** Keywords a property may carry that do not change what we validate. */
const HARMLESS = new Set([
  "type",
  "description",
  "title",
  "default",
  "examples",
  "enum",
  "maxLength",
  "minLength",
  "format",
  "pattern",
  "minimum",
  "maximum",
  "items",
  "maxItems",
  "minItems",
  "uniqueItems",
]);

/** A display-safe form of untrusted text: escaped and cut at `max` characters. */
export function displayText(s: string, max: number): string {
  const chars = [...s];
  const cut = chars.length > max ? chars.slice(0, max).join("") + "…" : s;
  return escapeName(cut);
}

function hasKey(v: unknown, keys: readonly string[]): boolean {
  if (v === null || typeof v !== "object") return false;
  if (Array.isArray(v)) return v.some((x) => hasKey(x, keys));
  for (const [k, x] of Object.entries(v)) {
    if (keys.includes(k) || hasKey(x, keys)) return true;
  }
  return false;
}

type Arg = ToolSpec["args"][string];

function mapProperty(
  p: unknown,
  required: boolean,
): { ok: true; arg: Arg } | { ok: false; reason: RefusalReason } {
  if (p === null || typeof p !== "object" || Array.isArray(p)) {
    return { ok: false, reason: "schema_invalid" };
  }
  const o = p as Record<string, unknown>;
  if (o.type === "object") return { ok: false, reason: "schema_nested" };
  for (const k of Object.keys(o)) {
    if (!HARMLESS.has(k)) return { ok: false, reason: "schema_type" };
  }
  const description = typeof o.description === "string" ? displayText(o.description, 180) : "";
  const intOr = (v: unknown, d: number) => typeof v === "number" && Number.isSafeInteger(v) ? v : d;
  switch (o.type) {
    case "string":
      return {
        ok: true,
        arg: {
          type: "string",
          description,
          required,
          max_bytes: Math.min(
            STRING_MAX_BYTES,
            Math.max(1, intOr(o.maxLength, STRING_MAX_BYTES / 4) * 4),
          ),
        },
      };
    case "integer": {
      const min = intOr(o.minimum, Number.MIN_SAFE_INTEGER);
      const max = intOr(o.maximum, Number.MAX_SAFE_INTEGER);
      if (min > max) return { ok: false, reason: "schema_invalid" };
      return {
        ok: true,
        arg: { type: "integer", description, required, minimum: min, maximum: max },
      };
    }
    case "boolean":
      return { ok: true, arg: { type: "boolean", description, required } };
    case "array": {
      if (typeof o.maxItems !== "number" || !Number.isSafeInteger(o.maxItems) || o.maxItems < 1) {
        return { ok: false, reason: "schema_unbounded_array" };
      }
      const it = o.items as Record<string, unknown> | undefined;
      if (!it || typeof it !== "object" || it.type !== "string") {
        return { ok: false, reason: "schema_type" };
      }
      for (const k of Object.keys(it)) {
        if (!HARMLESS.has(k) || k === "items") return { ok: false, reason: "schema_type" };
      }
      return {
        ok: true,
        arg: {
          type: "string_array",
          description,
          required,
          max_items: Math.min(256, o.maxItems),
          item_max_bytes: Math.min(ITEM_MAX_BYTES, Math.max(1, intOr(it.maxLength, 1024) * 4)),
        },
      };
    }
    case "object":
      return { ok: false, reason: "schema_nested" };
    default:
      return { ok: false, reason: "schema_type" };
  }
}

/** The ToolSpec args of an input schema, or why it does not map. */
export function mapInputSchema(
  schema: Record<string, unknown>,
): { ok: true; args: ToolSpec["args"] } | { ok: false; reason: RefusalReason } {
  if (hasKey(schema, ["$ref", "$defs", "definitions", "$dynamicRef"])) {
    return { ok: false, reason: "schema_ref" };
  }
  if (hasKey(schema, ["oneOf", "anyOf", "allOf", "not", "if", "then", "else"])) {
    return { ok: false, reason: "schema_combinator" };
  }
  if (schema.type !== "object") return { ok: false, reason: "schema_type" };
  const allowedTop = new Set([
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$schema",
    "description",
    "title",
  ]);
  for (const k of Object.keys(schema)) {
    if (!allowedTop.has(k)) return { ok: false, reason: "schema_type" };
  }
  const props = schema.properties ?? {};
  if (props === null || typeof props !== "object" || Array.isArray(props)) {
    return { ok: false, reason: "schema_invalid" };
  }
  const req = schema.required ?? [];
  if (!Array.isArray(req) || req.some((r) => typeof r !== "string")) {
    return { ok: false, reason: "schema_invalid" };
  }
  const entries = Object.entries(props as Record<string, unknown>);
  if (entries.length > MCP_TOOL_ARGS_MAX) return { ok: false, reason: "schema_too_many_args" };
  for (const r of req as string[]) {
    if (!Object.hasOwn(props, r)) return { ok: false, reason: "schema_invalid" };
  }
  const args: ToolSpec["args"] = {};
  for (const [name, p] of entries) {
    if (!ARG_NAME_RE.test(name)) return { ok: false, reason: "schema_arg_name" };
    const m = mapProperty(p, (req as string[]).includes(name));
    if (!m.ok) return m;
    args[name] = m.arg;
  }
  return { ok: true, args };
}

/** The tool id of an MCP tool. */
export function mcpToolId(server: string, tool: string): string {
  return `mcp/${server}/${tool}`;
}

/** Splits `mcp/<server>/<tool>`; null for any other id. */
export function parseMcpToolId(id: string): { server: string; tool: string } | null {
  const m = /^mcp\/([a-z][a-z0-9-]{0,15})\/([A-Za-z0-9_-]{1,64})$/.exec(id);
  return m ? { server: m[1], tool: m[2] } : null;
}

/** Maps one server's listing: what is offered and what is refused, with reasons. */
export function mapTools(
  server: string,
  listed: readonly unknown[],
  more: boolean,
): { offered: OfferedTool[]; refused: RefusedTool[] } {
  const offered: OfferedTool[] = [];
  const refused: RefusedTool[] = [];
  const seen = new Set<string>();
  for (const raw of listed) {
    const t = ListedToolSchema.safeParse(raw);
    const rawName = raw !== null && typeof raw === "object" &&
        typeof (raw as { name?: unknown }).name === "string"
      ? (raw as { name: string }).name
      : "";
    const shown = displayText(rawName, MCP_TOOL_NAME_MAX_BYTES);
    if (!t.success) {
      refused.push({ name: shown, reason: "schema_invalid" });
      continue;
    }
    if (!MCP_TOOL_NAME_RE.test(t.data.name)) {
      refused.push({ name: shown, reason: "name_invalid" });
      continue;
    }
    if (seen.has(t.data.name)) {
      refused.push({ name: shown, reason: "duplicate_name" });
      continue;
    }
    seen.add(t.data.name);
    const m = mapInputSchema(t.data.inputSchema);
    if (!m.ok) {
      refused.push({ name: shown, reason: m.reason });
      continue;
    }
    if (offered.length >= MCP_TOOLS_PER_SERVER_MAX) {
      refused.push({ name: shown, reason: "tool_limit" });
      continue;
    }
    const description = displayText(
      (t.data.description ?? "").trim() || "(no description)",
      MCP_TOOL_DESCRIPTION_MAX_CHARS,
    );
    offered.push({
      name: t.data.name,
      description,
      spec: {
        id: mcpToolId(server, t.data.name),
        version: 3,
        // Fixed, trusted prefix; the server's text after it is untrusted data.
        description: `[MCP ${server}; untrusted description] ${description}`.slice(0, 400),
        args: m.args,
        result: { kind: "text", trust: "untrusted_tool_output" },
        attributes: { read: true, write: true, risk: "high", concurrency: "serial" },
        default_policy: "ask",
        timeout_ms: MCP_CALL_TIMEOUT_MS,
        cancellable: true,
        input_max_bytes: MCP_ARGS_MAX_BYTES,
        output_max_bytes: TOOL_RESULT_PROJECTION_MAX_BYTES * 16,
      },
    });
  }
  if (more) refused.push({ name: "(further pages)", reason: "tool_limit" });
  return { offered, refused };
}

/** The fixed note that replaces every non-text content item. */
export const NON_TEXT_NOTE = "[non-text MCP content omitted]";

/** The canonical result text of a tools/call: text only, marked untrusted [TL-3]. */
export function canonicalMcpResult(server: string, tool: string, r: CallResult): string {
  const parts = r.content.map((c) =>
    c.type === "text" && typeof c.text === "string" ? c.text : NON_TEXT_NOTE
  );
  return canonicalJson({
    server,
    tool,
    trust: "untrusted",
    is_error: r.isError === true,
    content: parts.join("\n"),
  });
}
