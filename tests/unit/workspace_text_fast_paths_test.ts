/**
 * The fast paths of the text rules and the path order [PF-3] give exactly the
 * answers of the plain byte-by-byte definitions they replaced.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { compareUtf8 } from "../../runtime/tools/path.ts";
import { decodeText } from "../../runtime/tools/text.ts";
import { referenceDecode } from "./text_reference.ts";
import { pick, prng } from "./workspace_prng.ts";
import { cstr } from "../../sandbox/libc.ts";

/** The definition: compare the UTF-8 encodings byte by byte. */
function byteOrder(a: string, b: string): number {
  const ea = new TextEncoder().encode(a);
  const eb = new TextEncoder().encode(b);
  const n = Math.min(ea.length, eb.length);
  for (let i = 0; i < n; i++) if (ea[i] !== eb[i]) return ea[i] - eb[i];
  return ea.length - eb.length;
}

const UNITS = [
  "a",
  "B",
  "z",
  "é",
  "\u00ff",
  "\u0800",
  "\ud7ff",
  "\ue000",
  "\uff61",
  "\uffff",
  "\u{10000}",
  "\u{1f600}",
  "\u{10ffff}",
  "\ud800",
  "\udfff",
];

Deno.test("property: compareUtf8 has the sign of the UTF-8 byte comparison, lone surrogates included", () => {
  const rnd = prng(0x5eed01);
  for (let k = 0; k < 20_000; k++) {
    const gen = () => {
      let s = "";
      const n = Math.floor(rnd() * 5);
      for (let i = 0; i < n; i++) s += pick(rnd, UNITS);
      return s;
    };
    const a = gen();
    const b = rnd() < 0.3 ? a + gen() : gen();
    assertEquals(
      Math.sign(compareUtf8(a, b)),
      Math.sign(byteOrder(a, b)),
      `${escape(a)} ${escape(b)}`,
    );
  }
});

Deno.test("property: decodeText refuses and accepts exactly what the byte-by-byte rules do", () => {
  const rnd = prng(0x5eed02);
  const pieces = [
    [0x61],
    [0x0a],
    [0x0d],
    [0x09],
    [0x00],
    [0x1b],
    [0x7f],
    [0xc3, 0xa9],
    [0xc2, 0x85],
    [0xc2, 0x9f],
    [0xc2, 0xa0],
    [0xe2, 0x80, 0xae],
    [0xef, 0xbb, 0xbf],
    [0xf0, 0x9f, 0x98, 0x80],
    [0xc3],
    [0x80],
    [0xed, 0xa0, 0x80],
    [0xff],
  ];
  let accepted = 0;
  for (let k = 0; k < 20_000; k++) {
    const bytes: number[] = [];
    const n = Math.floor(rnd() * 8);
    // Mostly-ASCII inputs exercise the ASCII path; the rest the strict one.
    const pool = rnd() < 0.5 ? pieces.slice(0, 4) : pieces;
    for (let i = 0; i < n; i++) bytes.push(...pick(rnd, pool));
    const input = new Uint8Array(bytes);
    const got = decodeText(input);
    const want = referenceDecode(input);
    assertEquals(got.ok ? `text:${got.text}` : got.code, want, `bytes ${bytes.join(",")}`);
    if (got.ok) accepted++;
  }
  assert(accepted > 1000, "the generator produces accepted text too");
});

Deno.test("property: cstr is the UTF-8 encoding plus one NUL, for short ASCII names and the rest", () => {
  const rnd = prng(0x5eed03);
  for (let k = 0; k < 5_000; k++) {
    let s = "";
    const n = Math.floor(rnd() * 80);
    const pool = rnd() < 0.5 ? ["a", "Z", ".", "-", "_", "~"] : UNITS;
    for (let i = 0; i < n; i++) s += pick(rnd, pool);
    const want = new Uint8Array([...new TextEncoder().encode(s), 0]);
    assertEquals([...cstr(s)], [...want], escape(s));
  }
  let threw = false;
  try {
    cstr("a\0b");
  } catch {
    threw = true;
  }
  assert(threw, "a NUL inside the string is refused");
});
