/**
 * The repetition guard's exact numbers [MB-7]: cycle 32..512 bytes, ≥ 3
 * repeats and ≥ 512 bytes, last 2048 code points, checked once per 64 new
 * bytes; the cut keeps one copy, never retracts sent text, and lands on a
 * UTF-8 boundary.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  findSuffixCycle,
  nextBoundary,
  RepetitionGuard,
  windowStart,
} from "../../runtime/model/repetition_guard.ts";

const enc = new TextEncoder();
const b = (s: string) => enc.encode(s);
/** A non-repeating ASCII string of exactly n bytes (LCG letters). */
const unit = (n: number, seed = 0) => {
  let x = (seed * 2654435761 + 12345) >>> 0;
  let out = "";
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out += String.fromCharCode(97 + ((x >>> 16) % 26));
  }
  return out;
};

Deno.test("findSuffixCycle() applies the cycle-length, repeat and total-byte bounds", () => {
  const cases: Array<[string, string, ReturnType<typeof findSuffixCycle>]> = [
    ["171-byte cycle ×3 = 513 bytes hits", unit(171).repeat(3), { cycleBytes: 171, repeats: 3 }],
    ["170-byte cycle ×3 = 510 bytes misses", unit(170).repeat(3), null],
    ["170-byte cycle ×4 = 680 bytes hits", unit(170).repeat(4), { cycleBytes: 170, repeats: 4 }],
    ["100-byte cycle ×5 = 500 bytes misses", unit(100).repeat(5), null],
    ["100-byte cycle ×6 = 600 bytes hits", unit(100).repeat(6), { cycleBytes: 100, repeats: 6 }],
    ["512-byte cycle ×3 hits", unit(512).repeat(3), { cycleBytes: 512, repeats: 3 }],
    ["513-byte cycle ×3 misses (cycle too long)", unit(513).repeat(3), null],
    ["32-byte cycle ×16 = 512 bytes hits", unit(32).repeat(16), { cycleBytes: 32, repeats: 16 }],
    ["32-byte cycle ×15 = 480 bytes misses", unit(32).repeat(15), null],
    ["a 2-byte cycle is found as a 32-byte multiple", "ab".repeat(300), {
      cycleBytes: 32,
      repeats: 18,
    }],
    ["two repeats never hit", unit(300).repeat(2), null],
    ["non-repeating text misses", unit(2000, 3), null],
    ["a repeat followed by a different tail misses", unit(171).repeat(3) + "x", null],
  ];
  for (const [name, text, want] of cases) assertEquals(findSuffixCycle(b(text)), want, name);
});

Deno.test("windowStart() counts code points, not bytes", () => {
  const text = b("a".repeat(10) + "é".repeat(5)); // 10 + 10 bytes
  assertEquals(windowStart(text, text.length, 5), 10);
  assertEquals(windowStart(text, text.length, 6), 9);
  assertEquals(windowStart(text, text.length, 100), 0);
  const emoji = b("😀".repeat(3000));
  assertEquals(emoji.length - windowStart(emoji, emoji.length, 2048), 2048 * 4);
});

Deno.test("nextBoundary() skips UTF-8 continuation bytes", () => {
  const t = b("a€b"); // € is 3 bytes at 1..3
  assertEquals(nextBoundary(t, 2, t.length), 4);
  assertEquals(nextBoundary(t, 1, t.length), 1);
});

Deno.test("the guard checks at most once per 64 new bytes", () => {
  const g = new RepetitionGuard();
  for (let i = 0; i < 63; i++) assertEquals(g.push(b("z"), 0), null);
  assertEquals(g.checks, 0);
  g.push(b("z"), 0);
  assertEquals(g.checks, 1);
  for (let i = 0; i < 127; i++) g.push(b("z"), 0);
  assertEquals(g.checks, 2);
});

Deno.test("the guard fires only at a check point and cuts after one copy of the cycle", () => {
  const g = new RepetitionGuard();
  const prefix = unit(40, 9);
  const cyc = unit(171, 1);
  const stream = prefix + cyc.repeat(5);
  let cut: number | null = null;
  let fedAt = 0;
  for (let i = 0; i < stream.length && cut === null; i++) {
    cut = g.push(b(stream[i]), 0);
    fedAt = i + 1;
  }
  assert(cut !== null, "guard fired");
  assertEquals(fedAt % 64, 0);
  assert(fedAt >= prefix.length + 3 * 171);
  // One copy of the (possibly rotated) cycle survives after the clean prefix.
  assert(cut >= prefix.length + 171 && cut < prefix.length + 2 * 171, `cut at ${cut}`);
});

Deno.test("the cut never goes below what was already sent", () => {
  const g = new RepetitionGuard();
  const text = unit(171, 2).repeat(4);
  assertEquals(g.push(b(text), 600), 600);
});

Deno.test("the cut is moved to a code point boundary in multibyte text", () => {
  const g = new RepetitionGuard();
  const cyc = "é".repeat(40) + unit(91, 5); // 171 bytes: 80 + 91
  const text = "x" + cyc.repeat(4);
  const cut = g.push(b(text), 2)!; // sent=2 falls inside the first "é"
  assert(cut !== null);
  assertEquals((b(text)[cut] & 0xc0) !== 0x80, true);
});
