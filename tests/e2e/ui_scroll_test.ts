/**
 * [UI-1] autoscroll: the chat follows a streaming answer while the operator
 * is at the bottom, stops following when they scroll up (and offers "Back to
 * latest"), and follows again after "Back to latest".
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import type { Page } from "../helpers/browser.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const LONG = Array.from(
  { length: 60 },
  (_, i) => `Paragraph ${i}: a line of streamed text that fills the screen.\n`,
).join("\n");

function metrics(page: Page) {
  return page.$eval("[data-testid=chat-scroll]", (el) => ({
    top: el.scrollTop,
    height: el.clientHeight,
    scrollHeight: el.scrollHeight,
  }));
}

Deno.test("autoscroll pauses when the operator scrolls up and resumes with Back to latest", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env, { width: 1000, height: 700 });
    await createAgent(page, "Scroller");
    await createConversation(page);
    env.ollama.enqueue(text(LONG, { frameDelayMs: 15 }));
    await send(page, "a long answer please");

    // Following: once the content overflows, the view stays at the bottom.
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        return el.scrollHeight > el.clientHeight + 200;
      },
      undefined,
      { timeout: 20_000 },
    );
    await page.waitForTimeout(200);
    let m = await metrics(page);
    assert(
      m.scrollHeight - (m.top + m.height) < 60,
      `at bottom while following: ${JSON.stringify(m)}`,
    );
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);

    // Scrolling up pauses following and offers Back to latest.
    await page.hover("[data-testid=chat-scroll]");
    await page.mouse.wheel(0, -5000);
    await page.waitForSelector("[data-testid=back-to-latest]");
    const pausedAt = (await metrics(page)).top;
    await page.waitForFunction(
      (h) => document.querySelector("[data-testid=chat-scroll]")!.scrollHeight > h + 100,
      m.scrollHeight,
    );
    m = await metrics(page);
    assertEquals(m.top, pausedAt, "the view did not jump while paused");

    // Back to latest returns to the bottom and follows again, while the answer still streams.
    await page.click("[data-testid=back-to-latest]");
    const clickedAt = (await metrics(page)).scrollHeight;
    // One sample, taken when the content has grown: where the view is and whether it still streams.
    const grown = await (await page.waitForFunction(
      (h) => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        if (el.scrollHeight <= h + 200) return null;
        return {
          gap: el.scrollHeight - (el.scrollTop + el.clientHeight),
          running: document.querySelector("[data-testid=turn][data-state=running]") !== null,
        };
      },
      clickedAt,
    )).jsonValue() as { gap: number; running: boolean };
    assert(grown.running, "the content grew while the answer still streamed");
    assert(grown.gap < 60, `following again: ${JSON.stringify(grown)}`);
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);
    await waitForCompletedTurn(page);
    await page.waitForTimeout(500);
    m = await metrics(page);
    assert(m.scrollHeight - (m.top + m.height) < 60, `back at bottom: ${JSON.stringify(m)}`);
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
