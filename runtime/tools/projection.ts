/**
 * Tool-result projection for the model [TL-3]. The canonical result stays in
 * the event untouched; the model sees either the whole result or, when it
 * would exceed 4096 bytes or the Run's 96 KiB projection budget [CX-10], a fixed
 * receipt naming the call id, original byte count, a domain-separated digest
 * and a fixed reason — never an attacker-chosen prefix/suffix cut.
 *
 * Pure module; the caller owns the per-Run budget object.
 */
import { TOOL_RESULT_PROJECTION_MAX_BYTES, TOOL_RESULTS_PER_RUN_MAX_BYTES } from "../limits.ts";
import { domainDigest } from "./text.ts";
import { utf8Bytes } from "../protocol/digest.ts";

export type ProjectionReason = "result_too_large" | "run_budget_exhausted";

/** Projection bytes already handed to the model in this Run (one per Run). */
export interface ProjectionBudget {
  usedBytes: number;
}

export type Projection =
  | { ok: true; kind: "full"; text: string; bytes: number }
  | {
    ok: true;
    kind: "receipt";
    text: string;
    bytes: number;
    reason: ProjectionReason;
    original_bytes: number;
    digest: string;
  }
  | { ok: false; code: "model_context_limit" | "tool_invalid_arguments" };

const CALL_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

export function resultDigest(text: string): string {
  return domainDigest("agent-builder/tool-result/v1", text);
}

export function newProjectionBudget(): ProjectionBudget {
  return { usedBytes: 0 };
}

/** Projects one canonical result; charges `budget` for what the model will see. */
export function projectToolResult(
  callId: string,
  canonical: string,
  budget: ProjectionBudget,
): Projection {
  if (!CALL_ID_RE.test(callId)) return { ok: false, code: "tool_invalid_arguments" };
  const bytes = utf8Bytes(canonical);
  const remaining = TOOL_RESULTS_PER_RUN_MAX_BYTES - budget.usedBytes;
  if (bytes <= TOOL_RESULT_PROJECTION_MAX_BYTES && bytes <= remaining) {
    budget.usedBytes += bytes;
    return { ok: true, kind: "full", text: canonical, bytes };
  }
  const reason: ProjectionReason = bytes > TOOL_RESULT_PROJECTION_MAX_BYTES
    ? "result_too_large"
    : "run_budget_exhausted";
  const digest = resultDigest(canonical);
  const text =
    `[tool result withheld: call_id=${callId} original_bytes=${bytes} sha256=${digest} reason=${reason}]`;
  const rb = utf8Bytes(text);
  // Even the receipt must fit the Run's budget; otherwise the Run cannot go on.
  if (rb > remaining) return { ok: false, code: "model_context_limit" };
  budget.usedBytes += rb;
  return { ok: true, kind: "receipt", text, bytes: rb, reason, original_bytes: bytes, digest };
}
