/**
 * [LC-2, UI-11] in a real browser: the parent's model delegates to another
 * Agent; the operator approves the delegation, then the delegate's own file
 * write from the PARENT's Conversation; the delegate card in the parent's
 * answer shows the child's steps and answer and opens the child's
 * Conversation; the Tasks panel lists the finished child Run. Screenshots go
 * to test-artifacts/ (`*-11-subagent-*`).
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
  startUiEnv,
  waitForCompletedTurn,
} from "./_ui_support.ts";

Deno.test("a finished subagent shows on its delegate card and in the Tasks panel", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Researcher");
    const system = "00000000-0000-4000-8000-000000000001";
    // The URL names the new Agent once its Conversation list answered.
    const helperId = await (await page.waitForFunction(
      (sys) => {
        const m = /^#\/a\/([^/]+)/.exec(location.hash);
        return m && m[1] !== sys ? m[1] : null;
      },
      system,
      { timeout: 10_000 },
    )).jsonValue() as string;
    await createAgent(page, "Lead");
    await createConversation(page);

    env.ollama.enqueue(
      toolCall([{
        name: "agent__delegate",
        arguments: { agent_id: helperId, message: "Write notes.md with one line about otters." },
      }]),
      toolCall([{
        name: "file__write",
        arguments: { path: "notes.md", content: "Otters hold hands while sleeping.\n" },
      }]),
      text("I wrote notes.md: otters hold hands while sleeping."),
      text("The researcher wrote the notes."),
    );
    await send(page, "ask the researcher for otter notes");

    // 1. The delegation itself is approved (policy ask).
    const ask = await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    const asked = await ask.textContent() ?? "";
    assert(asked.includes("agent/delegate") && asked.includes("Researcher"), asked);
    await page.click("[data-testid=approval] >> text=Approve");

    // 2. The delegate's file/write surfaces in the parent's Conversation and is approved there.
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll("[data-testid=approval]")].some((a) =>
          (a.textContent ?? "").includes("Asked by the delegate")
        ),
      undefined,
      { timeout: 30_000 },
    );
    await page.waitForSelector("[data-testid=delegate-pending]");
    await screenshotsAllSizes(page, "11-subagent-approval");
    // After a reload the parent's Run is attached again and the delegate's approval is back.
    await page.reload();
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll("[data-testid=approval]")].some((a) =>
          (a.textContent ?? "").includes("Asked by the delegate")
        ),
      undefined,
      { timeout: 30_000 },
    );
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);

    // 3. The delegate card: answered, the child's tool, the answer.
    const card = "[data-testid=tool-card][data-tool='agent/delegate']";
    await page.click(`${card} summary`);
    await page.waitForSelector(`${card} [data-testid=delegate-card][data-state=completed]`);
    const status = await page.textContent(`${card} [data-testid=delegate-status]`) ?? "";
    assert(status.startsWith("answered"), `status: ${status}`);
    assertEquals(await page.textContent(`${card} [data-testid=delegate-agent]`), "Researcher");
    assertEquals(
      await page.textContent(`${card} [data-testid=delegate-answer]`),
      "I wrote notes.md: otters hold hands while sleeping.",
    );
    assert((await page.textContent(`${card} [data-testid=delegate-tools]`) ?? "").includes(
      "file/write",
    ));
    await screenshotsAllSizes(page, "11-subagent-card");

    // 4. The Tasks panel lists the finished child Run.
    await page.click("[data-testid=open-tasks]");
    const row = "[data-testid=child-run][data-state=completed]";
    await page.waitForSelector(row, { timeout: 10_000 });
    assertEquals(await page.textContent(`${row} [data-testid=child-run-agent]`), "Researcher");
    assertEquals(await page.textContent(`${row} [data-testid=child-run-status]`), "answered");
    assert((await page.textContent(`${row} [data-testid=child-run-answer]`) ?? "").includes(
      "otters",
    ));
    await page.screenshot({ path: `${screenshotDir()}desktop-11-subagent-tasks-panel.png` });

    // 5. "Open conversation" goes to the delegate's Conversation, titled by its parent.
    await page.click(`${row} [data-testid=child-run-open]`);
    await page.waitForFunction(
      (id) => location.hash.startsWith(`#/a/${id}/c/`),
      helperId,
      { timeout: 10_000 },
    );
    await page.waitForFunction(
      () =>
        (document.querySelector("[data-testid=turn]")?.textContent ?? "").includes(
          "hold hands while sleeping",
        ),
      undefined,
      { timeout: 10_000 },
    );
    await page.screenshot({ path: `${screenshotDir()}desktop-11-subagent-child.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
