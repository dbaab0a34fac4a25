/** file/read_text windows and receipts [TL-4]: ≤ 4096 bytes / 256 lines on UTF-8 boundaries. */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileReadText } from "../../runtime/tools/file_read_text.ts";
import { fileStat } from "../../runtime/tools/file_stat.ts";
import { contentDigest } from "../../runtime/tools/text.ts";
import { withWorkspace } from "./workspace_fixture.ts";
import { pick, prng } from "../unit/workspace_prng.ts";

Deno.test("read_text returns at most 4096 bytes and never splits a UTF-8 sequence", () => {
  withWorkspace((ws) => {
    // 4095 ASCII bytes then a 3-byte character straddling the 4096 boundary.
    const text = "a".repeat(4095) + "€" + "tail";
    ws.file("u.txt", text);
    const r = fileReadText(ws.root, { path: "u.txt" });
    assert(r.ok);
    assertEquals(r.receipt.range, { start: 0, end: 4095 });
    assertEquals(r.receipt.truncated, "byte_limit");
    assertEquals(r.next_offset, 4095);
    const bytes = new TextEncoder().encode(text);
    assertEquals(r.receipt.content_digest, contentDigest(bytes));
    const r2 = fileReadText(ws.root, { path: "u.txt", offset: 4095 });
    assert(r2.ok);
    assertEquals(r2.text, "€tail");
    assertEquals(r2.receipt.truncated, "none");
    assertEquals(r2.next_offset, null);
  });
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

Deno.test("read_text windows exactly at 4096 bytes and 256 lines, and one past each", () => {
  withWorkspace((ws) => {
    ws.file("b4096.txt", "a".repeat(4096));
    const at = fileReadText(ws.root, { path: "b4096.txt" });
    assert(at.ok);
    assertEquals([at.receipt.range.end, at.receipt.truncated, at.next_offset], [
      4096,
      "none",
      null,
    ]);
    ws.file("b4097.txt", "a".repeat(4097));
    const past = fileReadText(ws.root, { path: "b4097.txt" });
    assert(past.ok);
    assertEquals([past.receipt.range.end, past.receipt.truncated, past.next_offset], [
      4096,
      "byte_limit",
      4096,
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
  const pieces = ["a", "\n", "é", "€", "😀", "\t", "\r\n", "ab\n", "x".repeat(40)];
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
