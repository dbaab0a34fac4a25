/**
 * [LC-6] An Agent bound to an external ACP runner, in real Chromium: the
 * operator binds it in the Agent's settings (the plain "not sandboxed" mark
 * appears there and above the chat), a Turn runs on the scripted ACP agent
 * (official SDK), its permission request is the same inline approval card as
 * a native tool's, and the Run details show its timeline like a native Run.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { launchBrowser, screenshotDir } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/server.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { ACP_AGENT_ARGV } from "../helpers/acp.ts";
import {
  createAgent,
  createConversation,
  ensureNav,
  openLoggedIn,
  send,
  settled,
  type UiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

async function startAcpUiEnv(): Promise<UiEnv> {
  const ollama = await startFakeOllama({});
  const server = await startTestServer({
    args: ["--ollama", ollama.url, "--acp-runner", `scripted=${ACP_AGENT_ARGV.join(" ")}`],
  });
  const browser = await launchBrowser();
  return {
    server,
    ollama,
    browser,
    async close() {
      await browser.close();
      await server.stop();
      await ollama.close();
    },
  };
}

Deno.test("an ACP runner's Turn shows the not-sandboxed mark, a permission card and a native-looking timeline", async () => {
  const env = await startAcpUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Harness");
    await ensureNav(page);
    await page.click("[data-testid=agent-settings]");
    await page.waitForSelector("[data-testid=runner-select]:not([disabled])");
    await page.selectOption("[data-testid=runner-select]", "scripted");
    const inPanel = await page.waitForSelector(
      "[data-testid=agent-panel] [data-testid=runner-notice]",
    );
    assertEquals(
      (await inPanel.textContent())?.trim().replace(/^⚠\s*/, ""),
      "runs on scripted — operator-owned execution, not sandboxed by Agent Builder",
    );
    await page.waitForSelector("[data-testid=runner-command]");
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-40-acp-runner-settings.png` });
    await page.keyboard.press("Escape");
    await page.waitForSelector("[data-testid=agent-panel]", { state: "detached" });

    await createConversation(page);
    const mark = await page.waitForSelector(
      "main [data-testid=runner-notice], [data-testid=runner-notice]",
    );
    assert((await mark.textContent())?.includes("not sandboxed by Agent Builder"));

    await send(page, "permission");
    const card = await page.waitForSelector("[data-testid=approval]", { timeout: 30_000 });
    const shown = await card.textContent() ?? "";
    assert(shown.includes("acp/execute"), shown);
    assert(shown.includes("Run the test suite") && shown.includes("not sandboxed"), shown);
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-41-acp-permission.png` });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    await page.waitForSelector("[data-testid=approval]", { state: "detached" });
    const answer = await page.textContent("[data-testid=turn][data-state=completed]") ?? "";
    assert(answer.includes("Permission outcome: yes."), answer);
    assert(answer.includes("acp:scripted"), `the Turn names the runner that answered: ${answer}`);
    await page.waitForSelector("[data-testid=tool-card]");

    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=run-details]");
    await page.waitForSelector("[data-testid=timeline-event]");
    const timeline = await page.textContent("[data-testid=run-details]") ?? "";
    for (const kind of ["permission.requested", "permission.decided", "tool.call.completed"]) {
      assert(timeline.includes(kind), `${kind} in the timeline: ${timeline.slice(0, 400)}`);
    }
    await page.click("[data-testid=load-runner-access]");
    const row = await page.waitForSelector("[data-testid=runner-access-row]");
    assertEquals(await row.getAttribute("data-decision"), "approved");
    assert((await row.textContent())?.includes("session/request_permission"));
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-42-acp-timeline.png` });
    await page.click("[data-testid=close-details]");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
