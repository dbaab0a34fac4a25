/**
 * [UI-9] The search box of the Conversation list: typing finds a message in
 * another Conversation, the hit shows its title and a plain-text snippet, and
 * clicking it opens that Conversation; FTS syntax typed by the operator is
 * searched as text (no matches, no error); Escape clears the results.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { login } from "../helpers/login.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { openLoggedIn, startUiEnv } from "./_ui_support.ts";

const SYS = "00000000-0000-4000-8000-000000000001";

Deno.test("the search box finds a message and opens its Conversation", async () => {
  const env = await startUiEnv(text("ok."));
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
    // A real Turn through the Run service (the scripted model answers "ok.").
    const converse = async (title: string, message: string) => {
      const id = (await api("POST", "/sessions", { title })).body.session.id as string;
      const r = await api("POST", `/sessions/${id}/runs`, { message });
      assertEquals(r.status, 202, JSON.stringify(r.body));
      for (let tries = 0; tries < 600; tries++) {
        const d = await api("GET", `/sessions/${id}?limit=1`);
        if (d.body.turns[0]?.state === "completed") return id;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error("turn did not complete");
    };
    const target = await converse("Bird survey", "where do <b>flamingos</b> nest in winter?");
    await converse("Shopping list", "buy milk");

    const { page, errors } = await openLoggedIn(env);
    await page.waitForSelector("[data-testid=conversation-item]");
    await page.fill("[data-testid=conversation-search]", "flamingos nest");
    await page.waitForSelector("[data-testid=search-hit]", { timeout: 10_000 });
    const hits = await page.$$eval("[data-testid=search-hit]", (els) =>
      els.map((el) => ({
        conv: el.getAttribute("data-conversation"),
        title: el.querySelector(".search-title")?.textContent,
        snippet: el.querySelector(".search-snippet")?.textContent ?? "",
        html: el.querySelector(".search-snippet")?.innerHTML ?? "",
      })));
    assertEquals(hits.length, 1);
    assertEquals([hits[0].conv, hits[0].title], [target, "Bird survey"]);
    // The snippet is text: the message's markup shows as characters, never as elements.
    assert(hits[0].snippet.includes("flamingos"), hits[0].snippet);
    assert(!hits[0].html.includes("<b>"), hits[0].html);
    await page.screenshot({ path: `${screenshotDir()}desktop-search-light.png` });

    await page.click("[data-testid=search-hit]");
    await page.waitForFunction((c) => location.hash.endsWith(`/c/${c}`), target);
    await page.waitForSelector("text=where do <b>flamingos</b> nest in winter?", {
      timeout: 10_000,
    });
    // Opening a hit clears the box and its results.
    assertEquals(await page.inputValue("[data-testid=conversation-search]"), "");
    assertEquals(await page.$("[data-testid=search-results]"), null);

    // FTS operators are text: no match, no error.
    await page.fill("[data-testid=conversation-search]", 'NEAR( "flamingos OR -x');
    await page.waitForSelector("[data-testid=search-empty]", { timeout: 10_000 });
    assertEquals(await page.$("[data-testid=search-error]"), null);
    await page.press("[data-testid=conversation-search]", "Escape");
    await page.waitForSelector("[data-testid=search-results]", { state: "detached" });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
