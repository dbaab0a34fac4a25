/**
 * The reasoning buffer [MB-12] and the pull message rule [MB-13], pure:
 * reasoning is kept up to 32 KiB per call (content exactly at the limit is
 * whole; one byte more is cut with one marker), never splits a code point,
 * streams coalesced deltas whose concatenation is the committed text; an
 * Ollama pull error is shown only when it is 1..256 printable bytes.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { REASONING_COMMIT_MAX_BYTES } from "../../runtime/limits.ts";
import {
  REASONING_CONTENT_LIMIT_BYTES,
  REASONING_MARKER,
  ReasoningBuffer,
} from "../../runtime/model/reasoning.ts";
import { PULL_FAILED_TEXT, pullMessage } from "../../runtime/model/pulls.ts";
import type { ContentDelta } from "../../runtime/model/types.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

Deno.test("reasoning exactly at the limit is kept whole; one byte more is cut with one marker, ≤ 32 KiB", () => {
  const at = new ReasoningBuffer();
  at.append("a".repeat(REASONING_CONTENT_LIMIT_BYTES));
  const whole = at.finish();
  assertEquals([bytes(whole), at.cut], [REASONING_CONTENT_LIMIT_BYTES, false]);

  const deltas: ContentDelta[] = [];
  const past = new ReasoningBuffer((d) => deltas.push(d), () => 0);
  past.append("a".repeat(REASONING_CONTENT_LIMIT_BYTES));
  past.append("b");
  past.append("never kept");
  const cut = past.finish();
  assert(past.cut);
  assert(cut.endsWith(REASONING_MARKER) && !cut.includes("b"));
  assertEquals(bytes(cut), REASONING_COMMIT_MAX_BYTES);
  assertEquals(deltas.map((d) => d.text).join(""), cut);
});

Deno.test("reasoning never splits a code point at the limit", () => {
  const r = new ReasoningBuffer();
  r.append("a".repeat(REASONING_CONTENT_LIMIT_BYTES - 1) + "é"); // é is 2 bytes: does not fit
  const t = r.finish();
  assertEquals(t, "a".repeat(REASONING_CONTENT_LIMIT_BYTES - 1) + REASONING_MARKER);
});

Deno.test("reasoning deltas: the first at once, later ones coalesced, together the committed text", () => {
  let now = 0;
  const deltas: ContentDelta[] = [];
  const r = new ReasoningBuffer((d) => deltas.push(d), () => now);
  r.append("Let me think. ");
  assertEquals(deltas.length, 1);
  for (let i = 0; i < 10; i++) r.append("x");
  assertEquals(deltas.length, 1, "small pieces wait");
  now += 60;
  r.append("y");
  assertEquals(deltas.length, 2, "50 ms passed");
  r.append("z".repeat(300));
  assertEquals(deltas.length, 3, "≥ 256 bytes pending");
  const text = r.finish();
  assertEquals(deltas.map((d) => d.text).join(""), text);
  assertEquals(deltas.map((d) => d.index), deltas.map((_, i) => i));
  assertEquals(new ReasoningBuffer().finish(), "");
});

Deno.test("a pull error is shown only when it is 1..256 printable bytes", () => {
  assertEquals(pullMessage("x".repeat(256)), "x".repeat(256));
  assertEquals(pullMessage("x".repeat(257)), PULL_FAILED_TEXT);
  assertEquals(
    pullMessage("max retries exceeded: unexpected EOF"),
    "max retries exceeded: unexpected EOF",
  );
  assertEquals(pullMessage("bad\nline"), PULL_FAILED_TEXT);
  assertEquals(pullMessage("\u202egnp.exe"), PULL_FAILED_TEXT);
  assertEquals(pullMessage("é"), PULL_FAILED_TEXT);
  assertEquals(pullMessage(""), PULL_FAILED_TEXT);
});
