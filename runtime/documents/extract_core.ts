/**
 * Text extraction [LC-4], as it runs INSIDE the runner (sandbox/runner_entry.ts,
 * job kind `extract`): bytes in, one window of text out.
 *
 *   const r = await extractDocument(bytes, "pdf");      // { ok, text, pages } | { ok: false, code }
 *   const w = textWindow(r.text, offset, limit);        // { text, total_chars, next_offset }
 *
 * What this file enforces:
 *  - the format is the file's extension AND its content: a `.pdf` must start
 *    with `%PDF-` (within its first 1 KiB), a `.docx` must be a zip; text and
 *    Markdown must be valid UTF-8 (`document_malformed` otherwise);
 *  - PDF: pdf.js through `unpdf`, no font loading; an encrypted PDF
 *    is `document_encrypted`, a damaged one `document_malformed`;
 *  - DOCX: the zip bounds (zip_limits.ts) pass BEFORE mammoth opens it; then
 *    mammoth → HTML (images dropped) → Markdown;
 *  - HTML → Markdown with turndown over domino (a DOM parser that never runs
 *    scripts); `script`, `style`, `noscript`, `template`, `iframe`, `object`,
 *    `embed`, `svg`, `math`, `canvas`, form controls and `head` are removed
 *    with their content, images become their alt text, and links keep only
 *    http(s)/mailto/relative targets (others become plain text);
 *  - an allocation failure inside a library is `document_resource_limit`;
 *    the runner's RLIMIT_DATA and the server's wall timer bound the rest.
 *  - windows count Unicode code points (never half a surrogate pair).
 *
 * The libraries are imported on first use, so the server never loads them.
 */
import { checkZipLimits } from "./zip_limits.ts";

export type DocumentFormat = "pdf" | "docx" | "html" | "markdown" | "text";

export type ExtractCode =
  | "document_unsupported_format"
  | "document_encrypted"
  | "document_malformed"
  | "document_zip_too_many_entries"
  | "document_zip_too_large"
  | "document_zip_ratio"
  | "document_resource_limit";

export type Extracted =
  | { ok: true; text: string; pages: number | null }
  | { ok: false; code: ExtractCode };

const EXTENSIONS: Record<string, DocumentFormat> = {
  pdf: "pdf",
  docx: "docx",
  html: "html",
  htm: "html",
  xhtml: "html",
  md: "markdown",
  markdown: "markdown",
  txt: "text",
  text: "text",
  csv: "text",
  log: "text",
};

/** The format a workspace path names by its extension (case-insensitive), or null. */
export function formatOfPath(path: string): DocumentFormat | null {
  const leaf = path.slice(path.lastIndexOf("/") + 1);
  const dot = leaf.lastIndexOf(".");
  if (dot <= 0) return null;
  return EXTENSIONS[leaf.slice(dot + 1).toLowerCase()] ?? null;
}

const fail = (code: ExtractCode): Extracted => ({ ok: false, code });

/** Extracts the text of `bytes` read as `format`; see the file header. */
export async function extractDocument(
  bytes: Uint8Array,
  format: DocumentFormat,
): Promise<Extracted> {
  try {
    switch (format) {
      case "pdf":
        return await extractPdf(bytes);
      case "docx":
        return await extractDocx(bytes);
      case "html": {
        const text = decodeUtf8(bytes);
        return text === null
          ? fail("document_malformed")
          : { ok: true, text: await htmlToMarkdown(text), pages: null };
      }
      case "markdown":
      case "text": {
        const text = decodeUtf8(bytes);
        return text === null ? fail("document_malformed") : { ok: true, text, pages: null };
      }
    }
  } catch (err) {
    if (
      err instanceof RangeError &&
      /alloc|memory|Invalid (array|typed array|string) length/i.test(err.message)
    ) {
      return fail("document_resource_limit");
    }
    throw err;
  }
}

function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    // A leading BOM is not text.
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
}

async function extractPdf(bytes: Uint8Array): Promise<Extracted> {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 1024));
  if (!head.includes("%PDF-")) return fail("document_malformed");
  // deno-lint-ignore no-explicit-any
  const { getDocumentProxy, extractText } = await import("unpdf") as any;
  // deno-lint-ignore no-explicit-any
  let doc: any;
  try {
    // SECURITY: no font loading and no system fonts (this pdf.js generates no code from fonts).
    doc = await getDocumentProxy(bytes, {
      disableFontFace: true,
      useSystemFonts: false,
      stopAtErrors: false,
      verbosity: 0,
    });
  } catch (err) {
    return fail(pdfErrorCode(err));
  }
  try {
    const r = await extractText(doc, { mergePages: false });
    return { ok: true, text: (r.text as string[]).join("\n\n"), pages: r.totalPages };
  } catch (err) {
    return fail(pdfErrorCode(err));
  }
}

function pdfErrorCode(err: unknown): ExtractCode {
  const name = (err as { name?: string })?.name ?? "";
  if (name === "PasswordException") return "document_encrypted";
  if (err instanceof RangeError) return "document_resource_limit";
  return "document_malformed";
}

/**
 * mammoth assigns `__proto__`, which Deno disables (its accessor refuses
 * to set); this process exists only
 * for this one extraction, so the standard accessor is restored for it.
 */
function restoreProtoAccessor(): void {
  Object.defineProperty(Object.prototype, "__proto__", {
    get(this: object) {
      return Object.getPrototypeOf(this);
    },
    set(this: object, proto: object | null) {
      Object.setPrototypeOf(this, proto);
    },
    configurable: true,
  });
}

async function extractDocx(bytes: Uint8Array): Promise<Extracted> {
  if (bytes.length < 4 || bytes[0] !== 0x50 || bytes[1] !== 0x4b) return fail("document_malformed");
  const z = checkZipLimits(bytes);
  if (!z.ok) return fail(z.code);
  restoreProtoAccessor();
  // deno-lint-ignore no-explicit-any
  const { default: mammoth } = await import("mammoth") as any;
  let html: string;
  try {
    const r = await mammoth.convertToHtml(
      { buffer: bytes },
      // Images are dropped (never inlined as data URIs).
      { convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: "" })) },
    );
    html = r.value;
  } catch (err) {
    if (err instanceof RangeError) return fail("document_resource_limit");
    return fail("document_malformed");
  }
  return { ok: true, text: await htmlToMarkdown(html), pages: null };
}

const REMOVED = [
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "frame",
  "frameset",
  "object",
  "embed",
  "applet",
  "svg",
  "math",
  "canvas",
  "head",
  "title",
  "meta",
  "link",
  "base",
  "form",
  "input",
  "button",
  "select",
  "textarea",
  "audio",
  "video",
  "source",
  "track",
];

/** HTML → Markdown; see the file header for what is removed. */
export async function htmlToMarkdown(html: string): Promise<string> {
  // deno-lint-ignore no-explicit-any
  const { default: TurndownService } = await import("turndown") as any;
  const td = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced" });
  td.remove(REMOVED);
  td.addRule("image-alt", {
    filter: "img",
    replacement: (_content: string, node: unknown) => {
      const alt = ((node as { getAttribute(n: string): string | null }).getAttribute("alt") ?? "")
        .trim();
      return alt === "" ? "" : `[image: ${alt}]`;
    },
  });
  td.addRule("safe-links", {
    filter: (node: unknown) => (node as { nodeName: string }).nodeName === "A",
    replacement: (content: string, node: unknown) => {
      const href = ((node as { getAttribute(n: string): string | null }).getAttribute("href") ?? "")
        .trim();
      const safe = /^(https?:|mailto:)/i.test(href) ||
        (href !== "" && !/^[a-z][a-z0-9+.-]*:/i.test(href));
      return safe && content.trim() !== ""
        ? `[${content}](${href.replace(/[()\s]/g, encodeURIComponent)})`
        : content;
    },
  });
  return td.turndown(html).trim();
}

/** One window of `text`: `limit` code points from code point `offset`. */
export function textWindow(
  text: string,
  offset: number,
  limit: number,
): { text: string; total_chars: number; next_offset: number | null } {
  let cp = 0;
  let startUnit = -1;
  let endUnit = -1;
  let unit = 0;
  for (const ch of text) {
    if (cp === offset) startUnit = unit;
    if (cp === offset + limit) endUnit = unit;
    unit += ch.length;
    cp++;
  }
  const total = cp;
  if (startUnit < 0) return { text: "", total_chars: total, next_offset: null };
  const end = endUnit < 0 ? text.length : endUnit;
  const next = offset + limit < total ? offset + limit : null;
  return { text: text.slice(startUnit, end), total_chars: total, next_offset: next };
}
