/**
 * Accessibility basics of the workspace, checked on the live DOM with an
 * answer, the command help and the Run details open: every button has a type
 * and an accessible name, every form control a label, and keyboard focus is
 * visible.
 */
import { assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

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

    // The timeline is one Tab stop; arrows, Home and End move the selection and the focus.
    const kinds = await page.$$eval(
      "[data-testid=timeline-event]",
      (els) => els.map((e) => e.getAttribute("data-kind")),
    );
    assertEquals(
      await page.$$eval("[data-testid=timeline-event][tabindex='0']", (els) => els.length),
      1,
    );
    await page.focus("[data-testid=timeline-event]");
    const focusedKind = () =>
      page.waitForFunction(
        () => {
          const el = document.activeElement;
          return el?.getAttribute("aria-selected") === "true" && el.getAttribute("data-kind");
        },
        undefined,
        { timeout: 10_000 },
      ).then((h) => h.jsonValue());
    await page.keyboard.press("ArrowDown");
    assertEquals(await focusedKind(), kinds[0]);
    await page.keyboard.press("ArrowDown");
    await page.waitForSelector(`[data-testid=timeline-event]:nth-child(3)[aria-selected=true]`);
    assertEquals(await focusedKind(), kinds[1]);
    await page.keyboard.press("End");
    await page.waitForSelector(
      `[data-testid=timeline-event]:nth-child(${kinds.length + 1})[aria-selected=true]`,
    );
    assertEquals(await focusedKind(), kinds.at(-1));
    await page.keyboard.press("Home");
    await page.waitForSelector(`[data-testid=timeline-event]:nth-child(2)[aria-selected=true]`);
    assertEquals(await focusedKind(), kinds[0]);

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

Deno.test("keyboard focus rings inside scrolling lists are drawn where they are not clipped", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Rings");
    await createConversation(page);
    env.ollama.enqueue(text("Fine."));
    await send(page, "hello");
    await waitForCompletedTurn(page);
    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=timeline-event]");
    await page.fill("[data-testid=composer-input]", "/");
    await page.waitForSelector("[data-testid=command-help] .command-item");

    const clipped: string[] = [];
    for (
      const sel of [
        "[data-testid=conversation-item]",
        "[data-testid=conversation-menu]",
        "[data-testid=timeline-event]",
        "[data-testid=command-help] .command-item",
      ]
    ) {
      await page.keyboard.press("Shift"); // a key press makes the next focus :focus-visible
      await page.focus(sel);
      const r = await page.evaluate((s) => {
        const el = document.activeElement as HTMLElement;
        if (!el.matches(":focus-visible")) return `${s}: not focus-visible`;
        const cs = getComputedStyle(el);
        const ring = parseFloat(cs.outlineOffset) + parseFloat(cs.outlineWidth);
        if (cs.outlineStyle === "none" || parseFloat(cs.outlineWidth) === 0) return `${s}: no ring`;
        const box = el.getBoundingClientRect();
        for (let a = el.parentElement; a; a = a.parentElement) {
          const o = getComputedStyle(a);
          if (o.overflowX === "visible" && o.overflowY === "visible") continue;
          const c = a.getBoundingClientRect();
          const out = box.left - ring < c.left - 0.5 || box.right + ring > c.right + 0.5 ||
            box.top - ring < c.top - 0.5 || box.bottom + ring > c.bottom + 0.5;
          return out ? `${s}: ring clipped by .${a.className.split(" ")[0]}` : null;
        }
        return null;
      }, sel);
      if (r) clipped.push(r);
    }
    assertEquals(clipped, []);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
