/**
 * JSON request bodies [GW-4]: Content-Type must be JSON (415), declared and
 * streamed length are bounded (413, without reading past the bound), depth and
 * key counts are bounded, and the body must match the route's strict schema (422).
 */
import { z } from "zod";
import { AppError } from "../errors.ts";
import { JSON_BODY_MAX_BYTES, JSON_MAX_DEPTH, JSON_MAX_KEYS } from "../limits.ts";
import { concatBytes } from "../protocol/bytes.ts";

/** Reads at most `max` bytes of the body; throws body_too_large past that. */
export async function readBounded(req: Request, max = JSON_BODY_MAX_BYTES): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null) {
    if (!/^\d{1,12}$/.test(declared)) throw new AppError("body_too_large", "bad content-length");
    if (Number(declared) > max) throw new AppError("body_too_large");
  }
  if (req.body === null) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > max) {
        await reader.cancel();
        throw new AppError("body_too_large");
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return concatBytes(chunks, total);
}

/**
 * Depth/key bound over a parsed JSON value: at most JSON_MAX_DEPTH nested
 * objects/arrays (the top-level one counts as 1), each with at most
 * JSON_MAX_KEYS keys (arrays count their items).
 */
export function checkJsonShape(value: unknown, depth = 0): void {
  if (value !== null && typeof value === "object") {
    if (depth >= JSON_MAX_DEPTH) throw new AppError("schema_violation", "json too deep");
    const entries = Array.isArray(value) ? value : Object.values(value);
    if (entries.length > JSON_MAX_KEYS) throw new AppError("schema_violation", "too many keys");
    for (const v of entries) checkJsonShape(v, depth + 1);
  }
}

function isJsonContentType(value: string | null): boolean {
  if (value === null) return false;
  const [type, ...params] = value.split(";").map((s) => s.trim().toLowerCase());
  if (type !== "application/json") return false;
  return params.every((p) => p === "" || p === "charset=utf-8");
}

/** Parses and validates a JSON body against a strict schema. */
export async function parseJsonBody<T>(req: Request, schema: z.ZodType<T>): Promise<T> {
  // Deny when the header is missing: a body-taking route always needs JSON.
  if (!isJsonContentType(req.headers.get("content-type"))) {
    throw new AppError("unsupported_media_type");
  }
  const bytes = await readBounded(req);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new AppError("invalid_json");
  }
  checkJsonShape(value);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AppError("schema_violation");
  return parsed.data;
}

/** The `query` of a route that takes no query parameters: any parameter is `schema_violation`. */
export const NoQuery = z.object({}).strict();

/**
 * Validates the query parameters against a route's strict schema: every name at
 * most once (a repeated one is refused, never "first wins"), values as strings.
 */
export function parseQuery<T>(url: URL, schema: z.ZodType<T>): T {
  const raw: Record<string, string> = Object.create(null);
  for (const [k, v] of url.searchParams) {
    if (Object.hasOwn(raw, k)) throw new AppError("schema_violation", "repeated query parameter");
    raw[k] = v;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new AppError("schema_violation", "query");
  return parsed.data;
}
