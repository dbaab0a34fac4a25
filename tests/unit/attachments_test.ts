/**
 * Attachment names and the composer's attachment helpers [LC-4, UI-12]: the
 * sanitizer's rules as a case table, the never-overwrite candidates, and the
 * draft line and progress the composer shows.
 */
import { assertEquals } from "../helpers/assert.ts";
import {
  attachmentName,
  candidateName,
  sanitizeName,
} from "../../runtime/documents/attachments.ts";
import { uploadPercent, withAttachment } from "../../ui/AttachmentButton.ts";
import { AppError } from "../../runtime/errors.ts";

const cases: Array<[string, string]> = [
  ["report.pdf", "report.pdf"],
  ["Q3 report.pdf", "Q3 report.pdf"],
  ["../../etc/passwd", "_.._etc_passwd"],
  ["..", "attachment"],
  [".", "attachment"],
  ["", "attachment"],
  [".hidden", "hidden"],
  [".agent-builder-write-abc", "agent-builder-write-abc"],
  ["a\\b.txt", "a_b.txt"],
  ["tab\there.txt", "tab_here.txt"],
  ["bidi\u202Etxt.exe", "bidi_txt.exe"],
  ["zero\u200Bwidth.md", "zero_width.md"],
  ["e\u0301.txt", "\u00e9.txt"],
  [".pdf", "pdf"],
  ["  spaced  .txt", "spaced.txt"],
];

for (const [raw, want] of cases) {
  Deno.test(`sanitizeName(): ${JSON.stringify(raw)} is stored as ${JSON.stringify(want)}`, () => {
    assertEquals(sanitizeName(raw), want);
  });
}

Deno.test("sanitizeName(): a long name is cut to 128 UTF-8 bytes with its extension kept", () => {
  const s = sanitizeName("ü".repeat(200) + ".docx");
  assertEquals(new TextEncoder().encode(s).length <= 128, true);
  assertEquals(s.endsWith(".docx"), true);
  assertEquals(s.startsWith("üü"), true);
});

Deno.test("attachmentName(): percent-decoded, and refused when missing or malformed", () => {
  assertEquals(attachmentName("r%C3%A9sum%C3%A9.pdf"), "résumé.pdf");
  assertEquals(attachmentName("a%2F..%2Fb.txt"), "a_.._b.txt");
  for (const bad of [null, "", "%E0%A4%A", "x".repeat(4097)]) {
    let code = "";
    try {
      attachmentName(bad);
    } catch (err) {
      code = (err as AppError).code;
    }
    assertEquals(code, "attachment_name_invalid", String(bad));
  }
});

Deno.test("candidateName(): the name, then -2, -3 … before the extension", () => {
  assertEquals(candidateName("memo.docx", 0), "memo.docx");
  assertEquals(candidateName("memo.docx", 1), "memo-2.docx");
  assertEquals(candidateName("memo.docx", 2), "memo-3.docx");
  assertEquals(candidateName("README", 1), "README-2");
});

Deno.test("withAttachment() appends the stored path on its own line", () => {
  assertEquals(withAttachment("", "attachments/a.pdf"), "Attached: attachments/a.pdf");
  assertEquals(
    withAttachment("read this", "attachments/a.pdf"),
    "read this\nAttached: attachments/a.pdf",
  );
  assertEquals(withAttachment("x\n", "attachments/a.pdf"), "x\nAttached: attachments/a.pdf");
  assertEquals(uploadPercent({ sent: 512, size: 1024 }), 50);
  assertEquals(uploadPercent({ sent: 0, size: 0 }), 100);
});
