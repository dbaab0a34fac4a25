/**
 * decodeText's four-bytes-at-a-time scan [PF-3] gives exactly the answers of
 * the byte-by-byte rules: every byte value at every position of a word, on
 * aligned and unaligned views, and long random texts.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { decodeText } from "../../runtime/tools/text.ts";
import { referenceDecode } from "./text_reference.ts";
import { pick, prng } from "./workspace_prng.ts";

function got(bytes: Uint8Array): string {
  const r = decodeText(bytes);
  return r.ok ? `text:${r.text}` : r.code;
}

Deno.test("every byte value at every offset of a long printable text is judged as byte by byte", () => {
  for (const len of [64, 67, 130]) {
    for (let pos = 0; pos < len; pos++) {
      for (let b = 0; b < 256; b++) {
        const bytes = new Uint8Array(len).fill(0x61);
        bytes[pos] = b;
        assertEquals(got(bytes), referenceDecode(bytes), `len ${len} pos ${pos} byte ${b}`);
      }
    }
  }
});

Deno.test("the edges of the printable range in a word: 0x1F, 0x20, 0x7E, 0x7F, 0x80", () => {
  for (const b of [0x1f, 0x20, 0x7e, 0x7f, 0x80, 0x09, 0x0a, 0x0d, 0x00, 0xff]) {
    for (const fill of [0x20, 0x7e, 0x21, 0x7d]) {
      const bytes = new Uint8Array(96).fill(fill);
      bytes[50] = b;
      assertEquals(got(bytes), referenceDecode(bytes), `fill ${fill} byte ${b}`);
    }
  }
});

Deno.test("property: long random texts, aligned and unaligned, match the byte-by-byte rules", () => {
  const rnd = prng(0x5eed04);
  const pieces = [
    [0x61],
    [0x20],
    [0x7e],
    [0x0a],
    [0x0d],
    [0x09],
    [0x00],
    [0x1b],
    [0x1f],
    [0x7f],
    [0xc3, 0xa9],
    [0xc2, 0x85],
    [0xe2, 0x80, 0xae],
    [0xf0, 0x9f, 0x98, 0x80],
    [0xc3],
    [0x80],
    [0xff],
  ];
  let accepted = 0;
  for (let k = 0; k < 5_000; k++) {
    const bytes: number[] = [];
    const n = 64 + Math.floor(rnd() * 200);
    const rare = rnd() < 0.7;
    for (let i = 0; i < n; i++) {
      bytes.push(...(rare && rnd() < 0.98 ? [0x61 + (i % 26)] : pick(rnd, pieces)));
    }
    const shift = Math.floor(rnd() * 4);
    const backing = new Uint8Array(bytes.length + shift);
    backing.set(bytes, shift);
    const input = backing.subarray(shift);
    const want = referenceDecode(input);
    assertEquals(got(input), want, `bytes ${bytes.join(",")} at offset ${shift}`);
    if (want.startsWith("text:")) accepted++;
  }
  assert(accepted > 500, "the generator produces accepted text too");
});
