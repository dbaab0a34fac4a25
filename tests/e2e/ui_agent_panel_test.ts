/**
 * [#18] An Agent's page: the instruction file `agent-builder.md` is edited in
 * the browser with a diff preview, saved through the server's write path and
 * read by the next Run (round trip to the model's request); the read-only
 * workspace browser shows a file the Agent wrote (tree, highlighted text,
 * size and modified time, download). Screenshots at 1440×900 and 390×844,
 * light and dark.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import type { Page } from "../helpers/browser.ts";
import { text, textThenTool } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  ensureNav,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

async function openPanel(page: Page, tab: "settings" | "files") {
  await ensureNav(page);
  await page.click(`[data-testid=agent-${tab}]`);
  await page.waitForSelector("[data-testid=agent-panel]");
}

Deno.test("the instruction file is edited with a diff preview, saved, and read by the next Run", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Instructed");
    const agentId = await (await page.waitForFunction(() => {
      const m = /^#\/a\/([^/]+)/.exec(location.hash);
      return m && m[1] !== "00000000-0000-4000-8000-000000000001" ? m[1] : null;
    })).jsonValue() as string;
    const file = `${env.server.home}/data/agents/${agentId}/workspace/agent-builder.md`;
    await openPanel(page, "settings");
    await page.waitForFunction(() =>
      (document.querySelector<HTMLTextAreaElement>("[data-testid=instructions-input]")?.value ?? "")
        .startsWith("# Agent instructions")
    );
    assertMatch(await page.textContent("[data-testid=agent-default-model]") ?? "", /qwen3\.5:2b/);
    assertMatch(await page.textContent("[data-testid=agent-reasoning]") ?? "", /^(on|off)/);
    const edited = "# Agent instructions\n\nAlways answer like a pirate.\n";
    await page.fill("[data-testid=instructions-input]", edited);
    await page.click("[data-testid=instructions-preview]");
    await page.waitForSelector("[data-testid=instructions-diff]");
    assertMatch(
      await page.textContent("[data-testid=instructions-diff]") ?? "",
      /\+Always answer like a pirate\./,
    );
    assert(Deno.readTextFileSync(file) !== edited, "a preview writes nothing");
    await screenshotsAllSizes(page, "24-agent-settings");
    await page.click("[data-testid=instructions-save]");
    await page.waitForFunction(() =>
      /Saved/.test(document.querySelector("[data-testid=instructions-status]")?.textContent ?? "")
    );
    assertEquals(Deno.readTextFileSync(file), edited);

    // Reopened, the editor shows the saved text; the next Run reads it.
    await page.keyboard.press("Escape");
    await page.waitForSelector("[data-testid=agent-panel]", { state: "detached" });
    await openPanel(page, "settings");
    await page.waitForFunction(
      (t) =>
        document.querySelector<HTMLTextAreaElement>("[data-testid=instructions-input]")?.value ===
          t,
      edited,
    );
    await page.keyboard.press("Escape");
    await createConversation(page);
    env.ollama.enqueue(text("Arr."));
    await send(page, "hello");
    await waitForCompletedTurn(page);
    assert(
      JSON.stringify(env.ollama.chats.at(-1)!.body.messages).includes(
        "Always answer like a pirate.",
      ),
      "the model's request carries the edited instructions",
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("the workspace browser shows a file the Agent wrote, with size, time and download", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Author");
    await createConversation(page);
    const content = "// written by the agent\nexport const answer = 42;\n";
    env.ollama.enqueue(
      textThenTool("Writing `src.ts`.", [{
        name: "file__write",
        arguments: { path: "src.ts", content },
      }]),
      text("Done."),
    );
    await send(page, "write src.ts");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);

    await openPanel(page, "files");
    await page.click("[data-testid=ws-entry][data-path='src.ts']");
    await page.waitForSelector("[data-testid=ws-file-text]");
    assertEquals(await page.textContent("[data-testid=ws-file-text]"), content);
    assertEquals(await page.textContent("[data-testid=ws-file-text] .tok-keyword"), "export");
    assertMatch(
      await page.textContent("[data-testid=ws-file-meta]") ?? "",
      /^\d+ B · modified just now$/,
    );
    const href = await page.getAttribute("[data-testid=ws-download]", "href");
    const downloaded = await page.evaluate(async (h) => await (await fetch(h!)).text(), href);
    assertEquals(downloaded, content);
    await screenshotsAllSizes(page, "25-workspace-browser");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
