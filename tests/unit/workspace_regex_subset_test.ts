/** The grep regex subset [TL-5]: refusals, a differential property test and a worst-case timing. */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  compileRegexSubset,
  regexTest,
  requiredLiterals,
} from "../../runtime/tools/regex_subset.ts";
import { pick, prng } from "./workspace_prng.ts";

Deno.test("catastrophic and out-of-subset patterns are refused", () => {
  const refused = [
    "(a+)+$",
    "(a|a)*b",
    "(a*)*",
    "a*",
    "a+",
    "[a-z]+x",
    "a|b",
    "(?:a)",
    "(a)\\1",
    "\\1",
    "a{1,100}",
    "a{2}",
    "a??",
    "?a",
    "^?a",
    "a".concat("?".repeat(1)).repeat(9),
    "\\p{L}",
    "\\b",
    "\\u0041",
    "[[a]]",
    "[]",
    "[z-a]",
    "a$b",
    "^^a",
    "x".repeat(257),
    "",
  ];
  for (const p of refused) assertEquals(compileRegexSubset(p), null, p);
});

Deno.test("patterns inside the subset compile, up to 8 ? and 256 bytes", () => {
  const accepted = [
    "abc",
    "a.c",
    "^ab$",
    "colou?r",
    "[a-c]x",
    "[^ ]",
    "\\d\\w\\s\\.",
    "a?".repeat(8),
    "x".repeat(256),
    "\\(\\)\\{\\}\\*\\+\\|",
  ];
  for (const p of accepted) assert(compileRegexSubset(p) !== null, p);
});

Deno.test("property: the subset matcher agrees with JavaScript RegExp on random inputs", () => {
  const rnd = prng(1234);
  const atoms = ["a", "b", "1", " ", "é", ".", "\\d", "\\w", "\\s", "\\.", "[ab]", "[^a]", "[0-9]"];
  const chars = ["a", "b", "1", " ", "é", ".", "_", "9"];
  let compared = 0;
  for (let i = 0; i < 600; i++) {
    let pat = rnd() < 0.2 ? "^" : "";
    let q = 0;
    const n = 1 + Math.floor(rnd() * 6);
    for (let j = 0; j < n; j++) {
      pat += pick(rnd, atoms);
      if (q < 8 && rnd() < 0.3) {
        pat += "?";
        q++;
      }
    }
    if (rnd() < 0.2) pat += "$";
    const ours = compileRegexSubset(pat);
    assert(ours !== null, pat);
    const js = new RegExp(pat, "u");
    for (let k = 0; k < 20; k++) {
      const len = Math.floor(rnd() * 10);
      let line = "";
      for (let m = 0; m < len; m++) line += pick(rnd, chars);
      assertEquals(regexTest(ours, line), js.test(line), `${pat} on ${JSON.stringify(line)}`);
      compared++;
    }
  }
  assertEquals(compared, 12000);
});

Deno.test("requiredLiterals lists the runs of mandatory single-character atoms", () => {
  const lits = (p: string) => requiredLiterals(compileRegexSubset(p)!);
  assertEquals(lits("value_\\d\\d?_9\\d = x"), ["value_", "_9", " = x"]);
  assertEquals(lits("^ab?c\\.d$"), ["a", "c.d"]);
  assertEquals(lits("[ab]x[^b].\\w[c]d"), ["x", "cd"]);
  assertEquals(lits("a?b?"), []);
  assertEquals(lits("é\u{1f600}z"), ["é\u{1f600}z"]);
});

Deno.test("property: every line the matcher accepts contains every required literal", () => {
  const rnd = prng(4321);
  const atoms = ["a", "b", "1", " ", "é", "\u{1f600}", ".", "\d", "\w", "\.", "[ab]", "[^a]"];
  const chars = ["a", "b", "1", " ", "é", "\u{1f600}", ".", "_"];
  let accepted = 0;
  for (let i = 0; i < 600; i++) {
    let pat = rnd() < 0.2 ? "^" : "";
    let q = 0;
    const n = 1 + Math.floor(rnd() * 6);
    for (let j = 0; j < n; j++) {
      pat += pick(rnd, atoms);
      if (q < 8 && rnd() < 0.3) {
        pat += "?";
        q++;
      }
    }
    if (rnd() < 0.2) pat += "$";
    const re = compileRegexSubset(pat);
    assert(re !== null, pat);
    const required = requiredLiterals(re);
    for (let k = 0; k < 40; k++) {
      const len = Math.floor(rnd() * 10);
      let line = "";
      for (let m = 0; m < len; m++) line += pick(rnd, chars);
      if (!regexTest(re, line)) continue;
      accepted++;
      for (const r of required) assert(line.includes(r), `${pat} on ${JSON.stringify(line)}: ${r}`);
    }
  }
  assert(accepted > 1000, `only ${accepted} accepted lines`);
});

Deno.test("property: random byte soup never compiles with a quantifier, group or alternation", () => {
  const rnd = prng(99);
  const alphabet = [..."ab()[]{}|*+?^$\\.d-1"];
  for (let i = 0; i < 5000; i++) {
    let p = "";
    const n = 1 + Math.floor(rnd() * 10);
    for (let j = 0; j < n; j++) p += pick(rnd, alphabet);
    const c = compileRegexSubset(p);
    if (c === null) continue;
    // Strip escaped pairs and classes; what is left must hold no forbidden metacharacter.
    const bare = p.replace(/\\./g, "").replace(/\[[^\]]*\]/g, "");
    assert(!/[()*+{}|]/.test(bare), p);
    assert((p.match(/(?<!\\)\?/g) ?? []).length <= 8, p);
  }
});

Deno.test("the worst allowed pattern on a 16 KiB line runs in linear time", () => {
  // 256 bytes, 8 optional atoms, and a final atom the line never contains:
  // every state stays live across the whole line and nothing ends early.
  const pat = "a?".repeat(8) + "a".repeat(239) + "b";
  assertEquals(new TextEncoder().encode(pat).length, 256);
  const re = compileRegexSubset(pat);
  assert(re !== null);
  const line = "a".repeat(16 * 1024);
  const t0 = performance.now();
  for (let i = 0; i < 3; i++) assertEquals(regexTest(re, line), false);
  const ms = (performance.now() - t0) / 3;
  // Backtracking would take astronomically long here; the bound leaves room for a loaded CI.
  assert(ms < 2000, `took ${ms} ms`);
  assertEquals(regexTest(re, "a".repeat(239) + "b"), true);
  assertEquals(regexTest(re, "a".repeat(238) + "b"), false);
});
