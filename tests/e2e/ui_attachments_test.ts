/**
 * [LC-4, UI-12] Attachments in Chromium: a file dropped on the composer
 * uploads with a visible progress bar (the upload throttled through the
 * DevTools protocol so progress is seen mid-way), the stored path lands in
 * the draft, the sent message names it, and the scripted model extracts it
 * with document/extract_text in a real Run. The paperclip attaches through
 * the file picker; a file over 16 MiB is refused in the browser; the Agent's
 * documents setting turns off from its settings. Screenshots:
 * `desktop-attachments-progress-light.png`, `<size>-attachments-<scheme>.png`,
 * `desktop-documents-setting-light.png`.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { login } from "../helpers/login.ts";
import { text, toolCall } from "../../tools/fake_ollama/scenarios.ts";
import {
  createConversation,
  openLoggedIn,
  screenshotsAllSizes,
  settled,
  startUiEnv,
} from "./_ui_support.ts";

Deno.test("a file dropped on the composer uploads with progress and reaches the model", async () => {
  const env = await startUiEnv();
  const dir = Deno.makeTempDirSync();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createConversation(page);
    // About 1 MiB of HTML: a paragraph and a long comment (turndown drops comments).
    const html = "<h1>Pelican survey</h1><p>Pelicans fish in groups of twelve.</p><!--" +
      "x".repeat(1024 * 1024) + "-->";
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 512 * 1024,
    });
    const dt = await page.evaluateHandle((body) => {
      const d = new DataTransfer();
      d.items.add(new File([body], "pelican survey.html", { type: "text/html" }));
      return d;
    }, html);
    await page.dispatchEvent("[data-testid=composer]", "dragover", { dataTransfer: dt });
    await page.waitForSelector(".composer.composer-drop");
    await page.dispatchEvent("[data-testid=composer]", "drop", { dataTransfer: dt });
    // Mid-way: the bar shows a value between the ends.
    await page.waitForFunction(
      () => {
        const p = document.querySelector<HTMLProgressElement>("[data-testid=attachment-progress]");
        return p !== null && p.value > 0 && p.value < 100;
      },
      undefined,
      { timeout: 20_000 },
    );
    await page.screenshot({ path: `${screenshotDir()}desktop-attachments-progress-light.png` });
    await page.waitForSelector("[data-testid=attachment][data-state=done]", { timeout: 30_000 });
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    const path = "attachments/pelican survey.html";
    assertEquals(
      await page.inputValue("[data-testid=composer-input]"),
      `Attached: ${path}`,
    );
    assertEquals(
      Deno.readTextFileSync(
        `${env.server.home}/data/agents/${await agentId(page)}/workspace/${path}`,
      ),
      html,
    );

    // The paperclip: a second file through the picker; a file over 16 MiB never leaves.
    Deno.writeTextFileSync(`${dir}/notes.md`, "# Notes\n");
    await page.setInputFiles("[data-testid=attach-input]", `${dir}/notes.md`);
    await page.waitForFunction(
      () =>
        document.querySelector<HTMLTextAreaElement>("[data-testid=composer-input]")?.value
          .endsWith("Attached: attachments/notes.md"),
      undefined,
      { timeout: 10_000 },
    );
    const big = await page.evaluateHandle(() => {
      const d = new DataTransfer();
      d.items.add(new File([new Uint8Array(16 * 1024 * 1024 + 1)], "huge.bin"));
      return d;
    });
    await page.dispatchEvent("[data-testid=composer]", "drop", { dataTransfer: big });
    await page.waitForSelector("[data-testid=attachment][data-state=failed] >> text=over 16 MiB");
    await settled(page);
    await screenshotsAllSizes(page, "attachments");

    // Send: the message names the stored path; the model extracts it.
    env.ollama.enqueue(
      toolCall([{ name: "document__extract_text", arguments: { path } }]),
      text("The survey says pelicans fish in groups of twelve."),
    );
    await page.press("[data-testid=composer-input]", "Enter");
    await page.waitForSelector("text=The survey says pelicans fish in groups of twelve.", {
      timeout: 60_000,
    });
    const first = env.ollama.chats.find((c) =>
      c.body.messages.some((m: { content: string }) => m.content.includes(`Attached: ${path}`))
    );
    assert(first !== undefined, "the sent message names the stored path");
    const tool = env.ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
      m.role === "tool"
    );
    assert(tool.content.includes("Pelicans fish in groups of twelve."), tool.content);
    assert(!tool.content.includes("xxxx"), "the comment is not text");

    // The Agent's documents setting: off in its settings, and the API says so.
    await page.click("[data-testid=agent-settings]");
    await page.waitForSelector("[data-testid=documents-toggle]:checked");
    await page.click("[data-testid=documents-toggle]");
    await page.waitForSelector(
      "[data-testid=documents-setting] >> text=document/extract_text is not offered",
    );
    const s = await login(env.server);
    const agent = await (await fetch(
      `${env.server.url}/api/agents/${await agentId(page)}`,
      { headers: s.headers() },
    )).json();
    assertEquals(agent.agent.documents, false);
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-documents-setting-light.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

async function agentId(page: import("../helpers/browser.ts").Page): Promise<string> {
  const m = /\/a\/([^/]+)/.exec(await page.evaluate(() => location.hash));
  return m ? m[1] : "00000000-0000-4000-8000-000000000001";
}
