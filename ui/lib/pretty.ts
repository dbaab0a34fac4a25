/**
 * Payloads for people [#18]: JSON values laid out with two-space indents,
 * keys unquoted, and strings that hold several lines shown as those lines
 * (no "\n" escapes, no JSON inside a JSON string escaped twice). Pure.
 */

const PRETTY_MAX_CHARS = 256 * 1024;

function block(s: string, indent: string): string {
  return "|\n" + s.replace(/\n$/, "").split("\n").map((l) => `${indent}  ${l}`).join("\n");
}

/** One value at `indent`; strings that parse as JSON objects are laid out as values too. */
export function prettyValue(v: unknown, indent = ""): string {
  if (typeof v === "string") {
    const inner = parseJsonText(v);
    if (inner !== undefined) return prettyValue(inner, indent);
    return v.includes("\n") ? block(v, indent) : JSON.stringify(v);
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return "[]";
    return v.map((x) => `\n${indent}- ${prettyValue(x, indent + "  ")}`).join("");
  }
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0) return "{}";
    return entries.map(([k, x]) => {
      const val = prettyValue(x, indent + "  ");
      return `\n${indent}${k}:${val.startsWith("\n") ? "" : " "}${val}`;
    }).join("");
  }
  return JSON.stringify(v) ?? String(v);
}

/** A JSON object/array written as text, else undefined. */
function parseJsonText(s: string): unknown {
  const t = s.trim();
  if (!(t.startsWith("{") && t.endsWith("}")) && !(t.startsWith("[") && t.endsWith("]"))) {
    return undefined;
  }
  try {
    const v = JSON.parse(t);
    return v !== null && typeof v === "object" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The whole payload as text, bounded. */
export function prettyPayload(v: unknown): string {
  const out = prettyValue(v).replace(/^\n/, "");
  return out.length > PRETTY_MAX_CHARS ? `${out.slice(0, PRETTY_MAX_CHARS)}\n…` : out;
}
