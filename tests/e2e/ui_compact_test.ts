/**
 * `/compact` in real Chromium [CX-9]: the command opens a card with the
 * model's summary of the older history; Keep makes the meter's breakdown say
 * how many Turns the summary stands for, Undo restores the full history, and
 * a failed summary says nothing was stored. Screenshots in light and dark.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { serverError, text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const SUMMARY = "We compared apples and pears; apples are red, pears are green.";

Deno.test("/compact shows the model's summary to keep, then undo; a failed summary stores nothing", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Compact agent");
    await createConversation(page);
    for (const [q, a] of [["Apples?", "Apples are red."], ["Pears?", "Pears are green."]]) {
      env.ollama.enqueue(text(a));
      await send(page, q);
      await waitForCompletedTurn(page);
    }
    // The UI shows "completed" from the stream; wait until the server's history has both Turns.
    await page.evaluate(async () => {
      const [, a, c] = location.hash.match(/^#\/a\/([^/]+)\/c\/([^/]+)/)!;
      for (;;) {
        const r = await fetch(`/api/agents/${a}/sessions/${c}/context-preview`);
        if ((await r.json()).breakdown?.history_turns?.kept === 2) return;
        await new Promise((res) => setTimeout(res, 100));
      }
    });
    env.ollama.enqueue(text(SUMMARY));
    await send(page, "/compact");
    const card = "[data-testid=compaction-card]";
    await page.waitForSelector(`${card}[data-state=pending]`);
    assertEquals(await page.textContent("[data-testid=compaction-summary]"), SUMMARY);
    await screenshotsAllSizes(page, "compact-pending");

    await page.click("[data-testid=compaction-keep]");
    await page.waitForSelector(`${card}[data-state=active]`);
    // The meter's breakdown names the summarized Turn (history = summary + the latest Turn).
    await page.click("[data-testid=context-meter] .meter-btn");
    await page.waitForSelector(
      "[data-testid=context-breakdown] li[data-part=history] >> text=/1 summarized/",
    );
    await screenshotsAllSizes(page, "compact-kept");
    await page.click("[data-testid=context-meter] .meter-btn");

    await page.click("[data-testid=compaction-undo]");
    await page.waitForSelector(`${card}[data-state=undone]`);
    await page.click("[data-testid=context-meter] .meter-btn");
    await page.waitForSelector(
      "[data-testid=context-breakdown] li[data-part=history] >> text=/2 turns kept, 0 collapsed$|2 turns kept$/",
    );
    await page.click("[data-testid=context-meter] .meter-btn");
    await page.click("[data-testid=compaction-close]");
    assertEquals(await page.$(card), null);
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 2, "transcript kept");

    env.ollama.enqueue(serverError(500), serverError(500));
    await send(page, "/compact");
    await page.waitForSelector(`${card}[data-state=error]`);
    assertMatch(
      (await page.textContent("[data-testid=compaction-error]"))!,
      /could not write the summary\. Nothing was stored\./,
    );
    // The failed call's 502 is an expected console error of the fetch.
    assertEquals(errors.filter((e) => !/status of 502/.test(e)), []);
  } finally {
    await env.close();
  }
});
