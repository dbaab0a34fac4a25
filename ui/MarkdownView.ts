/**
 * Renders assistant Markdown [UI-2, revised by #18]: sanitized Markdown (see
 * lib/sanitize.ts) set as innerHTML, then — through DOM APIs, never markup —
 * a copy button on every code block and a disabled checkbox for every GFM
 * task item (marked emits a ☐/☑ marker there). `LiveMarkdown` renders
 * streaming text through the same pipeline, at most once per animation frame.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { TASK_CHECKED, TASK_OPEN } from "./lib/markdown.ts";
import type { MarkdownRenderer } from "./lib/sanitize.ts";

export interface MarkdownViewProps {
  source: string;
  renderer: MarkdownRenderer;
  /** @default "assistant-markdown" (the committed answer) */
  testId?: string;
  class?: string;
}

/** Turns the task markers marked wrote at the start of list items into disabled checkboxes. */
function addTaskCheckboxes(root: HTMLElement) {
  for (const li of root.querySelectorAll("li")) {
    const first = li.firstChild?.nodeType === Node.TEXT_NODE
      ? li.firstChild
      : li.firstElementChild?.tagName === "P"
      ? li.firstElementChild.firstChild
      : null;
    const text = first?.nodeType === Node.TEXT_NODE ? first.textContent ?? "" : "";
    const mark = text.startsWith(TASK_CHECKED) ? true : text.startsWith(TASK_OPEN) ? false : null;
    if (mark === null || !first) continue;
    first.textContent = text.slice(2);
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = mark;
    box.disabled = true;
    box.className = "task-box";
    box.setAttribute("aria-label", mark ? "done" : "not done");
    first.parentNode!.insertBefore(box, first);
    li.classList.add("task-item");
  }
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

export function MarkdownView(p: MarkdownViewProps) {
  const ref = useRef<HTMLDivElement>(null);
  const safe = useMemo(() => p.renderer.render(p.source), [p.source, p.renderer]);
  useEffect(() => {
    if (!ref.current) return;
    addCopyButtons(ref.current);
    addTaskCheckboxes(ref.current);
  }, [safe]);
  return html`
    <div ref=${ref} class=${`markdown ${p.class ?? ""}`} data-testid=${p.testId ??
      "assistant-markdown"}
      dangerouslySetInnerHTML=${{ __html: safe }} />
  `;
}

/**
 * Streaming text as Markdown: the newest source is rendered at most once per animation frame
 * (a burst of deltas costs one parse), through the same marked + DOMPurify pipeline.
 */
export function LiveMarkdown(
  { source, renderer }: { source: string; renderer: MarkdownRenderer },
) {
  const [shown, setShown] = useState(source);
  const latest = useRef(source);
  const frame = useRef<number | null>(null);
  useEffect(() => {
    latest.current = source;
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      setShown(latest.current);
    });
  }, [source]);
  useEffect(() => () => {
    if (frame.current !== null) cancelAnimationFrame(frame.current);
  }, []);
  return html`
    <${MarkdownView} source=${shown} renderer=${renderer} testId="live-markdown"
      class="live-md" />
  `;
}
