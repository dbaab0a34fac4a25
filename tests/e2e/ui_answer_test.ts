/**
 * The conversation tells the whole story [UI-10, UI-2, #18]: a tool call shows
 * as a collapsed card where it happened ("file/read_text agent-builder.md ✓
 * 3 ms") that expands to its arguments, result and — for a mutation — its
 * diff and the approval decision with its time; every text block stays in
 * order around the cards, live, after completion and after a reload; GFM task
 * lists render as disabled checkboxes. Screenshots at 1440×900 and 390×844,
 * light and dark.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import type { Page } from "../helpers/browser.ts";
import { text, textThenTool } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  settled,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

/** Kinds of the answer's parts in DOM order: block, tool, answer. */
async function answerParts(page: Page, turnIndex: number): Promise<string[]> {
  return await page.$$eval(
    "[data-testid=turn]",
    (turns, i) =>
      [...turns[i as number].querySelectorAll(
        "[data-testid=assistant-block], [data-testid=tool-card], [data-testid=assistant-markdown]",
      )].map((e) => {
        const id = e.getAttribute("data-testid");
        return id === "tool-card" ? `tool:${e.getAttribute("data-tool")}` : id!;
      }),
    turnIndex,
  );
}

async function shots(page: Page, name: string) {
  for (const scheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await settled(page); // colour transitions end before the capture
    await page.screenshot({ path: `${screenshotDir()}${name}-${scheme}.png` });
  }
  await page.emulateMedia({ colorScheme: "light" });
}

const FINAL = "The instructions are short.\n\n- [x] read the file\n- [ ] act on it\n";

for (
  const vp of [{ name: "desktop", width: 1440, height: 900 }, {
    name: "mobile",
    width: 390,
    height: 844,
  }]
) {
  Deno.test(`tool cards sit between the answer's text blocks, live and after a reload (${vp.name})`, async () => {
    const env = await startUiEnv();
    try {
      const { page, errors } = await openLoggedIn(env, vp);
      await createAgent(page, "Reader");
      await createConversation(page);
      env.ollama.enqueue(
        textThenTool("Let me read **agent-builder.md** first.", [{
          name: "file__read_text",
          arguments: { path: "agent-builder.md" },
        }], { frameDelayMs: 40 }),
        text(FINAL, { frameDelayMs: 40 }),
      );
      await send(page, "what do my instructions say?");
      // Live: the lead block (as Markdown) and the card appear before the Turn ends.
      await page.waitForSelector(
        "[data-testid=turn][data-state=running] [data-testid=tool-card]",
        { timeout: 20_000 },
      );
      await waitForCompletedTurn(page);
      const expected = ["assistant-block", "tool:file/read_text", "assistant-markdown"];
      assertEquals(await answerParts(page, 0), expected, "both blocks with the card between");
      assertEquals(
        await page.textContent("[data-testid=assistant-block] strong"),
        "agent-builder.md",
      );

      const card = "[data-testid=tool-card]";
      assertEquals(await page.$eval(card, (d) => (d as HTMLDetailsElement).open), false);
      assertMatch(
        (await page.textContent(`${card} summary`))!.replace(/\s+/g, " ").trim(),
        /^file\/read_text agent-builder\.md ✓ \d+(\.\d)? m?s$/,
      );
      assert(!(await page.isVisible(`${card} [data-testid=tool-args]`)), "collapsed by default");
      await page.click(`${card} summary`);
      await page.waitForSelector(`${card} [data-testid=tool-args]`, { state: "visible" });
      const args = JSON.parse(await page.textContent(`${card} [data-testid=tool-args]`) ?? "");
      assertEquals(args, { path: "agent-builder.md" });
      assert((await page.textContent(`${card} [data-testid=tool-result]`) ?? "").length > 0);

      // GFM task items are disabled checkboxes.
      const boxes = await page.$$eval(
        "[data-testid=assistant-markdown] input[type=checkbox]",
        (els) =>
          els.map((e) => [(e as HTMLInputElement).checked, (e as HTMLInputElement).disabled]),
      );
      assertEquals(boxes, [[true, true], [false, true]]);
      assert(!(await page.textContent("[data-testid=assistant-markdown]"))!.includes("[ ]"));
      await shots(page, `${vp.name}-20-tool-card`);

      // After a reload the journal brings back the same story.
      await page.reload();
      await page.waitForSelector(
        "[data-testid=turn][data-state=completed] [data-testid=tool-card]",
        {
          timeout: 15_000,
        },
      );
      assertEquals(await answerParts(page, 0), expected, "after reload");
      assertEquals(errors, []);
    } finally {
      await env.close();
    }
  });
}

Deno.test("a mutation's card shows its diff and the approval decision with its time, kept after the decision", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Writer");
    await createConversation(page);
    env.ollama.enqueue(
      textThenTool("Writing it now.", [{
        name: "file__write",
        arguments: { path: "notes.md", content: "hello from the card\n" },
      }]),
      text("Saved."),
    );
    await send(page, "save a note");
    await page.waitForSelector("[data-testid=tool-card][data-status=awaiting]", {
      timeout: 20_000,
    });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    const card = "[data-testid=tool-card][data-tool='file/write']";
    await page.click(`${card} summary`);
    const approval = await page.textContent(`${card} [data-testid=tool-approval]`) ?? "";
    assertMatch(approval.replace(/\s+/g, " ").trim(), /^Approved \d\d:\d\d:\d\d$/);
    assertMatch(
      await page.textContent(`${card} [data-testid=tool-diff]`) ?? "",
      /\+hello from the card/,
    );
    await page.screenshot({ path: `${screenshotDir()}desktop-21-tool-card-approval.png` });

    // Run details read like the card: tool events titled by tool and path, times since the start,
    // payloads laid out without escapes.
    await page.click("[data-testid=turn] >> text=Run details");
    const subject = await page.waitForSelector(
      "[data-testid=timeline-event][data-kind='tool.call.requested'] [data-testid=timeline-subject]",
    );
    assertEquals(await subject.textContent(), "file/write notes.md");
    assertMatch(
      await page.textContent(
        "[data-testid=timeline-event][data-kind='tool.call.requested'] [data-testid=timeline-time]",
      ) ?? "",
      /^\+\d+(\.\d+)? m?s$/,
    );
    await page.click("[data-testid=timeline-event][data-kind='tool.call.requested']");
    const payload = await page.textContent("[data-testid=inspector-payload]") ?? "";
    assert(payload.includes("content: |") && !payload.includes("\\n"), payload);
    await page.screenshot({ path: `${screenshotDir()}desktop-26-run-details-readable.png` });
    await page.click("[data-testid=close-details]");
    await page.reload();
    await page.waitForSelector(`${card}[data-status=ok]`, { timeout: 15_000 });
    await page.click(`${card} summary`);
    assertMatch(
      (await page.textContent(`${card} [data-testid=tool-approval]`) ?? "").trim(),
      /^Approved/,
      "the decided approval stays in the Turn as a record",
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
