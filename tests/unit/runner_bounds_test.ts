/**
 * The runner's input and output bounds at the limit and one past it [EX-2,
 * EX-4, EX-1]: argv items, item size, total size, timeout, cwd; the kept
 * head/tail of a stream; runtime-compile's diagnostics cut.
 */
import { assertEquals } from "../helpers/assert.ts";
import { boundedText, cleanText, validateCommand } from "../../runtime/exec/runner.ts";
import { boundLines } from "../../runtime/exec/compile_check.ts";
import { StreamKeeper } from "../../sandbox/runner_entry.ts";
import { AppError } from "../../runtime/errors.ts";
import {
  COMMAND_ARG_MAX_ITEM_BYTES,
  COMMAND_ARGV_MAX_ITEMS,
  COMMAND_ARGV_MAX_TOTAL_BYTES,
  COMMAND_TIMEOUT_MAX_S,
  COMMAND_TIMEOUT_MIN_S,
  COMPILE_DIAGNOSTICS_MAX_BYTES,
  RUNNER_STREAM_HALF_BYTES,
} from "../../runtime/limits.ts";

const verdict = (argv: string[], cwd = "", t = 60) => {
  try {
    return validateCommand(argv, cwd, t);
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
};

Deno.test("argv: 64 items pass, 65 are refused", () => {
  assertEquals(verdict(Array(COMMAND_ARGV_MAX_ITEMS).fill("a")), "");
  assertEquals(verdict(Array(COMMAND_ARGV_MAX_ITEMS + 1).fill("a")), "tool_invalid_arguments");
  assertEquals(verdict([]), "tool_invalid_arguments");
});

Deno.test("argv: an item of 4 KiB passes, 4 KiB + 1 is refused; NUL is refused", () => {
  assertEquals(verdict(["printf", "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES)]), "");
  assertEquals(
    verdict(["printf", "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES + 1)]),
    "tool_invalid_arguments",
  );
  assertEquals(verdict(["printf", "a\0b"]), "tool_invalid_arguments");
});

Deno.test("argv: 16 KiB in total passes, 16 KiB + 1 is refused", () => {
  const item = "x".repeat(COMMAND_ARG_MAX_ITEM_BYTES);
  const four = [item, item, item, item]; // exactly the total bound
  assertEquals(COMMAND_ARGV_MAX_TOTAL_BYTES, 4 * COMMAND_ARG_MAX_ITEM_BYTES);
  assertEquals(verdict(four), "");
  assertEquals(verdict([...four, "y"]), "tool_invalid_arguments");
});

Deno.test("timeout: 1 and 120 s pass, 0 and 121 are refused; cwd stays inside", () => {
  assertEquals(verdict(["true"], "", COMMAND_TIMEOUT_MIN_S), "");
  assertEquals(verdict(["true"], "", COMMAND_TIMEOUT_MAX_S), "");
  assertEquals(verdict(["true"], "", COMMAND_TIMEOUT_MIN_S - 1), "tool_invalid_arguments");
  assertEquals(verdict(["true"], "", COMMAND_TIMEOUT_MAX_S + 1), "tool_invalid_arguments");
  assertEquals(verdict(["true"], "", 1.5), "tool_invalid_arguments");
  assertEquals(verdict(["true"], "./a/./b/"), "a/b");
  assertEquals(verdict(["true"], "a/../.."), "tool_invalid_arguments");
  assertEquals(verdict(["true"], "/etc"), "tool_invalid_arguments");
});

Deno.test("a stream of exactly 64 KiB is kept whole, one byte more is cut with a marker", () => {
  const keepAll = (n: number) => {
    const k = new StreamKeeper();
    const bytes = new Uint8Array(n).map((_, i) => 97 + (i % 26));
    // Odd chunk sizes cross the head/tail seam and wrap the ring.
    for (let i = 0; i < n; i += 4099) k.push(bytes.subarray(i, Math.min(n, i + 4099)));
    return { k, bytes };
  };
  const full = 2 * RUNNER_STREAM_HALF_BYTES;
  const a = keepAll(full);
  const ta = boundedText(a.k.head(), a.k.tail(), a.k.total);
  assertEquals([ta.truncated, ta.total_bytes, ta.text], [
    false,
    full,
    new TextDecoder().decode(a.bytes),
  ]);
  const b = keepAll(full + 1);
  const tb = boundedText(b.k.head(), b.k.tail(), b.k.total);
  assertEquals([tb.truncated, tb.total_bytes], [true, full + 1]);
  const dec = new TextDecoder();
  assertEquals(
    tb.text,
    `${dec.decode(b.bytes.subarray(0, RUNNER_STREAM_HALF_BYTES))}\n[… 1 bytes omitted …]\n${
      dec.decode(b.bytes.subarray(full + 1 - RUNNER_STREAM_HALF_BYTES))
    }`,
  );
});

Deno.test("cleaned text: CSI, OSC and lone escapes removed, invalid UTF-8 replaced", () => {
  const raw = new Uint8Array([
    ...new TextEncoder().encode("\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok \x1bc\x1b(B"),
    0xff,
    0x41,
  ]);
  assertEquals(cleanText(raw), "red ok \uFFFDA");
});

Deno.test("diagnostics are whole lines up to 12 KiB, then a count of the rest", () => {
  const line = "a.ts:1:1 TS2322 " + "x".repeat(100);
  const n = Math.floor(COMPILE_DIAGNOSTICS_MAX_BYTES / (line.length + 1));
  const fits = Array(n - 1).fill(line);
  assertEquals(boundLines(fits, COMPILE_DIAGNOSTICS_MAX_BYTES), fits.map((l) => `${l}\n`).join(""));
  const many = Array(n + 5).fill(line);
  const out = boundLines(many, COMPILE_DIAGNOSTICS_MAX_BYTES);
  assertEquals(new TextEncoder().encode(out).length <= COMPILE_DIAGNOSTICS_MAX_BYTES, true);
  assertEquals(/… \d+ more diagnostics\n$/.test(out), true);
  const kept = out.split("\n").filter((l) => l.startsWith("a.ts")).length;
  assertEquals(out.endsWith(`… ${many.length - kept} more diagnostics\n`), true);
});
