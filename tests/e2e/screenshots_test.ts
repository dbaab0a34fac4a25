/**
 * Screenshots of the main screens at 1440×900 and 390×844, written to
 * test-artifacts/screenshots/ (git-ignored) by the test command, for people
 * to look at. Each capture also asserts the screen rendered without page or
 * CSP errors.
 */
import { assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import type { Page } from "../helpers/browser.ts";
import { inBandError } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  ensureNav,
  openLoggedIn,
  send,
  settled,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const VIEWPORTS = [
  { name: "desktop", width: 1440, height: 900 },
  { name: "mobile", width: 390, height: 844 },
];

async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${screenshotDir()}${name}.png` });
}

/** Switches the emulated colour scheme and lets the colour transitions settle. */
async function scheme(page: Page, colorScheme: "light" | "dark") {
  await page.emulateMedia({ colorScheme });
  await settled(page);
}

for (const vp of VIEWPORTS) {
  Deno.test(`screenshots of the main screens at ${vp.width}x${vp.height}`, async () => {
    const env = await startUiEnv();
    try {
      const ctx = await env.browser.newContext({ viewport: vp });
      const login = await ctx.newPage();
      await login.goto(`${env.server.url}/`);
      await login.waitForSelector("[data-testid=login-page]");
      await shot(login, `${vp.name}-01-login`);
      await ctx.close();

      const { page, errors } = await openLoggedIn(env, vp);
      await shot(page, `${vp.name}-02-workspace-empty`);
      await page.fill("[data-testid=composer-input]", "Plan a three-day trip to Lisbon");
      await shot(page, `${vp.name}-02-empty-composer`);
      await scheme(page, "dark");
      await shot(page, `${vp.name}-02-empty-composer-dark`);
      await scheme(page, "light");
      await page.fill("[data-testid=composer-input]", "/status");
      await page.press("[data-testid=composer-input]", "Enter");
      await page.waitForSelector("[data-testid=error-toast]");
      await shot(page, `${vp.name}-02-error-toast`);
      await page.click("[data-testid=error-toast] button");
      await page.fill("[data-testid=composer-input]", "");
      await createAgent(page, "Research helper");
      await createConversation(page);
      await shot(page, `${vp.name}-03-new-conversation`);
      await send(page, "Show me what you can do, with some **Markdown**.");
      await waitForCompletedTurn(page);
      await page.waitForSelector("[data-testid=assistant-markdown]");
      await shot(page, `${vp.name}-04-answer`);
      await page.fill("[data-testid=composer-input]", "/");
      await shot(page, `${vp.name}-05-command-help`);
      await page.fill("[data-testid=composer-input]", "");
      if (vp.name === "mobile") {
        await ensureNav(page);
        await shot(page, `${vp.name}-06-nav-overlay`);
        await page.click(".nav-scrim", { position: { x: 370, y: 400 } });
      }
      if (vp.name === "desktop") {
        const item = await page.$("[data-testid=conversation-item]");
        await item!.hover();
        await page.click("[data-testid=conversation-menu]");
        await page.waitForSelector("[data-testid=conversation-popover]:popover-open");
        await shot(page, `${vp.name}-06-conversation-menu`);
        await page.keyboard.press("Escape");
        await scheme(page, "dark");
        await shot(page, `${vp.name}-04-answer-dark`);
        await scheme(page, "light");
      }
      await page.click("[data-testid=toggle-details]");
      await page.waitForSelector("[data-testid=run-details]");
      const first = await page.$("[data-testid=timeline-event]");
      if (first) await first.click();
      await shot(page, `${vp.name}-07-run-details`);
      await page.click("[data-testid=close-details]");
      await page.waitForSelector("[data-testid=run-details]", { state: "detached" });

      env.ollama.enqueue(inBandError());
      await send(page, "This one fails on purpose.");
      await page.waitForSelector(
        "[data-testid=turn][data-state=failed] [data-testid=turn-terminal]",
        {
          timeout: 20_000,
        },
      );
      await shot(page, `${vp.name}-08-failed-turn`);
      await scheme(page, "dark");
      await shot(page, `${vp.name}-08-failed-turn-dark`);
      await scheme(page, "light");
      assertEquals(errors.filter((e) => /Content Security Policy|pageerror/.test(e)), []);
    } finally {
      await env.close();
    }
  });
}
