/** Visible escaping of names [OP-1]: one table, every class, and a sweep of all code points. */
import { toAgentView } from "../../runtime/agents/service.ts";
import { toConversationView } from "../../runtime/conversations/service.ts";
import { escapeName, isHiddenCodePoint } from "../../runtime/display_name.ts";
import { assert, assertEquals } from "../helpers/assert.ts";

const TABLE: [string, string, string][] = [
  ["a clean name stays as it is", "src/main.ts", "src/main.ts"],
  ["non-Latin letters and emoji stay", "é/日本/👍🏽.md", "é/日本/👍🏽.md"],
  ["a backslash stays", "a\\u{1B}", "a\\u{1B}"],
  ["ZWJ inside an emoji sequence stays", "👩\u200D💻", "👩\u200D💻"],
  ["NUL", "a\u0000b", "a\\u{0}b"],
  ["ESC of a terminal sequence", "x\u001b[31mred", "x\\u{1B}[31mred"],
  ["newline and carriage return", "a\nb\rc", "a\\u{A}b\\u{D}c"],
  ["tab", "a\tb", "a\\u{9}b"],
  ["DEL", "a\u007fb", "a\\u{7F}b"],
  ["C1 controls (NEL, CSI)", "a\u0085b\u009bc", "a\\u{85}b\\u{9B}c"],
  ["right-to-left override", "invoice\u202Etxt.exe", "invoice\\u{202E}txt.exe"],
  [
    "every embedding and override",
    "\u202A\u202B\u202C\u202D",
    "\\u{202A}\\u{202B}\\u{202C}\\u{202D}",
  ],
  ["bidi isolates", "\u2066\u2067\u2068\u2069", "\\u{2066}\\u{2067}\\u{2068}\\u{2069}"],
  ["LRM, RLM and the Arabic letter mark", "\u200E\u200F\u061C", "\\u{200E}\\u{200F}\\u{61C}"],
  ["line and paragraph separators", "a\u2028b\u2029", "a\\u{2028}b\\u{2029}"],
  ["zero-width space, word joiner, BOM", "a\u200Bb\u2060c\uFEFF", "a\\u{200B}b\\u{2060}c\\u{FEFF}"],
  ["interlinear annotation", "\uFFF9x\uFFFB", "\\u{FFF9}x\\u{FFFB}"],
  ["a lone surrogate", "a\uD800b", "a\\u{D800}b"],
  ["a surrogate pair stays whole", "a\uD83D\uDE00", "a😀"],
];

for (const [name, input, want] of TABLE) {
  Deno.test(`escapeName: ${name}`, () => assertEquals(escapeName(input), want));
}

Deno.test("no escaped name contains a hidden character, and every hidden one is escaped", () => {
  for (let c = 0; c < 0x110000; c++) {
    const s = String.fromCharCode(0x61) + String.fromCodePoint(c) + "b";
    const out = escapeName(s);
    assertEquals(out !== s, isHiddenCodePoint(c), c.toString(16));
    for (const ch of out) assert(!isHiddenCodePoint(ch.codePointAt(0)!), c.toString(16));
  }
});

Deno.test("Agent names and Conversation titles leave the server escaped", () => {
  // U+2028 passes the name/title input rules (it is not Cc/Cf/Cs); a restored or edited
  // database can hold anything.
  const agent = toAgentView({
    id: "00000000-0000-4000-8000-000000000001",
    name: "ops\u2028\u202Egnp.exe",
    state: "active",
    generation: 1,
    pending_generation: null,
    is_system: 0,
    created_at: 0,
    updated_at: 0,
  });
  assertEquals(agent.name, "ops\\u{2028}\\u{202E}gnp.exe");
  const conv = toConversationView({
    id: "00000000-0000-4000-8000-000000000002",
    title: "plan\u001b]0;pwned\u0007",
    revision: 0,
    parent_id: null,
    head_turn_id: null,
    branched_from_turn_id: null,
    created_at: 0,
    updated_at: 0,
  });
  assertEquals(conv.title, "plan\\u{1B}]0;pwned\\u{7}");
});
