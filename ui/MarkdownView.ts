/**
 * Renders a completed assistant message [UI-2]: sanitized Markdown (see
 * lib/sanitize.ts) set as innerHTML, then a copy button added to every code
 * block through DOM APIs (no inline handlers).
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef } from "preact/hooks";
import type { MarkdownRenderer } from "./lib/sanitize.ts";

export interface MarkdownViewProps {
  source: string;
  renderer: MarkdownRenderer;
}

function addCopyButtons(root: HTMLElement) {
  for (const pre of root.querySelectorAll("pre")) {
    if (pre.parentElement?.classList.contains("code-block")) continue;
    const wrap = document.createElement("div");
    wrap.className = "code-block";
    const lang = pre.querySelector("code")?.className.replace(/^language-/, "") ?? "";
    const bar = document.createElement("div");
    bar.className = "code-bar";
    const label = document.createElement("span");
    label.className = "code-lang";
    label.textContent = lang || "code";
    const btn = document.createElement("button");
    btn.type = "button";
    btn.className = "code-copy";
    btn.textContent = "Copy";
    btn.setAttribute("aria-label", "Copy code to clipboard");
    btn.addEventListener("click", () => {
      const text = pre.textContent ?? "";
      navigator.clipboard?.writeText(text).then(
        () => (btn.textContent = "Copied"),
        () => (btn.textContent = "Copy failed"),
      );
      setTimeout(() => (btn.textContent = "Copy"), 1500);
    });
    bar.append(label, btn);
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
}

export function MarkdownView({ source, renderer }: MarkdownViewProps) {
  const ref = useRef<HTMLDivElement>(null);
  const safe = useMemo(() => renderer.render(source), [source, renderer]);
  useEffect(() => {
    if (ref.current) addCopyButtons(ref.current);
  }, [safe]);
  return html`
    <div ref=${ref} class="markdown" data-testid="assistant-markdown"
      dangerouslySetInnerHTML=${{ __html: safe }} />
  `;
}
