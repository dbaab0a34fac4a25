/**
 * The catalog model-name grammar [MB-10, MB-13], shared by the broker, the
 * HTTP routes and the Worker frame schema (pure; no I/O).
 *
 * What this file enforces: a model id is 1..3 `/`-separated path parts of
 * `[a-z0-9][a-z0-9._-]*` with an optional `:tag` of `[A-Za-z0-9._-]`, at most
 * MODEL_NAME_MAX_BYTES; a name whose first of several parts carries a `.` or
 * a `:port` (or is `localhost`) names a registry host and is never pulled.
 */
import { MODEL_NAME_MAX_BYTES, MODEL_NAME_PATH_PARTS_MAX } from "../limits.ts";
import { utf8Bytes } from "./utf8.ts";

const PART = /^[a-z0-9][a-z0-9._-]*$/;
const TAG = /^[A-Za-z0-9._-]+$/;

/**
 * The catalog model-name grammar [MB-10]: 1..3 `/`-separated path parts of
 * `[a-z0-9][a-z0-9._-]*`, an optional `:tag` of `[A-Za-z0-9._-]`, ≤ 256 bytes.
 */
export function isModelName(name: unknown): name is string {
  if (typeof name !== "string" || name.length === 0) return false;
  if (utf8Bytes(name) > MODEL_NAME_MAX_BYTES) return false;
  const colon = name.indexOf(":");
  const path = colon < 0 ? name : name.slice(0, colon);
  if (colon >= 0 && !TAG.test(name.slice(colon + 1))) return false;
  const parts = path.split("/");
  return parts.length <= MODEL_NAME_PATH_PARTS_MAX && parts.every((p) => PART.test(p));
}

/**
 * A name that names a registry host [MB-13]: its first of several path parts
 * carries a `.` or a `:port`. Such names are never pulled.
 */
export function isHostQualified(name: string): boolean {
  const slash = name.indexOf("/");
  if (slash < 0) return false;
  const first = name.slice(0, slash);
  return first.includes(".") || first.includes(":") || first === "localhost";
}
