/**
 * file/read_text windows and receipts [TL-4]: ≤ 4096 bytes / 256 lines on
 * UTF-8 boundaries, and within the JSON budget that keeps one result inside
 * one 4096-byte projection [TL-3].
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileReadText, readWindowBudget, windowOf } from "../../runtime/tools/file_read_text.ts";
import { fileStat } from "../../runtime/tools/file_stat.ts";
import { contentDigest } from "../../runtime/tools/text.ts";
import { withWorkspace } from "./workspace_fixture.ts";
import { pick, prng } from "../unit/workspace_prng.ts";

Deno.test("read_text windows never split a UTF-8 sequence at the window budget", () => {
  withWorkspace((ws) => {
    // ASCII up to one byte before the budget, then a 3-byte character straddling it.
    const budget = readWindowBudget("u.txt");
    const text = "a".repeat(budget - 1) + "€" + "tail";
    ws.file("u.txt", text);
    const r = fileReadText(ws.root, { path: "u.txt" });
    assert(r.ok);
    assertEquals(r.receipt.range, { start: 0, end: budget - 1 });
    assertEquals(r.receipt.truncated, "byte_limit");
    assertEquals(r.next_offset, budget - 1);
    const bytes = new TextEncoder().encode(text);
    assertEquals(r.receipt.content_digest, contentDigest(bytes));
    const r2 = fileReadText(ws.root, { path: "u.txt", offset: budget - 1 });
    assert(r2.ok);
    assertEquals(r2.text, "€tail");
    assertEquals(r2.receipt.truncated, "none");
    assertEquals(r2.next_offset, null);
  });
});

Deno.test("a window holds at most 4096 bytes and 256 lines, exactly at each limit and one past", () => {
  const a = (n: number) => new TextEncoder().encode("a".repeat(n));
  assertEquals(windowOf(a(4096), 0), { end: 4096, truncated: "none" });
  assertEquals(windowOf(a(4097), 0), { end: 4096, truncated: "byte_limit" });
  assertEquals(windowOf(a(4097), 1), { end: 4097, truncated: "none" });
  // Even with room to spare in the escape budget, raw bytes stop at 4096.
  assertEquals(windowOf(a(5000), 0, 1_000_000), { end: 4096, truncated: "byte_limit" });
  const l = (s: string) => new TextEncoder().encode(s);
  assertEquals(windowOf(l("x\n".repeat(256)), 0), { end: 512, truncated: "none" });
  assertEquals(windowOf(l("x\n".repeat(256) + "y"), 0), { end: 512, truncated: "line_limit" });
  assertEquals(windowOf(l("\n".repeat(257)), 0), { end: 256, truncated: "line_limit" });
  // Escaped bytes cost two: 2048 quotes fill a 4096 budget, one more does not fit.
  assertEquals(windowOf(l('"'.repeat(2048)), 0), { end: 2048, truncated: "none" });
  assertEquals(windowOf(l('"'.repeat(2049)), 0), { end: 2048, truncated: "byte_limit" });
  assertEquals(windowOf(l("é".repeat(2049)), 0), { end: 4096, truncated: "byte_limit" });
});

Deno.test("read_text stops after 256 lines", () => {
  withWorkspace((ws) => {
    const text = Array.from({ length: 300 }, (_, i) => `${i}`).join("\n") + "\n";
    ws.file("lines.txt", text);
    const r = fileReadText(ws.root, { path: "lines.txt" });
    assert(r.ok);
    assertEquals(r.text.split("\n").length - 1, 256);
    assertEquals(r.receipt.truncated, "line_limit");
    const exact = Array.from({ length: 256 }, () => "x").join("\n") + "\n";
    ws.file("exact.txt", exact);
    const e = fileReadText(ws.root, { path: "exact.txt" });
    assert(e.ok);
    assertEquals(e.receipt.truncated, "none");
    assertEquals(e.text, exact);
  });
});

Deno.test("read_text refuses an offset inside a UTF-8 sequence or past the end", () => {
  withWorkspace((ws) => {
    ws.file("e.txt", "é\n");
    const mid = fileReadText(ws.root, { path: "e.txt", offset: 1 });
    assertEquals(mid.ok ? "ok" : mid.code, "tool_invalid_arguments");
    const past = fileReadText(ws.root, { path: "e.txt", offset: 9 });
    assertEquals(past.ok ? "ok" : past.code, "tool_invalid_arguments");
    const neg = fileReadText(ws.root, { path: "e.txt", offset: -1 });
    assertEquals(neg.ok ? "ok" : neg.code, "tool_invalid_arguments");
  });
});

Deno.test("read_text receipts carry the identity that file/stat reports", () => {
  withWorkspace((ws) => {
    ws.file("s/id.txt", "same\n");
    const r = fileReadText(ws.root, { path: "s/id.txt" });
    const s = fileStat(ws.root, { path: "s/id.txt" });
    assert(r.ok && s.ok);
    assertEquals(r.receipt.identity, s.identity);
    assertEquals(s.kind, "file");
    assertEquals(s.size, 5);
    const d = fileStat(ws.root, { path: "s" });
    assert(d.ok);
    assertEquals(d.kind, "directory");
    const root = fileStat(ws.root, { path: "." });
    assert(root.ok);
    assertEquals(root.kind, "directory");
  });
});

Deno.test("read_text accepts tabs, CRLF and an empty file", () => {
  withWorkspace((ws) => {
    ws.file("t.txt", "a\tb\r\n");
    ws.file("empty.txt", "");
    const t = fileReadText(ws.root, { path: "t.txt" });
    assert(t.ok);
    assertEquals(t.text, "a\tb\r\n");
    const e = fileReadText(ws.root, { path: "empty.txt" });
    assert(e.ok);
    assertEquals(e.receipt.range, { start: 0, end: 0 });
  });
});

Deno.test("read_text windows exactly at the budget and 256 lines, and one past each", () => {
  withWorkspace((ws) => {
    const budget = readWindowBudget("b.txt");
    ws.file("b.txt", "a".repeat(budget));
    const at = fileReadText(ws.root, { path: "b.txt" });
    assert(at.ok);
    assertEquals([at.receipt.range.end, at.receipt.truncated, at.next_offset], [
      budget,
      "none",
      null,
    ]);
    ws.file("b.txt", "a".repeat(budget + 1));
    const past = fileReadText(ws.root, { path: "b.txt" });
    assert(past.ok);
    assertEquals([past.receipt.range.end, past.receipt.truncated, past.next_offset], [
      budget,
      "byte_limit",
      budget,
    ]);
    // 257 lines: the window is the first 256 and the 257th (no trailing LF) follows.
    ws.file("l257.txt", "x\n".repeat(256) + "y");
    const l = fileReadText(ws.root, { path: "l257.txt" });
    assert(l.ok);
    assertEquals([l.receipt.range.end, l.receipt.truncated, l.next_offset], [
      512,
      "line_limit",
      512,
    ]);
    const rest = fileReadText(ws.root, { path: "l257.txt", offset: 512 });
    assert(rest.ok);
    assertEquals([rest.text, rest.next_offset], ["y", null]);
    // An offset equal to the length is the (empty) end window; one past is refused.
    const end = fileReadText(ws.root, { path: "l257.txt", offset: 513 });
    assert(end.ok);
    assertEquals([end.text, end.next_offset, end.receipt.truncated], ["", null, "none"]);
    const over = fileReadText(ws.root, { path: "l257.txt", offset: 514 });
    assertEquals(over.ok ? "ok" : over.code, "tool_invalid_arguments");
  });
});

Deno.test("property: following next_offset reassembles any text, every window bounded and on boundaries", () => {
  const pieces = ["a", "\n", "é", "€", "😀", "\t", "\r\n", "ab\n", "x".repeat(40), '"', "\\"];
  withWorkspace((ws) => {
    for (let seed = 1; seed <= 24; seed++) {
      const rnd = prng(seed);
      const parts: string[] = [];
      const target = Math.floor(rnd() * 20000);
      let len = 0;
      while (len < target) {
        const p = pick(rnd, pieces);
        parts.push(p);
        len += p.length;
      }
      const text = parts.join("");
      const bytes = new TextEncoder().encode(text);
      ws.file("p.txt", bytes);
      let offset = 0;
      let joined = "";
      for (let step = 0; step < 10_000; step++) {
        const r = fileReadText(ws.root, { path: "p.txt", offset });
        assert(r.ok, `seed ${seed} offset ${offset}`);
        const w = bytes.subarray(r.receipt.range.start, r.receipt.range.end);
        assertEquals(r.receipt.range.start, offset);
        assert(w.length <= 4096, `seed ${seed}: window of ${w.length} bytes`);
        const escaped = new TextEncoder().encode(JSON.stringify(r.text)).length - 2;
        assert(escaped <= readWindowBudget("p.txt"), `seed ${seed}: ${escaped} escaped bytes`);
        assert(w.filter((b) => b === 0x0a).length <= 256, `seed ${seed}: too many lines`);
        assertEquals(new TextDecoder("utf-8", { fatal: true }).decode(w), r.text);
        assertEquals(r.receipt.content_digest, contentDigest(bytes));
        if (r.receipt.truncated === "line_limit") assertEquals(w[w.length - 1], 0x0a);
        assertEquals(r.next_offset === null, r.receipt.truncated === "none");
        assert(w.length > 0 || bytes.length === 0, "a window always makes progress");
        joined += r.text;
        if (r.next_offset === null) break;
        offset = r.next_offset;
      }
      assertEquals(joined, text, `seed ${seed}`);
    }
  });
});

Deno.test("property: every offset inside a UTF-8 sequence is refused, every boundary accepted", () => {
  withWorkspace((ws) => {
    const text = "aé€😀\n€é😀a";
    const bytes = new TextEncoder().encode(text);
    ws.file("u.txt", bytes);
    for (let off = 0; off <= bytes.length + 1; off++) {
      const boundary = off <= bytes.length &&
        (off === bytes.length || (bytes[off] & 0xc0) !== 0x80);
      const r = fileReadText(ws.root, { path: "u.txt", offset: off });
      assertEquals(
        r.ok ? "ok" : r.code,
        boundary ? "ok" : "tool_invalid_arguments",
        `offset ${off}`,
      );
      if (r.ok) assertEquals(r.text, new TextDecoder().decode(bytes.subarray(off)));
    }
  });
});
