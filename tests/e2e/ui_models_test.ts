/**
 * [UI-7, UI-12, MB-10..14] in a real Chromium against the scripted fleet: the
 * Models view lists the fleet with states, a pull shows its progress bar
 * (screenshot) and the pulled model joins the catalog; the picker switches the
 * model per Turn (asserted on the request the scripted Ollama received) and
 * offers chat-only models with their badge; a reasoning block sits collapsed
 * under the answer and expands (screenshots light and dark).
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { launchBrowser, screenshotDir } from "../helpers/browser.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import { startTestServer } from "../helpers/server.ts";
import { FAKE_FLEET, type FakeModel } from "../../tools/fake_ollama/frames.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { send, startUiEnv } from "./_ui_support.ts";
import { SYSTEM_AGENT_NAME } from "../../runtime/agents/service.ts";

Deno.test("the Models view pulls with a progress bar, the picker switches the model per Turn, and reasoning expands", async () => {
  const ollama = await startFakeOllama({
    models: structuredClone(FAKE_FLEET) as Record<string, FakeModel>,
    pullable: {
      "phi4-mini:3.8b": {
        model: { arch: "phi3", contextLength: 131072, capabilities: ["completion", "tools"] },
        steps: 40,
        stepDelayMs: 150,
      },
    },
  });
  const server = await startTestServer({ args: ["--ollama", ollama.url] });
  const browser = await launchBrowser();
  const shots = screenshotDir();
  try {
    for (const scheme of ["light", "dark"] as const) {
      const ctx = await browser.newContext({
        viewport: { width: 1280, height: 860 },
        colorScheme: scheme,
      });
      const page = await ctx.newPage();
      await page.goto(`${server.url}/`);
      await page.fill("[data-testid=login-token]", readBootstrapToken(server.home));
      await page.click("[data-testid=login-submit]");
      await page.waitForSelector("[data-testid=workspace]", { timeout: 15_000 });

      if (scheme === "light") {
        await page.click("[data-testid=open-models]");
        await page.waitForSelector("[data-testid=model-row][data-model='qwen3.5:2b']");
        assertEquals(
          await page.$$eval(
            "[data-testid=model-row]",
            (rows) => rows.map((r) => [r.getAttribute("data-model"), r.getAttribute("data-state")]),
          ),
          [
            ["deepseek-r1:1.5b", "chat_only"],
            ["gemma3:1b", "chat_only"],
            ["llama3.2:3b", "ready"],
            ["qwen3.5:2b", "ready"],
          ],
        );
        await page.fill("[data-testid=pull-name]", "phi4-mini:3.8b");
        await page.click("[data-testid=pull-start]");
        await page.waitForFunction(
          () => {
            const bar = document.querySelector("[data-testid=pull-bar]") as
              | HTMLProgressElement
              | null;
            return bar !== null && bar.value > 0 && bar.value < bar.max;
          },
          undefined,
          { timeout: 15_000 },
        );
        await page.screenshot({ path: `${shots}/models-pull-progress.png` });
        await page.waitForSelector("[data-testid=pull-progress][data-end=succeeded]", {
          timeout: 30_000,
        });
        await page.waitForSelector("[data-testid=model-row][data-model='phi4-mini:3.8b']");
        // Delete asks first; only the confirmation removes it on Ollama.
        const row = "[data-testid=model-row][data-model='phi4-mini:3.8b']";
        await page.locator(`${row} [data-testid=model-delete]`).click();
        await page.locator(`${row} [data-testid=model-delete-confirm]`).waitFor();
        assertEquals(ollama.requests.filter((r) => r.method === "DELETE").length, 0);
        await page.locator(`${row} [data-testid=model-delete-confirm]`).click();
        await page.waitForSelector(row, { state: "detached", timeout: 15_000 });
        assertEquals(
          ollama.requests.filter((r) => r.method === "DELETE").map((r) => r.body),
          [{ model: "phi4-mini:3.8b" }],
        );
        // The selected Agent's default model and reasoning [MB-12, MB-14].
        const agentUrl = `${server.url}/api/agents/00000000-0000-4000-8000-000000000001`;
        await page.selectOption("[data-testid=agent-default-model-select]", "gemma3:1b");
        await page.waitForFunction(
          async (u) => (await (await fetch(u)).json()).agent.default_model_id === "gemma3:1b",
          agentUrl,
        );
        await page.click("[data-testid=agent-reasoning-toggle]");
        await page.waitForFunction(
          async (u) => (await (await fetch(u)).json()).agent.reasoning === false,
          agentUrl,
        );
        // The composer says which model a Turn without a choice will use: its own
        // entry, marked and selected, listed once.
        await page.waitForFunction(() => {
          const sel = document.querySelector<HTMLSelectElement>("[data-testid=model-picker]");
          const opts = [...(sel?.options ?? [])].map((o) => o.textContent ?? "");
          return sel?.value === "gemma3:1b" &&
            opts.filter((t) => t.startsWith("gemma3:1b")).length === 1 &&
            opts.some((t) => t.startsWith("gemma3:1b") && t.endsWith("(Agent default)"));
        });
        await page.selectOption("[data-testid=agent-default-model-select]", "");
        await page.click("[data-testid=agent-reasoning-toggle]");
        await page.waitForFunction(async (u) => {
          const a = (await (await fetch(u)).json()).agent;
          return a.default_model_id === null && a.reasoning === true;
        }, agentUrl);
        await page.click("[data-testid=models-close]");
      }

      // The Agent list re-renders after the settings above: a locator click retries through it.
      await page.waitForSelector("[data-testid=models-view]", { state: "detached" });
      const hash = await page.evaluate(() => location.hash);
      // Whichever "new conversation" button is visible when the click happens (the empty state's
      // may go away while the list re-renders).
      await page.locator(
        "[data-testid=empty-new-conversation]:visible, [data-testid=new-conversation]:visible",
      ).first().click();
      await page.waitForFunction(
        (b) => /\/c\/[^/]+$/.test(location.hash) && location.hash !== b,
        hash,
        { timeout: 10_000 },
      );
      // The new Conversation loads (its empty state); on a loaded host this can take longer than
      // the clicks above, so the wait is the default one, and a miss says what the chat showed.
      await page.waitForSelector("[data-testid=empty-chat]").catch(async (err) => {
        const shown = await page.evaluate(() =>
          `${location.hash} | ${
            document.querySelector("[data-testid=chat-scroll]")?.textContent?.slice(0, 300) ??
              "no chat view"
          }`
        );
        throw new Error(`no empty chat: ${shown}`, { cause: err });
      });
      // Turn 1 on llama3.2:3b, Turn 2 on deepseek-r1:1.5b (chat only, thinking).
      const labels = await page.$$eval(
        "[data-testid=model-picker] option",
        (o) => o.map((x) => x.textContent ?? ""),
      );
      assert(labels.some((l) => l.includes("gemma3:1b · chat only")), labels.join("|"));
      assert(!labels.some((l) => l.includes("nomic-embed")), "unsupported models are hidden");
      assertEquals(labels.filter((l) => l.startsWith("llama3.2:3b")).length, 1);
      const before = ollama.chats.length;
      ollama.enqueue(sc.text("Answer from llama."), sc.thinking());
      await page.selectOption("[data-testid=model-picker]", "llama3.2:3b");
      await send(page, "first question");
      await page.waitForSelector("[data-testid=turn][data-state=completed]", { timeout: 30_000 });
      await page.selectOption("[data-testid=model-picker]", "deepseek-r1:1.5b");
      await send(page, "second question");
      await page.waitForFunction(
        () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 2,
        undefined,
        { timeout: 30_000 },
      );
      assertEquals(ollama.chats.slice(before).map((c) => c.model), [
        "llama3.2:3b",
        "deepseek-r1:1.5b",
      ]);
      const block = page.locator("[data-testid=reasoning-block]").last();
      assertEquals(await block.evaluate((d) => (d as HTMLDetailsElement).open), false);
      await block.locator("summary").click();
      assertEquals(
        await page.locator("[data-testid=reasoning-text]").last().textContent(),
        "The user greets me. I should answer briefly.",
      );
      const answers = await page.$$eval("[data-testid=turn]", (t) => t.map((x) => x.textContent));
      assert(answers[1]!.includes("Hi there!"));
      await page.screenshot({ path: `${shots}/reasoning-expanded-${scheme}.png` });
      // After a reload every ended Turn still shows the model that answered and its
      // reasoning (from the Run's journal) [MB-14, UI-12].
      await page.reload();
      await page.waitForFunction(
        () => document.querySelectorAll("[data-testid=turn-model]").length === 2,
        undefined,
        { timeout: 20_000 },
      );
      assertEquals(
        await page.$$eval("[data-testid=turn-model]", (t) => t.map((x) => x.textContent)),
        ["llama3.2:3b", "deepseek-r1:1.5b"],
      );
      assertEquals(await page.locator("[data-testid=reasoning-block]").count(), 1);
      await ctx.close();
    }
  } finally {
    await browser.close();
    await server.stop();
    await ollama.close();
  }
});

Deno.test("the Models view opened before the Agent list arrives shows the Agent's settings once it does", async () => {
  const env = await startUiEnv();
  try {
    const ctx = await env.browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await ctx.newPage();
    // Hold the Agent list until the view is open (a loaded machine's order of events).
    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    await page.route("**/api/agents", async (route) => {
      if (route.request().method() === "GET") await held;
      await route.continue();
    });
    await page.goto(`${env.server.url}/`);
    await page.fill("[data-testid=login-token]", readBootstrapToken(env.server.home));
    await page.click("[data-testid=login-submit]");
    await page.waitForSelector("[data-testid=workspace]", { timeout: 15_000 });
    await page.click("[data-testid=open-models]");
    await page.waitForSelector("[data-testid=model-row][data-model='qwen3.5:2b']");
    assertEquals(await page.locator("[data-testid=agent-default-model-select]").count(), 0);
    release();
    await page.waitForSelector("[data-testid=agent-default-model-select]", { timeout: 15_000 });
    assertEquals(
      await page.locator("[data-testid=models-agent] strong").textContent(),
      SYSTEM_AGENT_NAME,
    );
    await ctx.close();
  } finally {
    await env.close();
  }
});
