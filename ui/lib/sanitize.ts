/**
 * The browser half of [UI-2]: a DOMPurify instance bound to this window with
 * the PURIFY_CONFIG allowlist and a hook that re-checks every link (http/https
 * without userinfo) and forces rel/target. Needs a DOM; the pure half is in
 * `markdown.ts`.
 */
import DOMPurify from "dompurify";
import { createMarked, LINK_REL, markdownToHtml, PURIFY_CONFIG, safeHref } from "./markdown.ts";

export interface MarkdownRenderer {
  /** Markdown source → sanitized HTML string safe for innerHTML. */
  render(source: string): string;
}

export function createMarkdownRenderer(win: Window & typeof globalThis): MarkdownRenderer {
  const purify = DOMPurify(win);
  purify.addHook("afterSanitizeAttributes", (node: Element) => {
    if (node.tagName === "A") {
      const href = node.getAttribute("href");
      const ok = href === null ? null : safeHref(href);
      if (ok === null) node.removeAttribute("href");
      node.setAttribute("rel", LINK_REL);
      node.setAttribute("target", "_blank");
    }
    if (node.hasAttribute("class")) {
      // Only marked's code language classes survive.
      const cls = node.getAttribute("class") ?? "";
      if (!/^language-[A-Za-z0-9_+-]{1,32}$/.test(cls)) node.removeAttribute("class");
    }
  });
  const marked = createMarked();
  const config = {
    ...PURIFY_CONFIG,
    ALLOWED_TAGS: [...PURIFY_CONFIG.ALLOWED_TAGS],
    ALLOWED_ATTR: [...PURIFY_CONFIG.ALLOWED_ATTR],
    FORBID_TAGS: [...PURIFY_CONFIG.FORBID_TAGS],
    RETURN_TRUSTED_TYPE: false as const,
  };
  return {
    render(source) {
      return purify.sanitize(markdownToHtml(source, marked), config) as string;
    },
  };
}
