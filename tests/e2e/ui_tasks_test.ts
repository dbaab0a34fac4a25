/**
 * [UI-11, EX-6] in a real browser: the Tasks panel of an Agent shows a running
 * background Task with its command, status, elapsed time and live output
 * tail (read again while it runs); a second Task is cancelled from the panel
 * and moves to the recent ones; the first one finishes (held by the test until
 * it has been seen running) with its output and change set; "Open run" opens
 * the starting Run's Conversation with its timeline. Screenshots go to
 * test-artifacts/ (`*-11-tasks-*`).
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

// Prints a line, waits (≤ 60 s) for the test's "go" file in its scratch copy, prints another.
const SCRIPT =
  "echo 'task started'; echo '<img src=x onerror=alert(1)>'; i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; " +
  "i=$((i+1)); done; echo 'built' > out.txt; echo 'task done'";

Deno.test("the Tasks panel shows a running Task live, cancels one and links to its run", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Builder");
    await createConversation(page);
    const agentId = await page.evaluate(() => /^#\/a\/([^/]+)/.exec(location.hash)![1]);

    env.ollama.enqueue(
      toolCall([{
        name: "exec__command",
        arguments: { argv: ["sh", "-c", SCRIPT], background: true },
      }]),
      text("Started the build in the background."),
    );
    await send(page, "build in the background");
    const ask = await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    assert((await ask.textContent() ?? "").includes("background Task"));
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);

    // The answer is over; the Task runs on and the panel shows it.
    await page.click("[data-testid=open-tasks]");
    await page.waitForSelector("[data-testid=tasks-panel]");
    const running = "[data-testid=task][data-status=running]";
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent?.includes("task started") ?? false,
      `${running} [data-testid=task-output]`,
      { timeout: 30_000 },
    );
    assertEquals(await page.textContent(`${running} [data-testid=task-status]`), "running");
    // Output is text, never markup.
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent?.includes("<img src=x") ?? false,
      `${running} [data-testid=task-output]`,
      { timeout: 30_000 },
    );
    assertEquals(await page.$("[data-testid=tasks-panel] img"), null);
    assertEquals(await page.textContent("[data-testid=tasks-active-count]"), "1 / 2");
    const argv = await page.textContent(`${running} [data-testid=task-argv]`) ?? "";
    assert(argv.startsWith("$ sh -c "), argv);
    assert(/\d/.test(await page.textContent(`${running} [data-testid=task-elapsed]`) ?? ""));
    await screenshotsAllSizes(page, "11-tasks-running");

    // A second Task, cancelled from the panel.
    await page.click("[data-testid=tasks-close]");
    env.ollama.enqueue(
      toolCall([{
        name: "exec__command",
        arguments: { argv: ["sleep", "3650"], background: true },
      }]),
      text("Started a second one."),
    );
    await send(page, "and a long sleep");
    await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    await page.click("[data-testid=open-tasks]");
    await page.waitForFunction(
      () => document.querySelector("[data-testid=tasks-active-count]")?.textContent === "2 / 2",
      undefined,
      { timeout: 20_000 },
    );
    const sleeper = "[data-testid=task]:has([data-testid=task-argv]:text('sleep 3650'))";
    await page.click(`${sleeper} [data-testid=task-cancel]`);
    await page.waitForSelector(`${sleeper}[data-status=cancelled]`, { timeout: 30_000 });
    assertEquals(await page.textContent("[data-testid=tasks-active-count]"), "1 / 2");

    // Release the first Task: the test writes "go" into ITS scratch copy.
    const tasksRoot = `${env.server.home}/.runtime/agents/${agentId}/tasks`;
    const list = await page.evaluate(async (a) => {
      const r = await fetch(`/api/agents/${a}/tasks`);
      return (await r.json()).tasks as { task_id: string; status: string }[];
    }, agentId);
    const first = list.find((t) => t.status === "running")!;
    Deno.writeTextFileSync(`${tasksRoot}/${first.task_id}/exec/work/go`, "");
    const done = `[data-testid=task][data-task='${first.task_id}'][data-status=exited]`;
    await page.waitForSelector(done, { timeout: 30_000 });
    const out = await page.textContent(`${done} [data-testid=task-output]`) ?? "";
    assert(out.includes("task started") && out.includes("task done"), out);
    assertEquals(await page.textContent(`${done} [data-testid=task-outcome]`), "exit code 0");
    const changes = await page.textContent(`${done} [data-testid=task-changes]`) ?? "";
    assert(changes.includes("A out.txt"), changes);
    assertEquals(await page.textContent("[data-testid=tasks-active-count]"), "0 / 2");
    await page.screenshot({ path: `${screenshotDir()}desktop-11-tasks-finished.png` });

    // "Open run": the panel closes and the starting Run's timeline opens.
    await page.click(`${done} [data-testid=task-open-run]`);
    await page.waitForSelector("[data-testid=run-details]", { timeout: 10_000 });
    assertEquals(await page.$("[data-testid=tasks-panel]"), null);
    await page.screenshot({ path: `${screenshotDir()}desktop-11-tasks-open-run.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
