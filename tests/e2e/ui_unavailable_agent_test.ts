/**
 * [AG-5] In the browser: an Agent whose state.sqlite was zeroed while the
 * server was stopped is marked unavailable in the Agent switcher, shows its
 * reason, cannot be renamed or rebuilt, and is deleted through the usual
 * confirmation; the healthy Agent stays.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { apiClient } from "../helpers/agents_api.ts";
import { launchBrowser } from "../helpers/browser.ts";
import { login } from "../helpers/login.ts";
import { makeTempHome } from "../helpers/home.ts";
import { startTestServer } from "../helpers/server.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { openLoggedIn } from "./_ui_support.ts";

Deno.test("an unavailable Agent is marked in the switcher with its reason and can be deleted", async () => {
  const home = makeTempHome();
  const ollama = await startFakeOllama({});
  const args = ["--ollama", ollama.url];
  let server = await startTestServer({ home, args });
  const browser = await launchBrowser();
  try {
    const api = apiClient(server, await login(server));
    const broken = (await api("POST", "/api/agents", { name: "Broken" })).body.agent.id;
    assertEquals((await api("POST", "/api/agents", { name: "Healthy" })).status, 201);
    assertEquals(await server.stop(), 0);
    const db = `${home}/data/agents/${broken}/state.sqlite`;
    Deno.writeFileSync(db, new Uint8Array(Deno.statSync(db).size));
    server = await startTestServer({ home, args });

    const env = { server, ollama, browser, close: () => Promise.resolve() };
    const { page } = await openLoggedIn(env);
    await page.waitForSelector("[data-testid=agent-switcher] option", { state: "attached" });
    const options = await page.$$eval(
      "[data-testid=agent-switcher] option",
      (o) => o.map((x) => x.textContent),
    );
    assert(options.includes("Broken — unavailable"), JSON.stringify(options));
    assert(options.includes("Healthy"), JSON.stringify(options));

    await page.selectOption("[data-testid=agent-switcher]", broken);
    const note = await page.waitForSelector("[data-testid=agent-unavailable]");
    assert((await note.textContent())?.includes("database_not_sqlite"));
    assertEquals(await page.isDisabled("text=Rename >> nth=0"), true);
    assertEquals(await page.isDisabled("text=Rebuild"), true);
    assertEquals(await page.isDisabled("[data-testid=delete-agent]"), false);

    await page.click("[data-testid=delete-agent]");
    await page.waitForSelector("dialog[open]");
    await page.click("[data-testid=dialog-confirm]");
    await page.waitForFunction(() =>
      ![...document.querySelectorAll("[data-testid=agent-switcher] option")]
        .some((o) => o.textContent?.startsWith("Broken"))
    );
    const left = await page.$$eval(
      "[data-testid=agent-switcher] option",
      (o) => o.map((x) => x.textContent),
    );
    assert(left.includes("Healthy"));
    let gone = false;
    try {
      Deno.lstatSync(`${home}/data/agents/${broken}`);
    } catch (err) {
      gone = err instanceof Deno.errors.NotFound;
    }
    assert(gone, "the broken Agent's folder is removed");
  } finally {
    await browser.close();
    await server.stop();
    await ollama.close();
    Deno.removeSync(home, { recursive: true });
  }
});
