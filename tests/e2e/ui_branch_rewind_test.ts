/**
 * [UI-8, TL-11] in a real browser: editing a past message and sending makes a
 * new branch (the original stays), regenerating makes another, and ‹ i/n ›
 * moves between them in place; "Rewind to here" from a Turn's menu shows the
 * plan (a file changed outside is listed as left alone), and confirmed
 * restores the files and opens the branch before that Turn.
 */
import { assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { text, toolCall } from "../../tools/fake_ollama/scenarios.ts";
import type { Page } from "../helpers/browser.ts";
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

/** Waits until the open Conversation shows exactly these user messages, the last completed. */
async function waitForMessages(page: Page, want: string[]): Promise<void> {
  await page.waitForFunction(
    (w) => {
      const turns = [...document.querySelectorAll("[data-testid=turn]")];
      const msgs = turns.map((t) => t.querySelector("[data-testid=user-message]")?.textContent);
      const last = turns.at(-1)?.getAttribute("data-state");
      return JSON.stringify(msgs) === JSON.stringify(w) && last === "completed";
    },
    want,
    { timeout: 45_000 },
  );
}

async function waitForPos(page: Page, pos: string): Promise<void> {
  await page.waitForFunction(
    (p) => document.querySelector("[data-testid=branch-pos]")?.textContent === p,
    pos,
    { timeout: 20_000 },
  );
}

Deno.test("edit a past message and regenerate make branches that ‹ i/n › navigates", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Brancher");
    await createConversation(page);
    env.ollama.enqueue(text("First answer."));
    await send(page, "first question");
    await waitForCompletedTurn(page);
    env.ollama.enqueue(text("Second answer."));
    await send(page, "second question");
    await waitForMessages(page, ["first question", "second question"]);
    const original = await page.evaluate(() => location.hash);

    // Edit the second message: the inline editor, then Send makes a branch.
    await (await page.$$("[data-testid=edit-message]"))[1].click();
    await page.fill("[data-testid=edit-text]", "second question, edited");
    await page.screenshot({ path: `${screenshotDir()}desktop-20-edit-message.png` });
    env.ollama.enqueue(text("Edited answer."));
    await page.click("[data-testid=edit-send]");
    await waitForMessages(page, ["first question", "second question, edited"]);
    await waitForPos(page, "2/2");
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-21-branch-2-of-2.png` });
    await screenshotsAllSizes(page, "27-branch-nav");

    // ‹ goes back to the original, in place; › returns.
    await page.click("[data-testid=branch-prev]");
    await waitForMessages(page, ["first question", "second question"]);
    await waitForPos(page, "1/2");
    assertEquals(await page.evaluate(() => location.hash), original);
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-22-branch-1-of-2.png` });
    await page.click("[data-testid=branch-next]");
    await waitForMessages(page, ["first question", "second question, edited"]);

    // Regenerate the edited answer: a third alternative of the same message.
    // The Turn menu closes on Escape (and when focus leaves it).
    await (await page.$$("[data-testid=turn-menu]"))[1].click();
    await page.waitForSelector("[data-testid=menu-regenerate]");
    await page.keyboard.press("Escape");
    await page.waitForSelector("[data-testid=menu-regenerate]", { state: "detached" });
    env.ollama.enqueue(text("Regenerated answer."));
    await (await page.$$("[data-testid=turn-menu]"))[1].click();
    await page.click("[data-testid=menu-regenerate]");
    await waitForPos(page, "3/3");
    await waitForMessages(page, ["first question", "second question, edited"]);
    await page.waitForSelector("text=Regenerated answer.");
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-23-regenerated-3-of-3.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("rewind to here shows the plan, restores the files and opens the branch", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Rewinder");
    await createConversation(page);
    const agentId = await page.evaluate(() => /^#\/a\/([^/]+)/.exec(location.hash)![1]);
    const ws = `${env.server.home}/data/agents/${agentId}/workspace`;
    Deno.writeTextFileSync(`${ws}/notes.md`, "original notes\n", { mode: 0o600 });
    const approveUntil = async (n: number) => {
      for (;;) {
        const done = await page.$$eval(
          "[data-testid=turn][data-state=completed]",
          (t) => t.length,
        );
        if (done >= n) return;
        const card = await page.waitForSelector(
          `[data-testid=approval], [data-testid=turn][data-state=completed]:nth-of-type(${n})`,
          { timeout: 45_000 },
        );
        if ((await card.getAttribute("data-testid")) === "approval") {
          await page.click("[data-testid=approval] >> text=Approve");
          await card.waitForElementState("hidden").catch(() => {});
        }
      }
    };
    env.ollama.enqueue(
      toolCall([{ name: "file__read_text", arguments: { path: "notes.md" } }]),
      toolCall([{ name: "file__write", arguments: { path: "notes.md", content: "turn one\n" } }]),
      text("Rewrote notes.md."),
    );
    await send(page, "rewrite notes.md");
    await approveUntil(1);
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "todo.md", content: "- a\n" } }]),
      toolCall([{ name: "file__write", arguments: { path: "log.md", content: "log\n" } }]),
      text("Created todo.md and log.md."),
    );
    await send(page, "create todo.md and log.md");
    await approveUntil(2);
    assertEquals(Deno.readTextFileSync(`${ws}/notes.md`), "turn one\n");
    // The operator edits log.md by hand afterwards: a rewind must leave it alone.
    Deno.writeTextFileSync(`${ws}/log.md`, "my own log\n");

    await (await page.$$("[data-testid=turn-menu]"))[0].click();
    await page.click("[data-testid=menu-rewind]");
    await page.waitForSelector("[data-testid=rewind-file]");
    const plan = await page.$$eval(
      "[data-testid=rewind-file]",
      (li) =>
        li.map((l) => `${l.querySelector("code")?.textContent}:${l.getAttribute("data-status")}`),
    );
    assertEquals(plan, ["log.md:changed_since", "notes.md:revert", "todo.md:revert"]);
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-24-rewind-plan.png` });
    await screenshotsAllSizes(page, "28-rewind-plan");
    const before = await page.evaluate(() => location.hash);
    await page.click("[data-testid=rewind-confirm]");
    await page.waitForSelector("text=Rewound");
    assertEquals(Deno.readTextFileSync(`${ws}/notes.md`), "original notes\n");
    assertEquals(Deno.readTextFileSync(`${ws}/log.md`), "my own log\n");
    let todo = true;
    try {
      Deno.statSync(`${ws}/todo.md`);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      todo = false;
    }
    assertEquals(todo, false);
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-25-rewind-done.png` });
    await page.click("[data-testid=rewind-close]");
    // The branch before the first Turn is open (empty), the original one ‹ away.
    await page.waitForFunction((b) => location.hash !== b, before, { timeout: 10_000 });
    await page.waitForSelector("[data-testid=branch-pending]");
    await waitForPos(page, "2/2");
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-26-rewound-branch.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("‹ opens the alternative in place: at the Turn where it diverges, not at the bottom", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env, { width: 1200, height: 700 });
    await createAgent(page, "InPlace");
    await createConversation(page);
    const long = Array.from({ length: 12 }, (_, i) => `- line ${i + 1}`).join("\n");
    const questions = ["q1", "q2", "q3", "q4", "q5"];
    // Each send waits for its own Turn (a send while one runs would be refused).
    for (let i = 0; i < questions.length; i++) {
      env.ollama.enqueue(text(`Answer to ${questions[i]}:\n\n${long}`));
      await send(page, questions[i]);
      await waitForMessages(page, questions.slice(0, i + 1));
    }
    // Edit q2: the branch holds q1 and the edited q2 only.
    await (await page.$$("[data-testid=edit-message]"))[1].click();
    await page.fill("[data-testid=edit-text]", "q2 edited");
    env.ollama.enqueue(text("Short."));
    await page.click("[data-testid=edit-send]");
    await waitForMessages(page, ["q1", "q2 edited"]);
    await waitForPos(page, "2/2");
    await page.click("[data-testid=branch-prev]");
    await waitForMessages(page, questions);
    // q2 of the original is in view and the chat is not at its bottom.
    const view = await (await page.waitForFunction(
      () => {
        const chat = document.querySelector("[data-testid=chat-scroll]")!;
        const turns = document.querySelectorAll("[data-testid=turn]");
        const box = chat.getBoundingClientRect();
        const q2 = turns[1].getBoundingClientRect();
        const atBottom = chat.scrollHeight - chat.scrollTop - chat.clientHeight < 4;
        const q2Visible = q2.top >= box.top - 1 && q2.top < box.bottom;
        return q2Visible && !atBottom ? { q2Visible, atBottom } : false;
      },
      undefined,
      { timeout: 10_000 },
    ).catch(() => null))?.jsonValue();
    assertEquals(view, { q2Visible: true, atBottom: false });
    await settled(page);
    await page.screenshot({ path: `${screenshotDir()}desktop-29-branch-in-place.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
