/**
 * [UI-1] autoscroll: the chat follows a streaming answer while the operator
 * is at the bottom, stops following when they scroll up (and offers "Back to
 * latest"), and follows again after "Back to latest"; opening a long
 * Conversation lands at the bottom after late layout, and sending brings the
 * new message into view.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import { openAgentState } from "../helpers/agent_state.ts";
import * as store from "../../runtime/store/agent_state_store.ts";
import type { Page } from "../helpers/browser.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const LONG = Array.from(
  { length: 60 },
  (_, i) => `Paragraph ${i}: a line of streamed text that fills the screen.\n`,
).join("\n");

function metrics(page: Page) {
  return page.$eval("[data-testid=chat-scroll]", (el) => ({
    top: el.scrollTop,
    height: el.clientHeight,
    scrollHeight: el.scrollHeight,
  }));
}

Deno.test("autoscroll pauses when the operator scrolls up and resumes with Back to latest", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env, { width: 1000, height: 700 });
    await createAgent(page, "Scroller");
    await createConversation(page);
    env.ollama.enqueue(text(LONG, { frameDelayMs: 15 }));
    await send(page, "a long answer please");

    // Following: once the content overflows, the view stays at the bottom.
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        return el.scrollHeight > el.clientHeight + 200;
      },
      undefined,
      { timeout: 20_000 },
    );
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        return el.scrollHeight - (el.scrollTop + el.clientHeight) < 60;
      },
      undefined,
      { timeout: 10_000 },
    );
    let m = await metrics(page);
    assert(
      m.scrollHeight - (m.top + m.height) < 60,
      `at bottom while following: ${JSON.stringify(m)}`,
    );
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);

    // Scrolling up pauses following and offers Back to latest.
    await page.hover("[data-testid=chat-scroll]");
    await page.mouse.wheel(0, -5000);
    await page.waitForSelector("[data-testid=back-to-latest]");
    const pausedAt = (await metrics(page)).top;
    await page.waitForFunction(
      (h) => document.querySelector("[data-testid=chat-scroll]")!.scrollHeight > h + 100,
      m.scrollHeight,
    );
    m = await metrics(page);
    assertEquals(m.top, pausedAt, "the view did not jump while paused");

    // Back to latest returns to the bottom and follows again, while the answer still streams.
    await page.click("[data-testid=back-to-latest]");
    const clickedAt = (await metrics(page)).scrollHeight;
    // One sample, taken when the content has grown: where the view is and whether it still streams.
    const grown = await (await page.waitForFunction(
      (h) => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        if (el.scrollHeight <= h + 200) return null;
        return {
          gap: el.scrollHeight - (el.scrollTop + el.clientHeight),
          running: document.querySelector("[data-testid=turn][data-state=running]") !== null,
        };
      },
      clickedAt,
    )).jsonValue() as { gap: number; running: boolean };
    assert(grown.running, "the content grew while the answer still streamed");
    assert(grown.gap < 60, `following again: ${JSON.stringify(grown)}`);
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);
    await waitForCompletedTurn(page);
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        return el.scrollHeight - (el.scrollTop + el.clientHeight) < 60;
      },
      undefined,
      { timeout: 10_000 },
    );
    m = await metrics(page);
    assert(m.scrollHeight - (m.top + m.height) < 60, `back at bottom: ${JSON.stringify(m)}`);
    assertEquals(await page.$("[data-testid=back-to-latest]"), null);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

/** Seeds `n` completed Turns; the last answer ends in a long fenced code block. */
function seedLongConversation(home: string, agentId: string, convId: string, n: number) {
  const db = openAgentState(home, agentId);
  try {
    for (let i = 0; i < n; i++) {
      const conv = store.getConversation(db, convId)!;
      const turnId = crypto.randomUUID();
      store.beginTurn(db, {
        conversationId: convId,
        expectedRevision: conv.revision,
        turnId,
        runId: null,
        userMessage: `question ${i}`,
        now: Date.now(),
      });
      const code = Array.from({ length: 40 }, (_, k) => `const line${k} = ${k};`).join("\n");
      const answer = i === n - 1
        ? `The last answer ends in code:\n\n\`\`\`ts\n${code}\n\`\`\``
        : Array.from({ length: 6 }, (_, k) => `Paragraph ${k} of answer ${i}.`).join("\n\n");
      store.finishTurn(db, turnId, { state: "completed", assistantMessage: answer }, Date.now());
    }
  } finally {
    db.close();
  }
}

const gapOf = (page: Page) =>
  page.$eval("[data-testid=chat-scroll]", (el) => el.scrollHeight - el.scrollTop - el.clientHeight);

Deno.test("opening a long conversation with a trailing code block lands at the bottom; sending scrolls to the new message", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env, { width: 1000, height: 700 });
    await createAgent(page, "Long reader");
    await createConversation(page);
    const [, agentId, convId] = /^#\/a\/([^/]+)\/c\/([^/]+)$/.exec(
      await page.evaluate(() => location.hash),
    )!;
    seedLongConversation(env.server.home, agentId, convId, 14);
    await page.reload();
    await page.waitForSelector("[data-testid=turn] .code-copy", { timeout: 15_000 });
    // Late layout (code bars) settled: the view is at the bottom, within 2 px.
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        return el.scrollHeight > el.clientHeight * 3 &&
          el.scrollHeight - el.scrollTop - el.clientHeight <= 2;
      },
      undefined,
      { timeout: 10_000 },
    ).catch(() => {});
    const gap = await gapOf(page);
    assert(gap <= 2, `landed ${gap} px above the bottom`);
    assertEquals(await page.$("[data-testid=back-to-latest]"), null, "not scrolled away");

    // Scrolled away: Back to latest appears; sending brings the new message into view.
    await page.hover("[data-testid=chat-scroll]");
    await page.mouse.wheel(0, -3000);
    await page.waitForSelector("[data-testid=back-to-latest]");
    env.ollama.enqueue(text("Short answer."));
    await send(page, "one more question");
    await page.waitForFunction(
      () => {
        const el = document.querySelector("[data-testid=chat-scroll]")!;
        const msgs = [...document.querySelectorAll("[data-testid=user-message]")];
        const last = msgs.at(-1);
        if (!last || last.textContent !== "one more question") return false;
        const v = el.getBoundingClientRect();
        const r = last.getBoundingClientRect();
        return r.top >= v.top && r.bottom <= v.bottom;
      },
      undefined,
      { timeout: 10_000 },
    );
    await waitForCompletedTurn(page);
    await page.waitForFunction(
      () => !document.querySelector("[data-testid=back-to-latest]"),
      undefined,
      { timeout: 10_000 },
    );
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
