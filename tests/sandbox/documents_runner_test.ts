/**
 * document/extract_text in the real runner [LC-4]: documents made by the test
 * (PDF, DOCX, HTML, Markdown, text) are extracted by the production runner —
 * confined, the file read-only, RLIMIT_DATA lowered — and every refusal has
 * its fixed code: encrypted and malformed PDFs, a PDF whose content stream
 * inflates to a 1.5 GiB operand (memory limit, not a hang), the DOCX zip bounds at and
 * past each limit, HTML whose scripts never run and never reach the text,
 * the 16 MiB bound at and past, unsupported formats, symlinks.
 */
import { waitFor } from "../helpers/worker_procs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { extractText } from "../../runtime/documents/extract.ts";
import { checkZipLimits } from "../../runtime/documents/zip_limits.ts";
import { DOCUMENT_MAX_BYTES, TOOL_RESULT_PROJECTION_MAX_BYTES } from "../../runtime/limits.ts";
import { productionRunnerModule } from "../../runtime/worker/bundle.ts";
import {
  HOSTILE_HTML,
  makeDocx,
  makeDocxWithEntries,
  makeDocxWithZeros,
  makeEncryptedPdf,
  makeMalformedPdf,
  makePdf,
} from "../helpers/documents.ts";

const MiB = 1024 * 1024;

async function withWorkspace(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ab-docs-ws-" });
  try {
    await Deno.chmod(dir, 0o755);
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function extract(dir: string, args: Record<string, string | number>, wallMs?: number) {
  const r = await extractText({
    workspaceDir: dir,
    args,
    runKey: `test/${crypto.randomUUID()}`,
    wallMs,
  });
  if (!r.ok) return { code: r.code } as const;
  assert(new TextEncoder().encode(r.text).length <= TOOL_RESULT_PROJECTION_MAX_BYTES);
  return JSON.parse(r.text);
}

/**
 * A PDF bomb: one FlateDecode content stream that inflates to a 1.5 GiB
 * string operand (`(AAAA…) Tj`), about 1.5 MiB on disk.
 */
async function pdfBomb(): Promise<Uint8Array> {
  const enc = new TextEncoder();
  const cs = new CompressionStream("deflate");
  const w = cs.writable.getWriter();
  const deflated = new Response(cs.readable).arrayBuffer();
  const chunk = new Uint8Array(MiB).fill(0x41);
  await w.write(enc.encode("BT /F1 12 Tf 72 700 Td ("));
  for (let i = 0; i < 1536; i++) await w.write(chunk);
  await w.write(enc.encode(") Tj ET"));
  await w.close();
  const z = new Uint8Array(await deflated);
  const objs = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R " +
    "/Resources << /Font << /F1 5 0 R >> >> >>",
  ];
  let head = "%PDF-1.4\n";
  const offs: number[] = [];
  objs.forEach((o, i) => {
    offs.push(head.length);
    head += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  offs.push(head.length);
  head += `4 0 obj\n<< /Length ${z.length} /Filter /FlateDecode >>\nstream\n`;
  const headBytes = enc.encode(head);
  let tail = "\nendstream\nendobj\n";
  offs.push(headBytes.length + z.length + tail.length);
  tail += "5 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n";
  const xref = headBytes.length + z.length + tail.length;
  tail += `xref\n0 6\n0000000000 65535 f \n` +
    offs.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("") +
    `trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  const tailBytes = enc.encode(tail);
  const out = new Uint8Array(headBytes.length + z.length + tailBytes.length);
  out.set(headBytes);
  out.set(z, headBytes.length);
  out.set(tailBytes, headBytes.length + z.length);
  return out;
}

Deno.test("document/extract_text in the runner", async (t) => {
  await withWorkspace(async (ws) => {
    await Deno.mkdir(`${ws}/docs`, { mode: 0o755 });
    await t.step("a PDF's text, page by page", async () => {
      await Deno.writeFile(`${ws}/docs/report.pdf`, makePdf(["Hello page one", "Page two"]));
      const r = await extract(ws, { path: "docs/report.pdf" });
      assertEquals(r.format, "pdf");
      assertEquals(r.pages, 2);
      assertEquals(r.text, "Hello page one\n\nPage two");
      assertEquals(r.total_chars, 24);
      assertEquals(r.next_offset, null);
    });

    await t.step("a DOCX as Markdown", async () => {
      await Deno.writeFile(`${ws}/memo.docx`, makeDocx(["First paragraph", "Second one"]));
      const r = await extract(ws, { path: "memo.docx" });
      assertEquals(r.format, "docx");
      assertEquals(r.text, "First paragraph\n\nSecond one");
    });

    await t.step("HTML: scripts never run and never reach the text", async () => {
      await Deno.writeTextFile(`${ws}/page.html`, HOSTILE_HTML);
      const r = await extract(ws, { path: "page.html" });
      assertEquals(
        r.text,
        "# Quarterly report\n\nRevenue grew **12 percent** in [Q3](https://example.com/q3).\n\n" +
          "click me\n\n[image: chart of revenue]",
      );
      for (const bad of ["alert", "script", "fetch", "javascript:", "cookie", "display"]) {
        assert(!r.text.includes(bad), bad);
      }
    });

    await t.step("paged windows in code points, continued at next_offset", async () => {
      const text = "😀".repeat(10) + "abcdefghij";
      await Deno.writeTextFile(`${ws}/notes.md`, text);
      const a = await extract(ws, { path: "notes.md", limit: 8 });
      assertEquals([a.text, a.chars, a.total_chars, a.next_offset], ["😀".repeat(8), 8, 20, 8]);
      const b = await extract(ws, { path: "notes.md", offset: a.next_offset, limit: 8 });
      assertEquals([b.text, b.next_offset], ["😀😀abcdef", 16]);
      const c = await extract(ws, { path: "notes.md", offset: 16 });
      assertEquals([c.text, c.next_offset], ["ghij", null]);
      const d = await extract(ws, { path: "notes.md", offset: 99 });
      assertEquals([d.text, d.chars, d.next_offset], ["", 0, null]);
    });

    await t.step("a window that would not fit one projection is shortened", async () => {
      // 3000 characters of 3 UTF-8 bytes each: far past 4096 bytes.
      await Deno.writeTextFile(`${ws}/wide.txt`, "語".repeat(5000));
      const r = await extract(ws, { path: "wide.txt" });
      assert(r.chars > 1000 && r.chars < 1400, JSON.stringify(r).slice(0, 200));
      assertEquals(r.next_offset, r.chars);
      assertEquals(r.total_chars, 5000);
    });

    await t.step("encrypted and malformed PDFs have fixed codes", async () => {
      await Deno.writeFile(`${ws}/locked.pdf`, makeEncryptedPdf());
      assertEquals(await extract(ws, { path: "locked.pdf" }), { code: "document_encrypted" });
      await Deno.writeFile(`${ws}/broken.pdf`, makeMalformedPdf());
      assertEquals(await extract(ws, { path: "broken.pdf" }), { code: "document_malformed" });
      await Deno.writeTextFile(`${ws}/fake.pdf`, "not a pdf at all");
      assertEquals(await extract(ws, { path: "fake.pdf" }), { code: "document_malformed" });
    });

    await t.step("a PDF bomb (1.5 GiB inflated operand) ends at the memory limit", async () => {
      const bomb = await pdfBomb();
      assert(bomb.length < 4 * MiB);
      await Deno.writeFile(`${ws}/bomb.pdf`, bomb);
      const r = await extract(ws, { path: "bomb.pdf" });
      assertEquals(r, { code: "document_resource_limit" });
    });

    await t.step("an extraction past its wall time is killed: document_timeout", async () => {
      // A 10 ms wall cannot even load pdf.js: the runner is killed, nothing hangs.
      await Deno.writeFile(`${ws}/slow.pdf`, makePdf(["never read"]));
      assertEquals(await extract(ws, { path: "slow.pdf" }, 10), { code: "document_timeout" });
    });

    await t.step("a cancelled extraction ends run_cancelled", async () => {
      await Deno.writeFile(`${ws}/cancel.pdf`, makePdf(["never read"]));
      const ac = new AbortController();
      ac.abort();
      const r = await extractText({
        workspaceDir: ws,
        args: { path: "cancel.pdf" },
        runKey: `test/${crypto.randomUUID()}`,
        signal: ac.signal,
      });
      assertEquals(r, { ok: false, code: "run_cancelled" });
      // Aborted while the runner works: stopped, its answer (if any) discarded.
      const late = new AbortController();
      const running = extractText({
        workspaceDir: ws,
        args: { path: "cancel.pdf" },
        runKey: `test/${crypto.randomUUID()}`,
        signal: late.signal,
      });
      // Abort once its runner's stage 2 exists (a state, polled with a bound).
      // It runs dist/runner.js when that is fresh, runner_entry.ts otherwise.
      const runnerModule = productionRunnerModule().pathname;
      const stage2 = () =>
        [...Deno.readDirSync("/proc")].some((e) => {
          if (!/^\d+$/.test(e.name)) return false;
          try {
            const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
            return cmd.includes(runnerModule) && cmd.includes("--stage2");
          } catch {
            return false;
          }
        });
      await waitFor("the runner's stage 2", stage2);
      late.abort();
      assertEquals(await running, { ok: false, code: "run_cancelled" });
    });

    await t.step("DOCX entries: 1,000 pass, 1,001 are refused before mammoth", async () => {
      await Deno.writeFile(`${ws}/ok.docx`, makeDocxWithEntries(1000));
      assertEquals((await extract(ws, { path: "ok.docx" })).text, "Many parts");
      await Deno.writeFile(`${ws}/many.docx`, makeDocxWithEntries(1001));
      assertEquals(await extract(ws, { path: "many.docx" }), {
        code: "document_zip_too_many_entries",
      });
    });

    await t.step("DOCX zip bomb: expanded past 64 MiB is refused", async () => {
      await Deno.writeFile(`${ws}/bomb.docx`, makeDocxWithZeros(70 * MiB));
      assertEquals(await extract(ws, { path: "bomb.docx" }), { code: "document_zip_too_large" });
    });

    await t.step("DOCX ratio past 100 is refused", async () => {
      await Deno.writeFile(`${ws}/ratio.docx`, makeDocxWithZeros(8 * MiB));
      assertEquals(await extract(ws, { path: "ratio.docx" }), { code: "document_zip_ratio" });
    });

    await t.step("16 MiB is read; one byte more is document_too_large", async () => {
      const at = new Uint8Array(DOCUMENT_MAX_BYTES).fill(0x61);
      await Deno.writeFile(`${ws}/big.txt`, at);
      const r = await extract(ws, { path: "big.txt", offset: DOCUMENT_MAX_BYTES - 5 });
      assertEquals([r.text, r.total_chars, r.next_offset], ["aaaaa", DOCUMENT_MAX_BYTES, null]);
      await Deno.writeFile(`${ws}/big.txt`, new Uint8Array([0x61]), { append: true });
      assertEquals(await extract(ws, { path: "big.txt" }), { code: "document_too_large" });
    });

    await t.step("unsupported formats, bad paths and symlinks run nothing", async () => {
      await Deno.writeTextFile(`${ws}/a.exe`, "MZ");
      assertEquals(await extract(ws, { path: "a.exe" }), { code: "document_unsupported_format" });
      assertEquals(await extract(ws, { path: "../etc/passwd.txt" }), { code: "path_invalid" });
      await Deno.symlink("/etc/hostname", `${ws}/link.txt`);
      assertEquals(await extract(ws, { path: "link.txt" }), { code: "path_symlink" });
      assertEquals(await extract(ws, { path: "missing.txt" }), { code: "path_not_found" });
      await Deno.writeFile(`${ws}/latin1.txt`, new Uint8Array([0x61, 0xe9, 0x62]));
      assertEquals(await extract(ws, { path: "latin1.txt" }), { code: "document_malformed" });
    });
  });
});

Deno.test("checkZipLimits() checks the declared bounds at and past each limit", () => {
  assertEquals(checkZipLimits(makeDocxWithEntries(5), { entries: 5 }).ok, true);
  assertEquals(checkZipLimits(makeDocxWithEntries(6), { entries: 5 }), {
    ok: false,
    code: "document_zip_too_many_entries",
  });
  const z = makeDocxWithZeros(100_000);
  const ok = checkZipLimits(z, { ratio: 1000 });
  assert(ok.ok);
  assertEquals(checkZipLimits(z, { expandedBytes: ok.expanded }).ok, false); // ratio binds
  assertEquals(checkZipLimits(z, { expandedBytes: ok.expanded, ratio: 1000 }).ok, true);
  assertEquals(checkZipLimits(z, { expandedBytes: ok.expanded - 1, ratio: 1000 }), {
    ok: false,
    code: "document_zip_too_large",
  });
  const ratio = ok.expanded / ok.compressed;
  assertEquals(checkZipLimits(z, { ratio: Math.ceil(ratio) }).ok, true);
  assertEquals(checkZipLimits(z, { ratio: Math.floor(ratio) }), {
    ok: false,
    code: "document_zip_ratio",
  });
});

Deno.test("checkZipLimits() refuses an entry that inflates past its declared size", () => {
  const z = makeDocx(["x"], { "word/media/a.bin": new Uint8Array(50_000) });
  // Find the member's central record and shrink its declared size to 1,000.
  const v = new DataView(z.buffer);
  for (let i = 0; i < z.length - 46; i++) {
    if (v.getUint32(i, true) !== 0x02014b50) continue;
    if (v.getUint32(i + 24, true) === 50_000) v.setUint32(i + 24, 1000, true);
  }
  assertEquals(checkZipLimits(z), { ok: false, code: "document_malformed" });
  assertEquals(checkZipLimits(new Uint8Array(100)), { ok: false, code: "document_malformed" });
});
