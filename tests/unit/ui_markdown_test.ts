/**
 * [UI-2] the pure half of assistant Markdown rendering: raw HTML stays text,
 * images never load, links only for http/https without userinfo and always
 * with rel="noopener noreferrer nofollow". Hostile inputs as a case table.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import {
  escapeHtml,
  LINK_REL,
  MARKDOWN_MAX_CHARS,
  markdownToHtml,
  PURIFY_CONFIG,
  safeHref,
} from "../../ui/lib/markdown.ts";

Deno.test("safeHref accepts only absolute http/https URLs without userinfo", () => {
  const cases: [string, string | null][] = [
    ["https://example.org/a?b=1", "https://example.org/a?b=1"],
    ["http://example.org", "http://example.org/"],
    ["javascript:alert(1)", null],
    ["JaVaScRiPt:alert(1)", null],
    ["data:text/html,<script>", null],
    ["vbscript:x", null],
    ["file:///etc/passwd", null],
    ["//evil.example/x", null],
    ["/relative", null],
    ["https://user:pw@example.org/", null],
    ["https://user@example.org/", null],
    ["https://exa mple.org/", null],
    ["java\tscript:alert(1)", null],
    ["\u0000https://x.org", null],
  ];
  for (const [input, want] of cases) assertEquals(safeHref(input), want, input);
});

Deno.test("markdownToHtml keeps raw HTML as text", () => {
  const html = markdownToHtml(
    'Hi <script>alert(1)</script> and <img src=x onerror="alert(2)">\n\n<div onclick="x()">block</div>',
  );
  assert(!html.includes("<script"), html);
  assert(!html.includes("<img"), html);
  assert(!html.includes("<div"), html);
  assert(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"), html);
  assert(html.includes("&lt;img src=x onerror=&quot;alert(2)&quot;&gt;"), html);
});

Deno.test("markdownToHtml renders images as their alt text only", () => {
  const html = markdownToHtml("![tracking pixel](https://evil.example/p.png) after");
  assertEquals(html.trim(), "<p>tracking pixel after</p>");
  assert(!markdownToHtml("![x](https://e/x.png)").includes("src="));
});

Deno.test("markdownToHtml emits safe links with the fixed rel and drops unsafe ones", () => {
  const ok = markdownToHtml("[docs](https://example.org/docs)");
  assert(
    ok.includes(`<a href="https://example.org/docs" rel="${LINK_REL}" target="_blank">docs</a>`),
    ok,
  );
  for (
    const bad of [
      "[x](javascript:alert(1))",
      "[x](https://u:p@example.org/)",
      "[x](data:text/html;base64,PHNjcmlwdD4=)",
      "<javascript:alert(1)>",
    ]
  ) {
    const html = markdownToHtml(bad);
    assert(!html.includes("<a "), `${bad} → ${html}`);
  }
  const auto = markdownToHtml("see https://example.org/x");
  assert(auto.includes(`rel="${LINK_REL}"`), auto);
});

Deno.test("markdownToHtml keeps structure: emphasis, lists, code blocks with a language class", () => {
  const html = markdownToHtml("**bold** _it_\n\n- a\n- b\n\n```ts\nconst x = 1 < 2;\n```\n");
  assert(html.includes("<strong>bold</strong>"));
  assert(html.includes("<em>it</em>"));
  assert(html.includes("<li>a</li>"));
  assert(html.includes('<code class="language-ts">const x = 1 &lt; 2;'), html);
});

Deno.test("markdownToHtml bounds the source it renders", () => {
  const html = markdownToHtml("a".repeat(MARKDOWN_MAX_CHARS + 500));
  assertEquals((html.match(/a/g) ?? []).length, MARKDOWN_MAX_CHARS);
});

Deno.test("the DOMPurify allowlist has no media, script, style or form tags", () => {
  for (const t of ["img", "script", "style", "iframe", "svg", "form", "input", "video", "audio"]) {
    assert(!(PURIFY_CONFIG.ALLOWED_TAGS as readonly string[]).includes(t), t);
  }
  for (const a of ["src", "style", "onerror", "srcset", "action"]) {
    assert(!(PURIFY_CONFIG.ALLOWED_ATTR as readonly string[]).includes(a), a);
  }
  assert(!PURIFY_CONFIG.ALLOWED_URI_REGEXP.test("javascript:alert(1)"));
  assertEquals(
    escapeHtml(`<a href="x">'&'</a>`),
    "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;",
  );
});
