/**
 * [TL-9, TL-10, TL-12] in a real browser: an approval card offers "Always
 * allow" with the narrowed rule written out and the full diff one click away;
 * Always allow commits the write and the next write in that directory runs
 * without a card, while one in another directory still asks; the Agent
 * panel's Policy tab lists every tool with its decision and why, shows the
 * rule and its audit, refuses relaxing a platform deny with its code and
 * nothing changed, and revokes the rule (after which the directory asks again);
 * the /permissions table offers the same Always allow.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { text, toolCall } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  settled,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";
import { exists } from "../helpers/home.ts";

Deno.test("Always allow from the approval card, the full diff, and the Policy tab", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Policy");
    await createConversation(page);
    const agentId = await page.evaluate(() => /^#\/a\/([^/]+)/.exec(location.hash)![1]);
    const ws = `${env.server.home}/data/agents/${agentId}/workspace`;
    Deno.mkdirSync(`${ws}/notes`, { mode: 0o700 });
    Deno.mkdirSync(`${ws}/src`, { mode: 0o700 });

    // A create of ~7 KiB: its diff is past the 4 KiB preview, so the full diff is one click away.
    const long = Array.from({ length: 200 }, (_, i) => `line ${i} of the meeting notes`).join(
      "\n",
    ) + "\n";
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "notes/a.md", content: long } }]),
      text("Wrote notes/a.md."),
    );
    await send(page, "write the notes");
    const card = await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    assertEquals(
      (await page.textContent("[data-testid=approval-rule]"))?.replace(/\s+/g, " ").trim(),
      "Always allow adds: allow file/write in notes/",
    );
    assert(((await card.textContent()) ?? "").includes("preview truncated"));
    await page.screenshot({ path: `${screenshotDir()}desktop-policy-01-always-allow-card.png` });
    await page.click("[data-testid=approval-show-full]");
    const full = await page.waitForSelector("[data-testid=approval-full-diff]");
    assert(((await full.textContent()) ?? "").includes("+line 199 of the meeting notes"));
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-policy-02-full-diff.png` });

    await page.click("[data-testid=approval-always]");
    await waitForCompletedTurn(page);
    assertEquals(Deno.readTextFileSync(`${ws}/notes/a.md`), long);

    // The next write in notes/ runs without a card.
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "notes/b.md", content: "b\n" } }]),
      text("Wrote notes/b.md."),
    );
    await send(page, "another note");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 2,
      undefined,
      { timeout: 30_000 },
    );
    assertEquals(Deno.readTextFileSync(`${ws}/notes/b.md`), "b\n");

    // One in src/ still asks; deny it.
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "src/c.md", content: "c\n" } }]),
      text("Understood."),
    );
    await send(page, "write into src");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    assertEquals(
      (await page.textContent("[data-testid=approval-rule]"))?.replace(/\s+/g, " ").trim(),
      "Always allow adds: allow file/write in src/",
    );
    await page.click("[data-testid=approval] >> text=Deny");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 3,
      undefined,
      { timeout: 30_000 },
    );
    assertEquals(exists(`${ws}/src/c.md`), false);

    // The Policy tab: every tool with its decision and why; the rule; its audit.
    await page.click("[data-testid=agent-settings]");
    await page.click("[data-testid=agent-tab-policy]");
    await page.waitForSelector("[data-testid=policy-view] [data-testid=policy-rule]");
    const rows = await page.$$eval(
      "[data-testid=policy-tool]",
      (els) => els.map((e) => `${e.getAttribute("data-tool")}:${e.getAttribute("data-decision")}`),
    );
    for (
      const want of [
        "file/read_text:allow",
        "file/write:ask",
        "file/edit:ask",
        "exec/command:ask",
        "exec/apply:ask",
      ]
    ) assert(rows.includes(want), `${want} in ${rows.join(" ")}`);
    assertEquals(
      await page.$$eval(
        "[data-testid=policy-rule]",
        (els) => els.map((e) => e.getAttribute("data-rule")),
      ),
      ["file/write in notes/"],
    );
    const writeRow = await page.textContent("[data-testid=policy-tool][data-tool='file/write']");
    assert(writeRow?.includes("file/write in notes/"), writeRow ?? "");
    assert(writeRow?.includes("file/write under any .git/"), writeRow ?? "");
    assertEquals(
      await page.getAttribute("[data-testid=policy-audit-entry]", "data-source"),
      "always_allow",
    );
    await screenshotsAllSizes(page, "policy-03-view");

    // Relaxing the platform's .git deny is refused with its code; nothing changes.
    await page.fill("[data-testid=policy-add-tool]", "file/write");
    await page.fill("[data-testid=policy-add-prefix]", ".git/hooks");
    await page.click("[data-testid=policy-add-submit]");
    await (await page.waitForSelector("[data-testid=policy-error]")).scrollIntoViewIfNeeded();
    assert(
      ((await page.textContent("[data-testid=policy-error]")) ?? "").includes(
        "policy_platform_deny",
      ),
    );
    assertEquals(await page.$$eval("[data-testid=policy-rule]", (els) => els.length), 1);
    await page.screenshot({ path: `${screenshotDir()}desktop-policy-04-refused.png` });

    // Revoke the rule: the list empties and the change is audited.
    await page.click("[data-testid=policy-rule-remove]");
    await page.waitForSelector("[data-testid=policy-rules-empty]");
    assertEquals(
      await page.$$eval(
        "[data-testid=policy-audit-entry]",
        (els) => els.map((e) => e.getAttribute("data-source")),
      ),
      ["api", "always_allow"],
    );
    await page.keyboard.press("Escape");
    await page.waitForSelector("[data-testid=agent-panel]", { state: "detached" });

    // Revoked: notes/ asks again.
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "notes/d.md", content: "d\n" } }]),
      text("OK."),
    );
    await send(page, "one more note");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await page.click("[data-testid=approval] >> text=Deny");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 4,
      undefined,
      { timeout: 30_000 },
    );
    assertEquals(exists(`${ws}/notes/d.md`), false);

    // The /permissions table offers the same Always allow.
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "src/e.md", content: "e\n" } }]),
      text("Wrote src/e.md."),
    );
    await send(page, "write src/e.md");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await send(page, "/permissions");
    await page.click("[data-testid=permission-row] [data-testid=permission-always]");
    await page.waitForSelector("[data-testid=permissions-empty]", { timeout: 10_000 });
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 5,
      undefined,
      { timeout: 30_000 },
    );
    assertEquals(Deno.readTextFileSync(`${ws}/src/e.md`), "e\n");
    const rules = await page.evaluate(async (id) => {
      const r = await fetch(`/api/agents/${id}/policy`);
      return (await r.json()).rules;
    }, agentId);
    assertEquals(rules, [{ tool: "file/write", decision: "allow", path_prefix: "src" }]);
    // The one failed request is the refused PUT above (the browser logs every 4xx).
    assertEquals(errors.filter((e) => !e.includes("status of 422")), []);
    assertEquals(errors.filter((e) => e.includes("status of 422")).length, 1);
  } finally {
    await env.close();
  }
});
