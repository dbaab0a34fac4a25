import { assert, assertEquals, assertThrows } from "../helpers/assert.ts";
import { LineSplitter, LineTooLongError } from "../../runtime/protocol/line_splitter.ts";
import { concatBytes } from "../../runtime/protocol/bytes.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const tooLong = (e: unknown) => assert(e instanceof LineTooLongError, `not LineTooLongError: ${e}`);
const text = (lines: Uint8Array[]) => lines.map((l) => dec.decode(l));

Deno.test("lines split across chunks come out whole and in order", () => {
  const s = new LineSplitter(16);
  assertEquals(text(s.push(enc.encode("ab"))), []);
  assertEquals(text(s.push(enc.encode("c\nde\n\nf"))), ["abc", "de", ""]);
  assertEquals(s.pendingBytes, 1);
  assertEquals(text(s.push(enc.encode("g\n"))), ["fg"]);
  assertEquals(s.finish(), null);
});

Deno.test("an unterminated last line is handed out by finish", () => {
  const s = new LineSplitter(16);
  s.push(enc.encode("x\nyz"));
  assertEquals(dec.decode(s.finish()!), "yz");
  assertEquals(s.finish(), null);
});

Deno.test("a line of exactly the bound passes and one byte more throws, complete or pending", () => {
  const s = new LineSplitter(4);
  assertEquals(text(s.push(enc.encode("abcd\n"))), ["abcd"]);
  assertThrows(() => s.push(enc.encode("abcde\n")), tooLong);
  const pending = new LineSplitter(4);
  pending.push(enc.encode("ab"));
  pending.push(enc.encode("cd"));
  assertThrows(() => pending.push(enc.encode("e")), tooLong);
});

Deno.test("lines handed out do not change when the caller's chunk is reused", () => {
  const s = new LineSplitter(16);
  const chunk = enc.encode("one\ntw");
  const [first] = s.push(chunk);
  chunk.fill(0x21);
  assertEquals(dec.decode(first), "one");
  const [second] = s.push(enc.encode("o\n"));
  assertEquals(dec.decode(second), "two");
});

Deno.test("concatBytes() joins parts into a fresh array, never one of the parts", () => {
  const a = new Uint8Array([1, 2]);
  const joined = concatBytes([a, new Uint8Array(0), new Uint8Array([3])]);
  assertEquals([...joined], [1, 2, 3]);
  const single = concatBytes([a], 2);
  a[0] = 9;
  assertEquals([...single], [1, 2]);
  assertEquals(concatBytes([]).length, 0);
});
