/**
 * Browser login [UI-6, GW-3] in real Chromium against a real server: the page
 * shows the login form, a wrong token gives a clear message, the token from
 * the file logs in (HttpOnly cookie invisible to script), the app appears,
 * logout returns to the login page, and `rotate-token` typed into a real pty
 * logs the live browser session out of the same running server.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { launchBrowser, type Page, watchPageErrors } from "../helpers/browser.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import { runInPty } from "../helpers/pty.ts";
import { DENO, REPO, RUN_FLAGS, startTestServer } from "../helpers/server.ts";

async function loginThroughPage(page: Page, token: string): Promise<void> {
  await page.waitForSelector("[data-testid=login-page]", { timeout: 10_000 });
  await page.fill("[data-testid=login-token]", token);
  await page.click("[data-testid=login-submit]");
}

Deno.test("an operator logs in through the page with the token from the file, sees the app and logs out", async () => {
  const server = await startTestServer();
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const errors = watchPageErrors(page);
    assertEquals((await page.goto(`${server.url}/`))?.status(), 200);

    await loginThroughPage(page, "definitely-not-the-token");
    const err = await page.waitForSelector("[data-testid=login-error]", { timeout: 10_000 });
    assertEquals(await err.textContent(), "That token is not valid.");
    assertEquals(await page.inputValue("[data-testid=login-token]"), "", "field cleared");

    await loginThroughPage(page, readBootstrapToken(server.home));
    await page.waitForSelector("[data-testid=shell]", { timeout: 10_000 });
    const cookies = await page.context().cookies();
    assertEquals(cookies.length, 1);
    assertEquals(cookies[0].name, `ab_session_${server.port}`);
    assertEquals(cookies[0].httpOnly, true);
    assertEquals(cookies[0].sameSite, "Strict");
    assertEquals(await page.evaluate(() => document.cookie), "", "script cannot read the cookie");
    assert(!page.url().includes("token"), "token never in the URL");

    // A reload keeps the session (the CSRF token comes back from /api/session).
    await page.reload();
    await page.waitForSelector("[data-testid=shell]", { timeout: 10_000 });

    await page.click("[data-testid=logout]");
    await page.waitForSelector("[data-testid=login-page]", { timeout: 10_000 });
    const after = await page.request.get(`${server.url}/api/session`);
    assertEquals(after.status(), 401);
    await page.reload();
    await page.waitForSelector("[data-testid=login-page]", { timeout: 10_000 });
    assertEquals(errors, []);
  } finally {
    await browser.close();
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("the login page shows the wait time once the source is rate limited", async () => {
  const server = await startTestServer();
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    for (let i = 0; i < 5; i++) {
      await loginThroughPage(page, `wrong-token-${i}`);
      await page.waitForSelector("[data-testid=login-error]", { timeout: 10_000 });
      await page.waitForSelector("[data-testid=login-submit]:not([disabled])");
    }
    await loginThroughPage(page, readBootstrapToken(server.home));
    await page.waitForFunction(
      () => document.querySelector("[data-testid=login-error]")?.textContent?.includes("Too many"),
      undefined,
      { timeout: 10_000 },
    );
    const text = await page.textContent("[data-testid=login-error]");
    assertMatch(text ?? "", /^Too many failed attempts\. Try again in \d+ seconds\.$/);
  } finally {
    await browser.close();
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});

Deno.test("rotate-token typed into a real pty logs out the live browser session of the running server", async () => {
  const server = await startTestServer();
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    const oldToken = readBootstrapToken(server.home);
    await loginThroughPage(page, oldToken);
    await page.waitForSelector("[data-testid=logout]", { timeout: 10_000 });
    // Let the workspace finish its first requests, so the click below is the next one.
    await page.waitForLoadState("networkidle");
    const rotated = "Rotated-token-123";
    const r = await runInPty(
      [DENO, ...RUN_FLAGS, `${REPO}/main.ts`, "rotate-token", "--home", server.home],
      [{ expect: "New token", send: `${rotated}\r` }, { expect: "Repeat", send: `${rotated}\r` }],
      { DENO_NO_UPDATE_CHECK: "1" },
    );
    assertEquals(r.code, 0, r.output);
    // The browser's cookie is dead at once: its own request gets 401 ...
    assertEquals((await page.request.get(`${server.url}/api/session`)).status(), 401);
    // ... and the app's next request sends it back to the login page.
    await page.click("[data-testid=logout]");
    await page.waitForSelector("[data-testid=login-page]", { timeout: 10_000 });
    await loginThroughPage(page, oldToken);
    const err = await page.waitForSelector("[data-testid=login-error]", { timeout: 10_000 });
    assertEquals(await err.textContent(), "That token is not valid.", "the old token is dead");
    await loginThroughPage(page, rotated);
    await page.waitForSelector("[data-testid=shell]", { timeout: 10_000 });
  } finally {
    await browser.close();
    await server.stop();
    await Deno.remove(server.home, { recursive: true });
  }
});
