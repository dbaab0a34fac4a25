/**
 * [UI-1] narrow screens (390×844): navigation and Run details are overlays
 * that exclude each other, nothing overflows horizontally, and the chat works.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import type { Page } from "../helpers/browser.ts";
import {
  createAgent,
  createConversation,
  ensureNav,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

function inViewport(page: Page, selector: string) {
  return page.$eval(selector, (el) => {
    const r = el.getBoundingClientRect();
    return r.left >= -1 && r.right <= innerWidth + 1 && r.width > 0;
  });
}

/** Overlays slide in (a short CSS transition): wait until it has settled inside the viewport. */
async function settlesInViewport(page: Page, selector: string): Promise<boolean> {
  try {
    await page.waitForFunction(
      (sel) => {
        const el = document.querySelector(sel);
        if (!el) return false;
        const r = el.getBoundingClientRect();
        return r.left >= -1 && r.right <= innerWidth + 1 && r.width > 0;
      },
      selector,
      { timeout: 5_000 },
    );
    return true;
  } catch {
    return false;
  }
}

Deno.test("on a narrow screen nav and run details are mutually exclusive overlays", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env, { width: 390, height: 844 });
    assertEquals(await inViewport(page, "[data-testid=sidebar]"), false, "nav hidden at first");
    // ... and out of the Tab order: keyboard focus never lands on an off-screen control.
    await page.waitForFunction(() =>
      !document.querySelector<HTMLElement>("[data-testid=new-agent]")!.checkVisibility({
        visibilityProperty: true,
      })
    );
    await page.focus("[data-testid=composer-input]");
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press("Shift+Tab");
      const inNav = await page.evaluate(() =>
        document.activeElement?.closest("[data-testid=sidebar]") !== null
      );
      assertEquals(inNav, false, `Shift+Tab ${i + 1} reached the hidden navigation`);
    }
    await createAgent(page, "Pocket");
    await createConversation(page);
    const table = `| name | kind |\n|---|---|\n| ${"x".repeat(120)} | file |\n`;
    env.ollama.enqueue(text(`Small screen, **fine** answer.\n\n${table}`, { frameDelayMs: 5 }));
    await send(page, "hello from a phone");
    await waitForCompletedTurn(page);
    assertEquals(await page.textContent("[data-testid=assistant-markdown] strong"), "fine");
    assert(
      await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth),
      "no horizontal overflow",
    );
    // The top bar's view buttons shrink to icons with their names kept as labels, so the
    // Conversation's title keeps room (it was squeezed to one letter and an ellipsis).
    const bar = await page.evaluate(() => {
      const title = document.querySelector("[data-testid=conversation-title]")!;
      const names = ["open-models", "open-extensions", "open-tasks"].map((id) =>
        document.querySelector(`[data-testid=${id}]`)?.getAttribute("aria-label") ?? null
      );
      return { titleWidth: title.getBoundingClientRect().width, names };
    });
    assert(bar.titleWidth >= 120, `the title keeps room: ${bar.titleWidth}px`);
    assertEquals(bar.names, ["Models", "Extensions", "Tasks"]);
    // A wide table scrolls inside the answer; its short headings are never broken letter by letter.
    const heads = await page.$$eval(
      "[data-testid=assistant-markdown] th",
      (ths) =>
        ths.map((th) => {
          const lh = parseFloat(getComputedStyle(th).lineHeight);
          const pad = parseFloat(getComputedStyle(th).paddingTop) * 2;
          return { text: th.textContent, lines: Math.round((th.clientHeight - pad) / lh) };
        }),
    );
    assertEquals(heads, [{ text: "name", lines: 1 }, { text: "kind", lines: 1 }]);

    await ensureNav(page);
    assertEquals(await settlesInViewport(page, "[data-testid=sidebar]"), true);
    assertEquals(await page.$("[data-testid=run-details]"), null);
    await page.click(".nav-scrim", { position: { x: 370, y: 400 } });
    await page.waitForSelector(".workspace:not(.nav-open)");

    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=run-details]");
    assertEquals(await settlesInViewport(page, "[data-testid=run-details]"), true);
    assertEquals(await page.$(".workspace.nav-open"), null, "details closed the nav");
    await page.waitForSelector("[data-testid=timeline-event]");
    await page.click("[data-testid=close-details]");
    await page.waitForSelector("[data-testid=run-details]", { state: "detached" });

    // Opening the nav from the top bar while details are open would close them; the details
    // overlay covers the whole width, so the nav button is only reachable once they are closed.
    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=run-details]");
    assertEquals(await settlesInViewport(page, "[data-testid=run-details]"), true);
    assertEquals(
      await page.evaluate(() => {
        const b = document.querySelector("[data-testid=open-nav]")!.getBoundingClientRect();
        const top = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
        return top?.closest("[data-testid=run-details]") !== null;
      }),
      true,
      "the details overlay covers the nav button",
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
