/** [#18] The file viewer's highlighter: tokens by extension, lossless, plain for unknown types. */
import { assertEquals } from "../helpers/assert.ts";
import { highlight, languageOf } from "../../ui/lib/highlight.ts";

Deno.test("TypeScript tokens: keyword, string, number, comment; the text is kept exactly", () => {
  const src = 'const a = "x<y>"; // note\nreturn 42;\n';
  const t = highlight(src, languageOf("main.ts"));
  assertEquals(t.map((x) => x.text).join(""), src);
  assertEquals(t.filter((x) => x.kind !== "plain").map((x) => [x.kind, x.text]), [
    ["keyword", "const"],
    ["string", '"x<y>"'],
    ["comment", "// note"],
    ["keyword", "return"],
    ["number", "42"],
  ]);
});

Deno.test("unknown extensions are plain text; Markdown headings stand out", () => {
  assertEquals(highlight("a<b>", languageOf("notes.xyz")), [{ kind: "plain", text: "a<b>" }]);
  assertEquals(highlight("# T\nbody\n", languageOf("a.md")).map((x) => x.kind), [
    "heading",
    "plain",
  ]);
});
