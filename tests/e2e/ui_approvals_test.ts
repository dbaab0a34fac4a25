/**
 * [UI-4, TL-2] a pending approval appears inline above the composer with its
 * bounded preview; Approve lets the Run commit the write, Deny refuses it and
 * leaves the workspace untouched.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { screenshotDir } from "../helpers/browser.ts";
import { text, toolCall } from "../../tools/fake_ollama/scenarios.ts";
import {
  createAgent,
  createConversation,
  openLoggedIn,
  send,
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";
import { exists } from "../helpers/home.ts";

Deno.test("an inline approval card gates a file write: approve commits, deny refuses", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Writer");
    await createConversation(page);
    const agentId = await page.evaluate(() => /^#\/a\/([^/]+)/.exec(location.hash)![1]);
    const ws = `${env.server.home}/data/agents/${agentId}/workspace`;

    env.ollama.enqueue(
      toolCall([{
        name: "file__write",
        arguments: { path: "notes.md", content: "hello from the UI\n" },
      }]),
      text("Created **notes.md**."),
    );
    await send(page, "create notes.md");
    const card = await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    const preview = await card.textContent() ?? "";
    assert(preview.includes("file/write") && preview.includes("hello from the UI"), preview);
    assertEquals(exists(`${ws}/notes.md`), false, "nothing written before approval");
    await page.screenshot({ path: `${screenshotDir()}desktop-08-approval.png` });
    // From another Conversation the waiting one is marked in the list, so it is not missed.
    await createConversation(page);
    assertEquals(await page.$("[data-testid=approval]"), null, "the card stays with its run");
    const marks = await (await page.waitForFunction(
      () => {
        const m = [...document.querySelectorAll("[data-testid=conversation-item]")]
          .map((i) => i.querySelector("[data-testid=needs-approval]") !== null).join();
        return m === "false,true" ? m : false;
      },
      undefined,
      { timeout: 10_000 },
    ).catch(() => null))?.jsonValue();
    assertEquals(marks, "false,true", "only the waiting Conversation is marked");
    await page.screenshot({ path: `${screenshotDir()}desktop-08-approval-elsewhere.png` });
    await (await page.$$("[data-testid=conversation-item]"))[1].click();
    await page.waitForSelector("[data-testid=approval]");
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    assertEquals(Deno.readTextFileSync(`${ws}/notes.md`), "hello from the UI\n");
    await page.waitForSelector("[data-testid=approval]", { state: "detached" });
    await page.waitForSelector("[data-testid=needs-approval]", { state: "detached" });

    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "other.md", content: "no\n" } }]),
      text("Understood."),
    );
    await send(page, "create other.md");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await page.click("[data-testid=approval] >> text=Deny");
    await page.waitForFunction(
      () => document.querySelectorAll("[data-testid=turn][data-state=completed]").length === 2,
      undefined,
      { timeout: 20_000 },
    );
    assertEquals(exists(`${ws}/other.md`), false);
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});

Deno.test("approvals come from the run stream: no polling, and a decision made elsewhere clears the card", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    const listReads: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "GET" && /\/permissions$/.test(new URL(r.url()).pathname)) {
        listReads.push(r.url());
      }
    });
    await createAgent(page, "Streamer");
    await createConversation(page);
    env.ollama.enqueue(
      toolCall([{ name: "file__write", arguments: { path: "a.md", content: "streamed\n" } }]),
      text("Done."),
    );
    await send(page, "create a.md");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    const readsAtCard = listReads.length;
    await page.waitForTimeout(2600); // longer than the old 2 s polling period
    assertEquals(listReads.length, readsAtCard, "no GET …/permissions while the Run waits");

    // Reload re-reads the durable list once and shows the same card.
    await page.reload();
    await page.waitForSelector("[data-testid=approval]", { timeout: 10_000 });
    assertEquals(listReads.length, readsAtCard + 1);

    // A second signed-in tab approves: the first tab's card clears from its stream.
    const other = await openLoggedIn(env);
    await other.page.goto(page.url());
    await other.page.click("[data-testid=approval] >> text=Approve", { timeout: 10_000 });
    await page.waitForSelector("[data-testid=approval]", { state: "detached", timeout: 5_000 });
    await waitForCompletedTurn(page);
    assertEquals(listReads.length, readsAtCard + 1, "cleared without another list read");
    assertEquals(errors, []);
    assertEquals(other.errors, []);
  } finally {
    await env.close();
  }
});
