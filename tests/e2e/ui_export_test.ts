/**
 * [UI-9] Export and import in the browser: the Conversation menu downloads
 * the JSON export (and the Markdown one), and "Import" turns that file into a
 * new Conversation that opens with the same visible messages.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { login } from "../helpers/login.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { openLoggedIn, startUiEnv } from "./_ui_support.ts";

const SYS = "00000000-0000-4000-8000-000000000001";

Deno.test("a Conversation exported from its menu imports back as a new Conversation", async () => {
  const env = await startUiEnv(text("Pelicans fish in groups."));
  const dir = Deno.makeTempDirSync();
  try {
    const s = await login(env.server);
    const api = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(`${env.server.url}/api/agents/${SYS}${path}`, {
        method,
        headers: s.headers(),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: r.status, body: await r.json() };
    };
    const conv = (await api("POST", "/sessions", { title: "Pelican notes" })).body.session.id;
    assertEquals(
      (await api("POST", `/sessions/${conv}/runs`, { message: "how do pelicans fish?" })).status,
      202,
    );
    for (let tries = 0;; tries++) {
      const d = await api("GET", `/sessions/${conv}?limit=1`);
      if (d.body.turns[0]?.state === "completed") break;
      if (tries > 600) throw new Error("turn did not complete");
      await new Promise((res) => setTimeout(res, 50));
    }

    const { page, errors } = await openLoggedIn(env);
    await page.waitForSelector("[data-testid=conversation-item]");
    const exportFrom = async (item: string) => {
      await page.hover("[data-testid=conversation-item]");
      await page.click("[data-testid=conversation-menu]");
      await page.waitForSelector("[data-testid=conversation-popover]:popover-open");
      const [download] = await Promise.all([page.waitForEvent("download"), page.click(item)]);
      return download;
    };
    const md = await exportFrom("[data-testid=menu-export-md]");
    const mdPath = `${dir}/c.md`;
    await md.saveAs(mdPath);
    assert(Deno.readTextFileSync(mdPath).includes("# Pelican notes"));
    const json = await exportFrom("[data-testid=menu-export-json]");
    const jsonPath = `${dir}/c.json`;
    await json.saveAs(jsonPath);
    assertEquals(JSON.parse(Deno.readTextFileSync(jsonPath)).conversation.id, conv);

    await page.setInputFiles("[data-testid=import-file]", jsonPath);
    await page.waitForFunction(
      (c) => /\/c\/[^/]+$/.test(location.hash) && !location.hash.endsWith(`/c/${c}`),
      conv,
      { timeout: 10_000 },
    );
    await page.waitForSelector("text=Pelicans fish in groups.", { timeout: 10_000 });
    await page.waitForSelector("text=how do pelicans fish?");
    const titles = await page.$$eval(
      "[data-testid=conversation-item] .conv-title",
      (els) => els.map((e) => e.textContent),
    );
    assertEquals(titles.filter((t) => t === "Pelican notes").length, 2);
    assertEquals(errors, []);
  } finally {
    await env.close();
    Deno.removeSync(dir, { recursive: true });
  }
});
