/**
 * Controlling a live Run from the browser [UI-1, UI-2, UI-4, EV-3]: the Stop
 * button and the Esc key cancel the active Run (the Turn shows its safe
 * terminal summary and "Retry" refills the draft), and reloading the page
 * while a Run streams re-attaches to it and sees it finish.
 */
import { assertEquals, assertMatch } from "../helpers/assert.ts";
import { inBandError, text } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  expectDraft,
  openLoggedIn,
  screenshotsAllSizes,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

const SLOW = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");

Deno.test("Stop, Esc and /stop cancel the active run, and Retry refills the draft", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Stopper");
    await createConversation(page);

    env.ollama.enqueue(text(SLOW, { frameDelayMs: 150 }));
    await send(page, "please stream slowly");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=live-text]")?.textContent ?? "").includes("word1")
    );
    await page.click("[data-testid=stop-run]");
    const stopped = await page.waitForSelector(
      "[data-testid=turn][data-state=cancelled] [data-testid=turn-stopped]",
      { timeout: 15_000 },
    );
    // The operator's own Stop is quiet: no warning card, not "retryable".
    assertMatch(await stopped.textContent() ?? "", /Stopped/);
    assertEquals(await page.$("[data-testid=turn-terminal]"), null);
    // What was shown stays, and is never shown as a committed answer.
    const kept = await page.waitForSelector("[data-testid=partial-text]", { timeout: 10_000 });
    assertMatch(await kept.textContent() ?? "", /word0 word1/);
    assertEquals(await page.$("[data-testid=assistant-markdown]"), null);
    await screenshotsAllSizes(page, "28-stopped");
    await page.click("[data-testid=retry]");
    await expectDraft(page, "please stream slowly", "Retry refills the draft");
    // ... and gives the composer the focus, so Enter sends it again.
    await page.waitForFunction(
      () => document.activeElement?.getAttribute("data-testid") === "composer-input",
      null,
      { timeout: 10_000 },
    );

    env.ollama.enqueue(text(SLOW, { frameDelayMs: 150 }));
    await page.keyboard.press("Enter");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=turn]:last-child [data-testid=live-text]")
        ?.textContent ?? "").includes("word1")
    );
    // The stopped Turn's partial text is shown, never history: the next request lacks it.
    const request = JSON.stringify(env.ollama.chats.at(-1)!.body.messages);
    assertEquals(request.includes("please stream slowly"), true);
    assertEquals(request.includes("word0 word1"), false, "partial text is not model history");
    // Esc in the timeline's filter field clears the filter; it does not stop the Run.
    const cancels: string[] = [];
    page.on("request", (r) => r.url().endsWith("/cancel") && cancels.push(r.url()));
    await page.click("[data-testid=toggle-details]");
    await page.fill("[data-testid=timeline-filter]", "model");
    await page.press("[data-testid=timeline-filter]", "Escape");
    await page.click("[data-testid=close-details]");
    // Streaming went on (or, were the Run stopped, it ended): then count the cancel requests.
    await page.waitForFunction(() => {
      const last = document.querySelector("[data-testid=turn]:last-child");
      return last?.getAttribute("data-state") !== "running" ||
        (last.querySelector("[data-testid=live-text]")?.textContent ?? "").includes("word4");
    });
    assertEquals(cancels, [], "Esc in an input field sent no cancel");
    await page.focus("[data-testid=composer-input]");
    await page.keyboard.press("Escape");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=cancelled]").length === 2,
      undefined,
      { timeout: 15_000 },
    );

    // The /stop alias works from the composer while the Run streams (a command, not a Turn).
    env.ollama.enqueue(text(SLOW, { frameDelayMs: 150 }));
    await send(page, "third try");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=turn]:last-child [data-testid=live-text]")
        ?.textContent ?? "").includes("word1")
    );
    await send(page, "/status");
    await page.waitForSelector("[data-testid=command-result] >> text=Active run");
    const status = await page.textContent("[data-testid=command-result]") ?? "";
    assertMatch(status, /Active run[0-9a-f-]{36}/);
    await send(page, "/stop");
    await page.waitForSelector("[data-testid=command-result] >> text=Cancel requested");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=cancelled]").length === 3,
      undefined,
      { timeout: 15_000 },
    );
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 3);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("reloading the page during a run re-attaches to it and shows the finished answer", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Reloader");
    await createConversation(page);
    env.ollama.enqueue(text(`Start ${SLOW} **end**`, { frameDelayMs: 120 }));
    await send(page, "stream while I reload");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=live-text]")?.textContent ?? "").includes("word3")
    );
    await page.reload();
    // Same conversation (from the URL), the running Turn, and live text again.
    await page.waitForSelector("[data-testid=turn][data-state=running]", { timeout: 10_000 });
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=live-text]")?.textContent ?? "").length > 0
    );
    await waitForCompletedTurn(page);
    assertEquals(await page.textContent("[data-testid=assistant-markdown] strong"), "end");
    assertEquals(await page.textContent("[data-testid=user-message]"), "stream while I reload");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("a failed turn keeps the text it showed above its safe code, stage and duration", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Failing");
    await createConversation(page);
    env.ollama.enqueue(inBandError());
    await send(page, "this will fail");
    const terminal = await page.waitForSelector(
      "[data-testid=turn][data-state=failed] [data-testid=turn-terminal]",
      { timeout: 20_000 },
    );
    const summary = await terminal.textContent() ?? "";
    assertMatch(summary, /Failed/);
    assertMatch(summary, /model_[a-z_]+/);
    assertMatch(summary, /stage \S+/);
    // The code is explained in plain words, not only shown.
    const why = await page.textContent("[data-testid=turn-terminal-text]") ?? "";
    assertMatch(why, /^The model .+\.$/);
    // The partial text stays, marked as partial, never as the committed answer.
    assertEquals((await page.textContent("[data-testid=partial-text]"))?.trim(), "Partial");
    assertEquals(await page.$("[data-testid=assistant-markdown]"), null);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("logging out in another tab sends a page that watches a live run back to the login page", async () => {
  const env = await startUiEnv();
  try {
    const { page } = await openLoggedIn(env);
    await createAgent(page, "Two tabs");
    await createConversation(page);
    env.ollama.enqueue(text(SLOW, { frameDelayMs: 150 }));
    await send(page, "stream while the other tab logs out");
    await page.waitForFunction(() =>
      (document.querySelector("[data-testid=live-text]")?.textContent ?? "").includes("word1")
    );
    // Same browser, same cookie: the second tab's Log out ends the session for both.
    const other = await page.context().newPage();
    await other.goto(`${env.server.url}/`);
    await other.click("[data-testid=logout]");
    await other.waitForSelector("[data-testid=login-page]");
    // The first tab's stream is cut and refused: it shows the login page, not "Connection lost".
    await page.waitForSelector("[data-testid=login-page]", { timeout: 15_000 });
  } finally {
    await env.close();
  }
});

Deno.test("a conversation re-read that answers after the operator moved on never lands in the conversation open now", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Mover");
    await createConversation(page); // B: stays empty
    await createConversation(page); // A: gets a Turn
    const aId = (await page.evaluate(() => location.hash)).split("/c/")[1];
    // A's re-read at the end of its Run is slow; every other request is not.
    const reRead = new RegExp(`/sessions/${aId}$`);
    await page.route(reRead, async (route) => {
      await new Promise((r) => setTimeout(r, 3000));
      await route.continue();
    });
    env.ollama.enqueue(text("Answer for A.", { frameDelayMs: 20 }));
    const reReadSent = page.waitForRequest(reRead, { timeout: 20_000 });
    const reReadDone = page.waitForResponse(reRead, { timeout: 20_000 });
    await send(page, "question in A");
    await reReadSent; // A's Run ended and its page is being re-read
    await (await page.$$("[data-testid=conversation-item]"))[1].click(); // B (list is newest first)
    await page.waitForSelector("[data-testid=empty-chat]");
    await reReadDone;
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50))));
    assertEquals(await page.$$eval("[data-testid=turn]", (t) => t.length), 0, "B shows no Turn");
    assertEquals(await page.isVisible("[data-testid=empty-chat]"), true);
    await page.unroute(reRead);
    // A still has its answer.
    await (await page.$$("[data-testid=conversation-item]"))[0].click();
    await page.waitForSelector("[data-testid=assistant-markdown] >> text=Answer for A.");
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("a Stop that reaches the server after the run finished shows no error", async () => {
  const env = await startUiEnv();
  try {
    const { page } = await openLoggedIn(env);
    await createAgent(page, "Late stop");
    await createConversation(page);
    // The cancel request is held until the Run has completed: the server then answers 409.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/cancel", async (route) => {
      await held;
      await route.continue();
    });
    // Long enough (~2 s) that the Stop click lands while the Run still streams, even under load.
    env.ollama.enqueue(text(`An answer that finishes anyway: ${SLOW.slice(0, 200)}`, {
      frameDelayMs: 50,
    }));
    await send(page, "stop me too late");
    await page.waitForSelector("[data-testid=turn][data-state=running] [data-testid=stop-run]");
    const answered = page.waitForResponse("**/cancel");
    await page.click("[data-testid=stop-run]");
    await waitForCompletedTurn(page);
    release();
    assertEquals((await answered).status(), 409);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 100))));
    assertEquals(await page.$("[data-testid=error-toast]"), null, "no error for a finished run");
  } finally {
    await env.close();
  }
});
