/**
 * [LC-3] in a real Chromium: the operator opens the Agent panel's Skills tab,
 * installs a skill archive (built by this test) through the file input with
 * its SHA-256, sees a wrong pin refused with its fixed code, inspects the
 * installed skill (manifest, digest, source), approves a call the scripted
 * model makes from the approval card, and removes the skill. Screenshots in
 * test-artifacts/screenshots/ (desktop-skills-*.png).
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import * as sc from "../../tools/fake_ollama/scenarios.ts";
import { sha256Hex, skillArchive } from "../helpers/skill_archive.ts";
import {
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const SCRIPT = `// Reverses the text it is given.
const { text } = JSON.parse(await new Response(Deno.stdin.readable).text());
console.log([...text].reverse().join(""));
`;

Deno.test("the Skills tab installs a skill by upload, inspects and removes it; a call is approved from its card", async () => {
  const env = await startUiEnv();
  const dir = Deno.makeTempDirSync({ prefix: "ab-skill-ui-" });
  try {
    const archive = skillArchive({
      name: "reverse",
      description: "Reverses a text.",
      args: {
        type: "object",
        properties: { text: { type: "string", description: "Text to reverse.", maxLength: 500 } },
        required: ["text"],
      },
    }, SCRIPT);
    const file = `${dir}/reverse.tar.gz`;
    Deno.writeFileSync(file, archive);
    const digest = await sha256Hex(archive);
    const { page, errors } = await openLoggedIn(env, { width: 1280, height: 900 });
    const shots = screenshotDir();

    await page.click("[data-testid=agent-settings]");
    await page.click("[data-testid=agent-tab-skills]");
    await page.waitForSelector("[data-testid=skills-empty]");
    await page.setInputFiles("[data-testid=skill-file]", file);
    // The browser's own digest of the chosen file is shown.
    await page.waitForSelector(`[data-testid=skill-computed] >> text=${digest}`);
    // A wrong pin: the server refuses with its fixed code, nothing is installed.
    await page.fill("[data-testid=skill-sha]", "0".repeat(64));
    await page.waitForSelector("[data-testid=skill-mismatch]");
    await page.click("[data-testid=skill-install]");
    await page.waitForSelector("[data-testid=skills-error] >> text=skill_digest_mismatch");
    await page.screenshot({ path: `${shots}desktop-skills-refused.png` });
    assertEquals(await page.$("[data-testid=skill]"), null);
    // The right pin installs it.
    await page.fill("[data-testid=skill-sha]", digest);
    await page.waitForSelector("[data-testid=skill-match]");
    await page.click("[data-testid=skill-install]");
    await page.waitForSelector("[data-testid=skill][data-name=reverse]");
    await page.waitForSelector("[data-testid=skills-installed] >> text=reverse");
    assertEquals(await page.$("[data-testid=skills-error]"), null);
    await page.click("[data-testid=skill][data-name=reverse] [data-testid=skill-inspect]");
    await page.waitForSelector("[data-testid=skill-detail]");
    assertEquals(await page.textContent("[data-testid=skill-digest]"), digest);
    assertEquals(await page.textContent("[data-testid=skill-source]"), SCRIPT);
    assert(
      (await page.textContent("[data-testid=skill-manifest]"))!.includes('"name":"reverse"'),
    );
    await page.screenshot({ path: `${shots}desktop-skills-inspect.png`, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: `${shots}mobile-skills-inspect.png` });
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.keyboard.press("Escape");
    await page.waitForSelector("[data-testid=agent-panel]", { state: "detached" });

    // The model calls the skill; the card names it, its digest and the arguments.
    await createConversation(page);
    env.ollama.enqueue(
      sc.toolCall([{ name: "skill__reverse", arguments: { text: "stressed" } }]),
      sc.text("Reversed."),
    );
    await send(page, "reverse stressed");
    const card = page.locator("[data-testid=approval]");
    await card.waitFor({ timeout: 30_000 });
    const shown = (await card.textContent())!;
    assert(shown.includes("skill/reverse"), shown);
    assert(shown.includes(`archive sha256 ${digest}`), shown);
    assert(shown.includes('"text": "stressed"'), shown);
    await page.screenshot({ path: `${shots}desktop-skills-approval.png` });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    const toolMsg = env.ollama.chats.at(-1)!.body.messages.find((m: { role: string }) =>
      m.role === "tool"
    );
    assertEquals(JSON.parse(toolMsg.content).answer, "desserts\n");
    // The tool card shows the answer and how the script ended.
    const tool = page.locator("[data-testid=tool-card][data-tool='skill/reverse']");
    await tool.locator("summary").click();
    assertEquals(await tool.locator("[data-testid=skill-answer]").textContent(), "desserts\n");
    assert(
      (await tool.locator("[data-testid=skill-ended]").textContent())!.startsWith("exit code 0"),
    );
    await page.screenshot({ path: `${shots}desktop-skills-card.png` });

    // Remove it (with the confirmation step).
    await page.click("[data-testid=agent-settings]");
    await page.click("[data-testid=agent-tab-skills]");
    await page.click("[data-testid=skill][data-name=reverse] [data-testid=skill-remove]");
    await page.click("[data-testid=skill-remove-confirm]");
    await page.waitForSelector("[data-testid=skills-empty]");
    await page.screenshot({ path: `${shots}desktop-skills-removed.png` });
    // The only console error is the refused install's 422.
    assertEquals(errors.filter((e) => !e.includes("422")), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
    await env.close();
  }
});
