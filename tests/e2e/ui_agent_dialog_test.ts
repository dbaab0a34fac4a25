/**
 * [UI-5, #18] The create-agent dialog validates before anything is sent:
 * an empty name, one past 64 characters and a duplicate (any case) each keep
 * the dialog open with an inline message; a valid name creates the Agent.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import {
  createAgent,
  ensureNav,
  openLoggedIn,
  screenshotsAllSizes,
  startUiEnv,
} from "./_ui_support.ts";

Deno.test("the create-agent dialog refuses empty, too long and duplicate names inline", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Planner");
    const posts: string[] = [];
    page.on(
      "request",
      (r) => r.method() === "POST" && r.url().endsWith("/api/agents") && posts.push(r.url()),
    );
    await ensureNav(page);
    await page.click("[data-testid=new-agent]");
    const problem = async (name: string) => {
      await page.fill("[data-testid=dialog-input]", name);
      await page.click("[data-testid=dialog-confirm]");
      await page.waitForFunction(() =>
        (document.querySelector("[data-testid=dialog-error]")?.textContent ?? "") !== ""
      );
      return await page.textContent("[data-testid=dialog-error]") ?? "";
    };
    assertMatch(await problem("   "), /name/);
    assertMatch(await problem("x".repeat(65)), /At most 64 characters \(this is 65\)/);
    assertMatch(await problem("planner"), /already exists/);
    await screenshotsAllSizes(page, "23-create-agent-invalid");
    assertEquals(posts, [], "nothing was sent");
    assertEquals(await page.getAttribute("[data-testid=dialog-input]", "aria-invalid"), "true");
    // Exactly 64 characters is fine.
    const name = "y".repeat(64);
    await page.fill("[data-testid=dialog-input]", name);
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=dialog-error]")?.textContent === ""
    );
    await page.click("[data-testid=dialog-confirm]");
    await page.waitForFunction(
      (n) =>
        document.querySelector<HTMLSelectElement>("[data-testid=agent-switcher]")
          ?.selectedOptions[0]?.textContent === n,
      name,
      { timeout: 10_000 },
    );
    assertEquals(posts.length, 1);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
