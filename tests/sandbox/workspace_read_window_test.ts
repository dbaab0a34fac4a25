/** file/read_text windows and receipts [TL-4]: ≤ 4096 bytes / 256 lines on UTF-8 boundaries. */
import { assert, assertEquals } from "../helpers/assert.ts";
import { fileReadText } from "../../runtime/tools/file_read_text.ts";
import { fileStat } from "../../runtime/tools/file_stat.ts";
import { contentDigest } from "../../runtime/tools/text.ts";
import { withWorkspace } from "./workspace_fixture.ts";

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
