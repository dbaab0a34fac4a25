/**
 * [UI-6] text colours of both themes meet WCAG AA (4.5:1) against every
 * surface they are drawn on. Reads the real theme variables from
 * `ui/styles/base.css`, so changing a colour that breaks contrast fails here.
 */
import { assert, assertEquals } from "../helpers/assert.ts";

const CSS = Deno.readTextFileSync(new URL("../../ui/styles/base.css", import.meta.url));
const AA = 4.5;

/** `--name: #rrggbb;` declarations of one block of base.css. */
function vars(block: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of block.matchAll(/--([a-z-]+):\s*(#[0-9a-f]{6});/gi)) out.set(m[1], m[2]);
  return out;
}

function theme(which: "light" | "dark"): Map<string, string> {
  const dark = CSS.indexOf("@media (prefers-color-scheme: dark)");
  assert(dark > 0, "base.css has a dark theme block");
  const light = vars(CSS.slice(0, dark));
  if (which === "light") return light;
  const end = CSS.indexOf("\n}\n", dark);
  return new Map([...light, ...vars(CSS.slice(dark, end))]);
}

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

const TEXT = [
  "fg",
  "fg-soft",
  "muted",
  "accent",
  "danger",
  "warn",
  "ok",
  "lane-user",
  "lane-harness",
  "lane-llm",
  "lane-tool",
];
const SURFACES = ["bg", "bg-elev", "bg-sunk", "accent-soft", "warn-soft", "danger-soft"];
/** Foreground/background pairs used together (buttons, bubbles, code blocks). */
const PAIRS = [["accent-fg", "accent"], ["user-fg", "user-bubble"], ["code-fg", "code-bg"]];

Deno.test("the contrast formula matches WCAG's reference values", () => {
  assertEquals(contrast("#000000", "#ffffff").toFixed(1), "21.0");
  assertEquals(contrast("#777777", "#ffffff").toFixed(2), "4.48");
});

for (const which of ["light", "dark"] as const) {
  Deno.test(`every ${which}-theme text colour reads at WCAG AA on every surface`, () => {
    const t = theme(which);
    const fails: string[] = [];
    for (const fg of TEXT) {
      for (const bg of SURFACES) {
        const r = contrast(t.get(fg)!, t.get(bg)!);
        if (!(r >= AA)) fails.push(`--${fg} on --${bg}: ${r.toFixed(2)}`);
      }
    }
    for (const [fg, bg] of PAIRS) {
      const r = contrast(t.get(fg)!, t.get(bg)!);
      if (!(r >= AA)) fails.push(`--${fg} on --${bg}: ${r.toFixed(2)}`);
    }
    assertEquals(fails, []);
  });
}
