/** Canonical workspace paths [TL-4]: table tests and a seeded property test. */
import { posix } from "node:path";
import { assert, assertEquals } from "../helpers/assert.ts";
import { canonicalDirPath, canonicalPath, compareUtf8 } from "../../runtime/tools/path.ts";
import { pick, prng } from "./workspace_prng.ts";

const code = (r: ReturnType<typeof canonicalPath>) => (r.ok ? "ok" : r.code);

Deno.test("canonicalPath accepts only already-canonical relative paths", () => {
  const table: [unknown, string][] = [
    ["a", "ok"],
    ["a/b.txt", "ok"],
    ["é/ü.md", "ok"],
    [".hidden", "ok"],
    ["a..b", "ok"],
    ["", "path_invalid"],
    [".", "path_invalid"],
    ["..", "path_invalid"],
    ["a/../b", "path_invalid"],
    ["./a", "path_invalid"],
    ["/a", "path_invalid"],
    ["a/", "path_invalid"],
    ["a//b", "path_invalid"],
    ["a\\b", "path_invalid"],
    ["a\u0000b", "path_invalid"],
    ["a\nb", "path_invalid"],
    ["a\u0085b", "path_invalid"],
    ["\ud800", "path_invalid"],
    [42, "path_invalid"],
    [null, "path_invalid"],
    [Array(32).fill("a").join("/"), "ok"],
    [Array(33).fill("a").join("/"), "path_too_long"],
    ["a".repeat(255), "ok"],
    ["a".repeat(256), "path_too_long"],
    [Array(4).fill("a".repeat(255)).join("/"), "ok"],
    [Array(5).fill("a".repeat(204)).join("/"), "ok"], // exactly 1024 bytes
    [Array(5).fill("a".repeat(205)).join("/"), "path_too_long"],
    ["é".repeat(513), "path_too_long"],
  ];
  for (const [input, want] of table) assertEquals(code(canonicalPath(input)), want, String(input));
  assertEquals(canonicalDirPath(".").ok, true);
  assertEquals(canonicalDirPath(undefined).ok, true);
});

Deno.test("property: every accepted path is a fixed point of normalisation and stays beneath the root", () => {
  const rnd = prng(0x5eed);
  const atoms = [
    "a",
    "b",
    "é",
    ".",
    "..",
    "/",
    "\\",
    "\u0000",
    "\n",
    "x.txt",
    "\ud800",
    " ",
    "~",
    "//",
  ];
  let accepted = 0;
  for (let i = 0; i < 5000; i++) {
    const n = 1 + Math.floor(rnd() * 12);
    let s = "";
    for (let j = 0; j < n; j++) s += pick(rnd, atoms);
    const r = canonicalPath(s);
    if (!r.ok) {
      assert(r.code === "path_invalid" || r.code === "path_too_long");
      continue;
    }
    accepted++;
    assertEquals(r.path, s);
    assertEquals(r.components.join("/"), s);
    assertEquals(posix.normalize(s), s, s);
    assert(!posix.isAbsolute(s));
    assert(posix.join("/ws", s).startsWith("/ws/"), s);
    assert(r.components.every((c) => c !== "" && c !== "." && c !== ".."));
    assert([...s].every((ch) => ch.charCodeAt(0) >= 0x20 && ch !== "\u007f" && ch !== "\\"));
    assert(new TextEncoder().encode(s).length <= 1024 && r.components.length <= 32);
    assertEquals(code(canonicalPath(r.path)), "ok");
  }
  assert(accepted > 100, `only ${accepted} accepted`);
});

Deno.test("property: long random paths are refused by length, never accepted past the bounds", () => {
  const rnd = prng(7);
  for (let i = 0; i < 500; i++) {
    const comps = 1 + Math.floor(rnd() * 60);
    const s = Array.from({ length: comps }, () => "x".repeat(1 + Math.floor(rnd() * 60))).join("/");
    const r = canonicalPath(s);
    const bytes = new TextEncoder().encode(s).length;
    assertEquals(r.ok, comps <= 32 && bytes <= 1024, `${comps} components, ${bytes} bytes`);
  }
});

Deno.test("compareUtf8 orders by UTF-8 bytes, not UTF-16 code units", () => {
  const items = ["\uff61", "\u{1f600}", "a", "B", "é"];
  assertEquals([...items].sort(compareUtf8), ["B", "a", "é", "\uff61", "\u{1f600}"]);
});
