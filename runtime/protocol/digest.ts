/**
 * Domain-separated SHA-256 digests and canonical JSON, shared by the
 * ContextPlan, the ToolCatalog, the event journal and the IPC frames.
 *
 * What this file enforces: every digest names its domain (`agent-builder/<what>/vN`)
 * followed by a NUL before the content, so a digest of one kind can never be
 * replayed as another; canonical JSON sorts object keys so equal values hash equal.
 */
import { createHash } from "node:crypto";

export type Digest = `sha256:${string}`;

/** `sha256:<hex>` of `domain || 0x00 || data`. */
export function domainDigest(domain: string, data: string | Uint8Array): Digest {
  const h = createHash("sha256");
  h.update(domain);
  h.update(new Uint8Array([0]));
  h.update(data);
  return `sha256:${h.digest("hex")}`;
}

/** The digest of a tool call's arguments (canonical JSON): half of a call's identity. */
export function argsDigest(args: unknown): Digest {
  return domainDigest("agent-builder/tool-args/v1", canonicalJson(args));
}

/** The digest of an assistant answer's text, as its block event and the kernel carry it. */
export function answerDigest(text: string): Digest {
  return domainDigest("agent-builder/assistant-answer/v1", text);
}

/** JSON with object keys sorted recursively (arrays keep their order). */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort()) {
      out[k] = sortKeys((value as Record<string, unknown>)[k]);
    }
    return out;
  }
  return value;
}

export { utf8Bytes } from "./utf8.ts";
