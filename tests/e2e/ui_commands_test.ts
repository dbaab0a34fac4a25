/**
 * Slash commands in the browser [SC-1, #18]: a result and a command's error
 * toast belong to the Conversation they came from and go with the next
 * command or with navigation; Enter on a unique prefix runs the match shown;
 * `/clear` reuses an empty Conversation; `/permissions` is a table with
 * Approve/Deny that updates live.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import type { Page } from "../helpers/browser.ts";
import { text, textThenTool } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const convCount = (page: Page) => page.$$eval("[data-testid=conversation-item]", (e) => e.length);

Deno.test("a command's result and toast stay with their conversation and go with the next command", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Commander");
    await createConversation(page);
    const first = await page.evaluate(() => location.hash);

    // A unique prefix runs the command the help panel shows.
    await send(page, "/stat");
    await page.waitForSelector("[data-testid=command-result]");
    assertMatch(await page.textContent("[data-testid=command-result]") ?? "", /\/status/);

    // A failing command: the previous result goes, the toast comes.
    await send(page, "/model no-such-model");
    await page.waitForSelector("[data-testid=error-toast]");
    assertEquals(await page.$("[data-testid=command-result]"), null, "no stale result");

    // Navigation takes the toast away; it does not follow into the next Conversation.
    await createConversation(page);
    assertEquals(await page.$("[data-testid=error-toast]"), null, "the toast stayed behind");
    // Back to the first one through the list (the older of the two); the app writes the address
    // once that navigation settled.
    await (await page.$$("[data-testid=conversation-item]"))[1].click();
    await page.waitForFunction((h) => location.hash === h, first, { timeout: 10_000 });
    await page.waitForSelector("[data-testid=empty-chat]");
    assertEquals(await page.$("[data-testid=error-toast]"), null, "and is gone once left");

    // The next command clears a toast from this place too.
    await send(page, "/model no-such-model");
    await page.waitForSelector("[data-testid=error-toast]");
    await send(page, "/status");
    await page.waitForSelector("[data-testid=command-result]");
    assertEquals(await page.$("[data-testid=error-toast]"), null, "the next command cleared it");
    assertEquals(errors.filter((e) => !/status of 4\d\d/.test(e)), []);
  } finally {
    await env.close();
  }
});

Deno.test("/clear reuses an empty conversation and starts a new one after a conversation with turns", async () => {
  const env = await startUiEnv();
  try {
    const { page } = await openLoggedIn(env);
    await createAgent(page, "Clearer");
    await createConversation(page);
    const empty = await page.evaluate(() => location.hash);
    const before = await convCount(page);
    await send(page, "/clear");
    await page.waitForSelector("[data-testid=command-result]");
    assertEquals(await page.evaluate(() => location.hash), empty, "stayed in the empty one");
    assertEquals(await convCount(page), before, "no empty conversation piled up");

    env.ollama.enqueue(text("Hi."));
    await send(page, "hello");
    await waitForCompletedTurn(page);
    await send(page, "/clear");
    await page.waitForFunction((h) => location.hash !== h, empty, { timeout: 10_000 });
    await page.waitForSelector("[data-testid=empty-chat]");
    await page.waitForFunction(
      (n) => document.querySelectorAll("[data-testid=conversation-item]").length === n,
      before + 1,
    );
  } finally {
    await env.close();
  }
});

Deno.test("/permissions is a table with Approve and Deny that updates live", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Approver");
    await createConversation(page);
    env.ollama.enqueue(
      textThenTool("Writing.", [{
        name: "file__write",
        arguments: { path: "table.md", content: "from the table\n" },
      }]),
      text("Done."),
    );
    await send(page, "write table.md");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await send(page, "/permissions");
    const row = await page.waitForSelector(
      "[data-testid=permissions-table] [data-testid=permission-row]",
    );
    const cells = (await row.textContent()) ?? "";
    assert(cells.includes("file/write") && cells.includes("table.md"), cells);
    await screenshotsAllSizes(page, "22-permissions-table");
    await page.click("[data-testid=permission-row] >> text=Approve");
    await page.waitForSelector("[data-testid=permissions-empty]", { timeout: 10_000 });
    await waitForCompletedTurn(page);
    assertEquals(await page.$("[data-testid=approval]"), null);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
