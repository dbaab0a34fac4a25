/**
 * Accessibility basics of the workspace, checked on the live DOM with an
 * answer, the command help and the Run details open: every button has a type
 * and an accessible name, every form control a label, and keyboard focus is
 * visible.
 */
import { assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { createAgent, createConversation, openLoggedIn, send, startUiEnv } from "./_ui_support.ts";

Deno.test("buttons have types and names, controls have labels, and focus is visible", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Accessible");
    await createConversation(page);
    env.ollama.enqueue(text("Some `code`:\n\n```sh\necho hi\n```\n", { frameDelayMs: 1 }));
    await send(page, "hi");
    await page.waitForSelector("[data-testid=assistant-markdown] .code-copy");
    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=timeline-event]");
    await page.fill("[data-testid=composer-input]", "/");
    await page.waitForSelector("[data-testid=command-help]");

    const problems = await page.evaluate(() => {
      const out: string[] = [];
      for (const b of document.querySelectorAll("button")) {
        const name = (b.getAttribute("aria-label") ?? b.textContent ?? "").trim();
        if (!b.hasAttribute("type")) out.push(`button without type: ${b.outerHTML.slice(0, 80)}`);
        if (name === "") out.push(`button without a name: ${b.outerHTML.slice(0, 80)}`);
      }
      for (const c of document.querySelectorAll("input, select, textarea")) {
        const labelled = c.hasAttribute("aria-label") || c.closest("label") !== null ||
          (c.id !== "" && document.querySelector(`label[for="${c.id}"]`) !== null);
        if (!labelled) out.push(`control without a label: ${c.outerHTML.slice(0, 80)}`);
      }
      return out;
    });
    assertEquals(problems, []);

    // Keyboard focus shows an outline.
    await page.focus("[data-testid=toggle-details]");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Tab");
    const outline = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const cs = getComputedStyle(el);
      return { style: cs.outlineStyle, width: cs.outlineWidth };
    });
    assertEquals(outline.style, "solid");
    assertEquals(outline.width !== "0px", true);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
