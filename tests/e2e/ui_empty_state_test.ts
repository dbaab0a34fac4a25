/**
 * [UI-1, UI-4] with no Conversation open the composer is already live: a
 * draft typed there is kept per Agent across Agent switches, and the first
 * Enter creates a Conversation titled from the message and submits its Turn
 * in one go (no "New conversation" click needed).
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import type { Page } from "../helpers/browser.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  expectDraft,
  openLoggedIn,
  startUiEnv,
  turnCount,
  waitForCompletedTurn,
} from "./_ui_support.ts";

async function switchAgent(page: Page, name: string): Promise<void> {
  await page.selectOption("[data-testid=agent-switcher]", { label: name });
  await page.waitForSelector("[data-testid=empty-main]");
}

Deno.test("the empty state takes a message at once and keeps a draft per agent", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    // Fresh install: the System Agent has no Conversation, yet the composer is there and focused.
    await page.waitForSelector("[data-testid=empty-main]");
    await page.waitForSelector("[data-testid=composer-input]");
    // Focus moves in an effect after the first paint: wait for it rather than sample it.
    await page.waitForFunction(
      () => document.activeElement?.getAttribute("data-testid") === "composer-input",
      null,
      { timeout: 5_000 },
    );
    await page.keyboard.type("draft for the system agent");

    await createAgent(page, "Planner");
    await page.waitForSelector("[data-testid=empty-main]");
    await expectDraft(page, "", "another Agent starts with its own empty draft");
    await page.fill("[data-testid=composer-input]", "draft for planner");
    await switchAgent(page, "System Agent (system)");
    await expectDraft(page, "draft for the system agent");
    await switchAgent(page, "Planner");
    await expectDraft(page, "draft for planner");
    await page.screenshot({ path: `${screenshotDir()}desktop-09-empty-composer.png` });

    // A slash command needs a Conversation: it is refused without creating one.
    await page.fill("[data-testid=composer-input]", "/status");
    await page.press("[data-testid=composer-input]", "Enter");
    await page.waitForSelector("[data-testid=error-toast]");
    assertEquals(await page.$$("[data-testid=conversation-item]"), []);
    await page.click("[data-testid=error-toast] button");

    env.ollama.enqueue(text("Here is a **plan**."));
    const message = "Plan a three-day\ttrip to Lisbon";
    await page.fill("[data-testid=composer-input]", message);
    await page.press("[data-testid=composer-input]", "Enter");
    await waitForCompletedTurn(page);
    const item = await page.waitForSelector("[data-testid=conversation-item]");
    assertMatch(await item.textContent() ?? "", /Plan a three-day trip to Lisbon/);
    assertMatch(await page.evaluate(() => location.hash), /^#\/a\/[^/]+\/c\/[^/]+$/);
    assertEquals(await turnCount(page), 1);
    assertEquals((await page.$$("[data-testid=conversation-item]")).length, 1);
    await expectDraft(page, "", "the sent draft is cleared");

    // The System Agent's empty-state draft is still there after all that.
    await switchAgent(page, "System Agent (system)");
    await expectDraft(page, "draft for the system agent");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
