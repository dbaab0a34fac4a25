import { launchBrowser, watchPageErrors } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/server.ts";
import { assertEquals } from "../helpers/assert.ts";

Deno.test("Chromium loads the embedded UI and finds the app root without CSP errors", async () => {
  const server = await startTestServer();
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = watchPageErrors(page);
    const res = await page.goto(`${server.url}/`);
    assertEquals(res?.status(), 200);
    await page.waitForSelector("[data-testid=app-root] > *", { timeout: 10_000 });
    assertEquals(errors, []);
  } finally {
    await browser.close();
    await server.stop();
  }
});
