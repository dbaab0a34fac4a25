/**
 * [UI-5, UI-6, MB-2, CV-5] with no reachable Ollama the UI still works, says
 * the model is unavailable and how to connect it (`--ollama URL`), and a sent
 * message is refused at admission with the fixed code while the draft is kept
 * — nothing is faked and no Turn appears.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { launchBrowser, screenshotDir, watchPageErrors } from "../helpers/browser.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import { freePort, startTestServer } from "../helpers/server.ts";
import { createAgent, createConversation, openLoggedIn, send, startUiEnv } from "./_ui_support.ts";
import { type FakeOllama, startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { serverError } from "../../tools/fake_ollama/scenarios.ts";

Deno.test("without a reachable model the banner explains --ollama and a message is refused with its code", async () => {
  const ollamaUrl = `http://127.0.0.1:${freePort()}`;
  const server = await startTestServer({ args: ["--ollama", ollamaUrl] });
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors = watchPageErrors(page);
    await page.goto(`${server.url}/`);
    await page.fill("[data-testid=login-token]", readBootstrapToken(server.home));
    await page.click("[data-testid=login-submit]");
    const banner = await page.waitForSelector("[data-testid=model-banner]", { timeout: 15_000 });
    assertMatch(
      await banner.textContent() ?? "",
      /Model unavailable[\s\S]*ollama serve[\s\S]*--ollama/,
    );
    // [UI-12] the banner names the URL this server was configured with.
    await page.waitForFunction(
      (url) => document.querySelector("[data-testid=model-banner-url]")?.textContent === url,
      ollamaUrl,
      { timeout: 10_000 },
    );

    await createConversation(page);
    await send(page, "is anyone there?");
    const toast = await page.waitForSelector("[data-testid=error-toast]", { timeout: 10_000 });
    assertMatch(await toast.textContent() ?? "", /model is unavailable[\s\S]*model_unavailable/);
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 0);
    assertEquals(await page.inputValue("[data-testid=composer-input]"), "is anyone there?");
    // Only the refused request itself may be logged by the browser.
    assertEquals(errors.filter((e) => !/status of 503/.test(e)), []);
  } finally {
    await browser.close();
    await server.stop();
  }
});

Deno.test("the banner follows the model without a reload: it goes once Ollama comes up", async () => {
  const port = freePort();
  const server = await startTestServer({ args: ["--ollama", `http://127.0.0.1:${port}`] });
  const browser = await launchBrowser();
  let ollama: FakeOllama | null = null;
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors = watchPageErrors(page);
    await page.goto(`${server.url}/`);
    await page.fill("[data-testid=login-token]", readBootstrapToken(server.home));
    await page.click("[data-testid=login-submit]");
    await page.waitForSelector("[data-testid=model-banner]", { timeout: 15_000 });
    // A marker on the window survives address rewrites but not a reload.
    await page.evaluate(() => ((window as unknown as { __same?: boolean }).__same = true));
    ollama = await startFakeOllama({ port });
    await page.waitForSelector("[data-testid=model-banner]", {
      state: "detached",
      timeout: 30_000,
    });
    assertEquals(
      await page.evaluate(() => (window as unknown as { __same?: boolean }).__same),
      true,
      "no reload",
    );
    assertEquals(errors.filter((e) => !/status of 503/.test(e)), []);
  } finally {
    await browser.close();
    await server.stop();
    await ollama?.close();
  }
});

Deno.test("while the circuit pauses the model the composer counts down and Send waits", async () => {
  const env = await startUiEnv();
  try {
    const { page } = await openLoggedIn(env);
    await createAgent(page, "Paused");
    await createConversation(page);
    env.ollama.setDefault(serverError());
    await send(page, "are you there?");
    await page.waitForSelector("[data-testid=turn][data-state=failed]", { timeout: 30_000 });
    // The model may need a second failing Turn before the circuit opens.
    if (!(await page.$("[data-testid=circuit-countdown]"))) {
      await send(page, "still there?");
      await page.waitForFunction(
        () => document.querySelectorAll("[data-testid=turn][data-state=failed]").length === 2,
        undefined,
        {
          timeout: 30_000,
        },
      );
    }
    const note = await page.waitForSelector("[data-testid=circuit-countdown]", { timeout: 10_000 });
    assertMatch(await note.textContent() ?? "", /Send in \d+ s/);
    await page.fill("[data-testid=composer-input]", "one more try");
    assertEquals(await page.isDisabled("[data-testid=send]"), true, "Send waits");
    const turns = await page.$$eval("[data-testid=turn]", (t) => t.length);
    await page.press("[data-testid=composer-input]", "Enter");
    assertEquals(await page.inputValue("[data-testid=composer-input]"), "one more try");
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), turns, "nothing sent");
    await page.screenshot({ path: `${screenshotDir()}desktop-27-circuit-countdown.png` });
  } finally {
    await env.close();
  }
});
