/**
 * Markdown → HTML for completed assistant messages [UI-2], the pure half:
 * marked with a renderer that keeps raw HTML as text, renders images as their
 * alt text (no remote loads), and emits links only for http/https URLs without
 * userinfo, always with rel="noopener noreferrer nofollow". The output still
 * goes through the DOMPurify allowlist in `sanitize.ts` before touching the DOM.
 */
import { Marked, type Tokens } from "marked";

export const LINK_REL = "noopener noreferrer nofollow";

/** Markers marked writes for GFM task items; MarkdownView turns them into disabled checkboxes. */
export const TASK_OPEN = "\u2610 ";
export const TASK_CHECKED = "\u2611 ";

/** Bound on the Markdown source rendered at once (the server commits ≤ 12 KiB). */
export const MARKDOWN_MAX_CHARS = 64 * 1024;

export function escapeHtml(s: string): string {
  return s.replace(
    /[&<>"']/g,
    (c) =>
      c === "&"
        ? "&amp;"
        : c === "<"
        ? "&lt;"
        : c === ">"
        ? "&gt;"
        : c === '"'
        ? "&quot;"
        : "&#39;",
  );
}

/** http/https only, absolute, no username/password, no control characters. */
export function safeHref(href: string): string | null {
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(href)) return null;
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (url.username !== "" || url.password !== "") return null;
  return url.href;
}

function createMarked(): Marked {
  const m = new Marked({ gfm: true, breaks: false, async: false });
  m.use({
    renderer: {
      html(token: Tokens.HTML | Tokens.Tag): string {
        // SECURITY: raw HTML is shown as text, never interpreted.
        return escapeHtml(token.text);
      },
      image(token: Tokens.Image): string {
        // SECURITY: no images, so no remote loads; keep the alt text.
        return escapeHtml(token.text || "image");
      },
      link(this: { parser: { parseInline(t: Tokens.Generic[]): string } }, token: Tokens.Link) {
        const inner = this.parser.parseInline(token.tokens);
        const href = safeHref(token.href);
        if (href === null) return inner;
        const title = token.title ? ` title="${escapeHtml(token.title)}"` : "";
        return `<a href="${
          escapeHtml(href)
        }"${title} rel="${LINK_REL}" target="_blank">${inner}</a>`;
      },
      checkbox({ checked }: Tokens.Checkbox): string {
        return checked ? TASK_CHECKED : TASK_OPEN;
      },
    },
  });
  return m;
}

/** Renders Markdown to an HTML string (not yet sanitized). */
export function markdownToHtml(source: string, marked: Marked = createMarked()): string {
  const text = source.length > MARKDOWN_MAX_CHARS ? source.slice(0, MARKDOWN_MAX_CHARS) : source;
  return marked.parse(text, { async: false }) as string;
}

export { createMarked };

/** The DOMPurify allowlist: structure and emphasis only; no media, forms, styles or scripts. */
export const PURIFY_CONFIG = {
  ALLOWED_TAGS: [
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
  ],
  ALLOWED_ATTR: ["href", "rel", "target", "title", "class", "align", "start"],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOWED_URI_REGEXP: /^https?:\/\//i,
  FORBID_TAGS: ["style", "img", "svg", "math", "iframe", "form", "input", "video", "audio"],
  KEEP_CONTENT: true,
} as const;
