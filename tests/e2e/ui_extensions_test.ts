/**
 * [LC-5] in a real Chromium: the operator adds an MCP server (built with the
 * official SDK, on loopback) in the Extensions view, sees its tools (policy
 * ask) and a hostile server's refused tools with reasons and escaped
 * descriptions, enables the server for the Agent, and approves a call from
 * the approval card that names server, tool and arguments; the result
 * reaches the scripted model. Screenshots in test-artifacts/screenshots/.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { launchBrowser, screenshotDir } from "../helpers/browser.ts";
import { readBootstrapToken } from "../helpers/login.ts";
import { startTestServer } from "../helpers/server.ts";
import { startFriendlyPeer, startHostilePeer } from "../helpers/mcp_peers.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import { createConversation, send, waitForCompletedTurn, watchPageErrors } from "./_ui_support.ts";

Deno.test("the Extensions view adds an MCP server, enables it, and a call is approved from its card", async () => {
  const friendly = startFriendlyPeer();
  const hostile = startHostilePeer();
  const ollama = await startFakeOllama();
  const server = await startTestServer({
    args: [
      "--ollama",
      ollama.url,
      "--mcp-allow-ip",
      "127.0.0.1",
      "--mcp",
      `hostile=${hostile.url}/mcp/schemas`,
    ],
  });
  const browser = await launchBrowser();
  const shots = screenshotDir();
  try {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    const errors = watchPageErrors(page);
    await page.goto(`${server.url}/`);
    await page.fill("[data-testid=login-token]", readBootstrapToken(server.home));
    await page.click("[data-testid=login-submit]");
    await page.waitForSelector("[data-testid=workspace]", { timeout: 15_000 });

    await page.click("[data-testid=open-extensions]");
    await page.waitForSelector("[data-testid=extension][data-name=hostile][data-state=ready]", {
      timeout: 20_000,
    });
    await page.fill("[data-testid=extension-name]", "friendly");
    await page.fill("[data-testid=extension-url]", `${friendly.url}/mcp`);
    await page.click("[data-testid=extension-add]");
    const row = "[data-testid=extension][data-name=friendly]";
    await page.waitForSelector(`${row}[data-state=ready]`, { timeout: 20_000 });
    assertEquals(
      await page.$$eval(
        `${row} [data-testid=extension-tool]`,
        (r) => r.map((x) => x.getAttribute("data-tool")),
      ),
      ["mcp/friendly/echo", "mcp/friendly/add", "mcp/friendly/picture"],
    );
    const refused = await page.$$eval(
      "[data-testid=extension][data-name=hostile] [data-testid=extension-refused-tool]",
      (r) => r.map((x) => x.textContent),
    );
    assertEquals(refused, [
      "with_ref: schema_ref",
      "with_oneof: schema_combinator",
      "unbounded: schema_unbounded_array",
      "nested: schema_nested",
      "bad name!: name_invalid",
    ]);
    const inject = await page.textContent(
      "[data-testid=extension-tool][data-tool='mcp/hostile/inject']",
    );
    assert(inject!.includes("\\u{202E}evil"), inject!);
    // A private address outside the allowlist is refused with its fixed code.
    await page.fill("[data-testid=extension-name]", "meta");
    await page.fill("[data-testid=extension-url]", "https://169.254.169.254/mcp");
    await page.click("[data-testid=extension-add]");
    await page.waitForSelector("[data-testid=extensions-error] >> text=mcp_address_refused");
    // The box follows the server's answer to the PUT (a controlled input): click, then wait.
    await page.click(`${row} [data-testid=extension-enable]`);
    await page.waitForFunction(async () => {
      const r = await fetch("/api/agents/00000000-0000-4000-8000-000000000001/extensions");
      return (await r.json()).enabled.join() === "friendly";
    });
    await page.screenshot({ path: `${shots}/extensions-view.png` });
    await page.click("[data-testid=extensions-close]");

    await createConversation(page);
    ollama.enqueue(
      sc.toolCall([{ name: "mcp__friendly__echo", arguments: { text: "from the browser" } }]),
      sc.text("The MCP server echoed it."),
    );
    await send(page, "echo through the extension");
    const card = page.locator("[data-testid=approval]");
    await card.waitFor({ timeout: 30_000 });
    const shown = await card.textContent();
    assert(shown!.includes("mcp/friendly/echo"), shown!);
    assert(shown!.includes("MCP server: friendly"), shown!);
    assert(shown!.includes('{\n  "text": "from the browser"\n}'), shown!);
    assertEquals(friendly.calls.length, 0);
    await page.screenshot({ path: `${shots}/extensions-approval.png` });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    assertEquals(friendly.calls, [{ name: "echo", args: { text: "from the browser" } }]);
    const toolMsg = ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
      m.role === "tool"
    );
    assertEquals(JSON.parse(toolMsg.content).content, "echo: from the browser");
    await page.screenshot({ path: `${shots}/extensions-call-done.png` });
    // The only console error is the refused add's 422 above.
    assertEquals(errors.filter((e) => !e.includes("422")), []);
  } finally {
    await browser.close();
    await server.stop();
    await ollama.close();
    await friendly.close();
    await hostile.close();
  }
});
