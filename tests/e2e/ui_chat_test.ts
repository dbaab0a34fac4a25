/**
 * The main path in real Chromium against the real server and the scripted
 * Ollama [UI-1..4, SC-1]: log in, create an Agent and a Conversation, send a
 * message and watch it stream as text and then render as Markdown, inspect
 * the Run's events in the timeline, and run `/status` without creating a Turn.
 */
import { assert, assertEquals, assertMatch } from "../helpers/assert.ts";
import { text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  expectDraft,
  openLoggedIn,
  send,
  startUiEnv,
  turnCount,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const ANSWER = [
  "Here is a **bold** claim and a list:",
  "",
  "- first item",
  "- second item",
  "",
  "```ts",
  "const answer = 42;",
  "```",
  "",
  "See [the docs](https://example.org/docs) for more.",
].join("\n");

Deno.test("an operator logs in, creates an agent and a conversation, and watches an answer stream and render", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "UI test agent");
    await createConversation(page);
    assertEquals(await page.isVisible("[data-testid=empty-chat]"), true);

    env.ollama.enqueue(text(ANSWER, { frameDelayMs: 120 }));
    // Shift+Enter adds a line; Enter sends; the composer empties once the Turn is admitted.
    await page.fill("[data-testid=composer-input]", "Tell me something");
    await page.press("[data-testid=composer-input]", "Shift+Enter");
    await page.type("[data-testid=composer-input]", "with two lines");
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 0);
    await page.press("[data-testid=composer-input]", "Enter");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=composer-input]") as HTMLTextAreaElement).value === ""
    );
    const user = await page.waitForSelector("[data-testid=user-message]");
    assertEquals(await user.textContent(), "Tell me something\nwith two lines");

    // While running: a visible stop and live deltas rendered as Markdown already [UI-2 revised],
    // through the same sanitizer (no raw "**" left on screen).
    await page.waitForSelector("[data-testid=turn][data-state=running] [data-testid=stop-run]");
    const liveBold = await page.waitForFunction(() => {
      const turn = document.querySelector("[data-testid=turn][data-state=running]");
      const strong = turn?.querySelector(
        "[data-testid=live-text] [data-testid=live-markdown] strong",
      );
      return strong ? strong.textContent : null;
    });
    assertEquals(await liveBold.jsonValue(), "bold", "live deltas are Markdown");

    // Completed: sanitized Markdown with structure, a code block with a copy button, safe link.
    await waitForCompletedTurn(page);
    const md = "[data-testid=assistant-markdown]";
    assertEquals(await page.textContent(`${md} strong`), "bold");
    assertEquals(await page.$$eval(`${md} li`, (els) => els.map((e) => e.textContent)), [
      "first item",
      "second item",
    ]);
    assertEquals(await page.textContent(`${md} pre code`), "const answer = 42;\n");
    assert(await page.isVisible(`${md} .code-copy`), "copy button");
    assertEquals(
      await page.getAttribute(`${md} a`, "rel"),
      "noopener noreferrer nofollow",
    );
    assertEquals(await page.getAttribute(`${md} a`, "href"), "https://example.org/docs");
    assertEquals(await page.$("[data-testid=stop-run]"), null);
    // The untitled conversation is named after its first message (control characters flattened).
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=conversation-title]")?.textContent ===
        "Tell me something with two lines"
    );

    // The context meter shows the next-turn projection.
    await page.waitForFunction(() =>
      /(≈|exact )[\d.]+k? \/ [\d.]+k?, \d+% left|unavailable/.test(
        document.querySelector("[data-testid=context-meter]")?.textContent ?? "",
      )
    );

    // Run details: the timeline shows this Run's canonical events in seq order.
    await page.click("text=Run details >> nth=1");
    await page.waitForSelector("[data-testid=run-details] [data-testid=timeline-event]");
    const kinds = await page.$$eval(
      "[data-testid=timeline-event]",
      (els) => els.map((e) => e.getAttribute("data-kind")),
    );
    assertEquals(kinds[0], "run.started");
    assertEquals(kinds.at(-1), "run.completed");
    assert(kinds.includes("model.request.started") && kinds.includes("model.response.finished"));
    assert(!kinds.includes("assistant.block.delta"), "deltas are never durable");
    await page.click("[data-testid=timeline-next]");
    const inspector = await page.textContent("[data-testid=inspector]");
    assertMatch(inspector ?? "", /Derived facts[\s\S]*Payload[\s\S]*Full envelope/);
    await page.click("[data-testid=load-context]");
    await page.waitForSelector("[data-testid=run-details] details[open] pre");

    // After a reload the finished Run's timeline comes from the validated replay.
    await page.reload();
    await page.waitForSelector("[data-testid=assistant-markdown]");
    await page.click("[data-testid=toggle-details]");
    await page.waitForSelector("[data-testid=run-details] [data-testid=timeline-event]");
    const replayed = await page.$$eval(
      "[data-testid=timeline-event]",
      (els) => els.map((e) => e.getAttribute("data-kind")),
    );
    assertEquals(replayed, kinds);
    await page.click("[data-testid=close-details]");

    // A slash command runs without creating a Turn or calling the model.
    const turnsBefore = await turnCount(page);
    const chatsBefore = env.ollama.chats.length;
    // The help panel lists every command with its schema; Tab completes a partial name.
    await page.fill("[data-testid=composer-input]", "/");
    const help = await page.waitForSelector("[data-testid=command-help]");
    assertMatch(await help.textContent() ?? "", /\/context \[run_id\][\s\S]*run_id \(optional\)/);
    await page.fill("[data-testid=composer-input]", "/sta");
    await page.press("[data-testid=composer-input]", "Tab");
    await expectDraft(page, "/status", "Tab completes the command name");
    await page.press("[data-testid=composer-input]", "Enter");
    const result = await page.waitForSelector("[data-testid=command-result]");
    assertMatch(await result.textContent() ?? "", /Status[\s\S]*UI test agent[\s\S]*Active run/);
    assertEquals(await turnCount(page), turnsBefore);
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 1);
    assertEquals(env.ollama.chats.length, chatsBefore);
    assertEquals(errors, []);
    // A message over 8192 UTF-8 bytes stays in the composer with its size; Send and Enter do
    // nothing (a sent one would log a 413 before the 404 below, and leave a toast).
    const tooLong = "é".repeat(4097);
    await page.fill("[data-testid=composer-input]", tooLong);
    await page.waitForSelector("[data-testid=byte-count].over >> text=2 bytes over");
    assert(await page.isDisabled("[data-testid=send]"), "Send is disabled over the limit");
    await page.press("[data-testid=composer-input]", "Enter");
    await expectDraft(page, tooLong, "the over-long draft is kept");
    await page.fill("[data-testid=composer-input]", "x".repeat(8192));
    await page.waitForSelector("[data-testid=byte-count]:not(.over) >> text=8,192 / 8,192 bytes");
    assertEquals(await page.isDisabled("[data-testid=send]"), false);
    // An unknown command is refused with its fixed code (a 404 the browser logs).
    await send(page, "/nope");
    await page.waitForSelector("[data-testid=error-toast] >> text=command_unknown");
    assertEquals(errors.length, 1);
    assertMatch(errors[0], /status of 404/);
    assertEquals(await page.$("[data-testid=error-toast] >> text=message_too_large"), null);
    assertEquals(await turnCount(page), turnsBefore);
  } finally {
    await env.close();
  }
});
