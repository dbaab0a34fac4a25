/**
 * [UI-10, EX-2..5] in a real browser: a command card inline in the answer
 * shows the argv in full, the cwd and the live output while the command
 * runs (held by the test until it has seen the first line), then the exit
 * code and duration and the change set; the exec/apply approval shows the
 * whole change set with its diffs; after approval the card marks the path
 * applied and the workspace holds the change. Screenshots go to
 * test-artifacts/.
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

// Prints one line, waits (≤ 30 s) for the test's "go" file, prints another, edits f.txt.
const SCRIPT = "echo 'first line'; i=0; while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.1; " +
  "i=$((i+1)); done; echo 'second line'; sed -i 's/alpha/beta/' f.txt";

Deno.test("a command card shows live output, exit and the change set; the apply approval shows every diff", async () => {
  const env = await startUiEnv();
  try {
    const { page, errors } = await openLoggedIn(env);
    await createAgent(page, "Runner");
    await createConversation(page);
    const agentId = await page.evaluate(() => /^#\/a\/([^/]+)/.exec(location.hash)![1]);
    const ws = `${env.server.home}/data/agents/${agentId}/workspace`;
    Deno.writeTextFileSync(`${ws}/f.txt`, "alpha\n", { mode: 0o600 });

    env.ollama.enqueue(
      toolCall([{
        name: "exec__command",
        arguments: { argv: ["sh", "-c", SCRIPT], timeout_s: 60 },
      }]),
      toolCall([{ name: "exec__apply", arguments: {} }]),
      text("Changed **f.txt**."),
    );
    await send(page, "edit f.txt with a command");
    const ask = await page.waitForSelector("[data-testid=approval]", { timeout: 20_000 });
    assert((await ask.textContent() ?? "").includes("exec/command"));
    await page.click("[data-testid=approval] >> text=Approve");

    // The card, opened, shows the argv in full and the live output while the command runs.
    const card = "[data-testid=tool-card][data-tool='exec/command']";
    // It opens by itself while the command runs, so the live output is in view.
    await page.waitForSelector(`${card}[open]`, { timeout: 20_000 });
    const argv = await page.textContent(`${card} [data-testid=command-argv]`) ?? "";
    assertEquals(argv, `$ sh -c '${SCRIPT.replaceAll("'", "'\\''")}'`);
    assert((await page.textContent(`${card} [data-testid=command-meta]`) ?? "").includes("cwd ."));
    await page.waitForFunction(
      (sel) => document.querySelector(sel)?.textContent?.includes("first line") ?? false,
      `${card} [data-testid=command-output]`,
      { timeout: 30_000 },
    );
    assertEquals(await page.getAttribute(card, "data-status"), "running");
    await page.screenshot({ path: `${screenshotDir()}desktop-10-command-live.png` });

    // Release the command: the test writes "go" into the Run's scratch copy.
    const scratchRoot = `${env.server.home}/.runtime/agents/${agentId}/scratch`;
    const [runDir] = [...Deno.readDirSync(scratchRoot)].map((e) => e.name);
    Deno.writeTextFileSync(`${scratchRoot}/${runDir}/work/go`, "");

    // The exec/apply approval shows the whole change set, diffs included.
    await page.waitForSelector("[data-testid=approval] [data-testid=change-entry]", {
      timeout: 30_000,
    });
    const entry = "[data-testid=approval] [data-testid=change-entry][data-path='f.txt']";
    await page.click(`${entry} summary`);
    await page.waitForSelector(`${entry} [data-testid=change-diff]`);
    const diff = await page.textContent(`${entry} [data-testid=change-diff]`) ?? "";
    assert(diff.includes("-alpha") && diff.includes("+beta"), diff);
    // The "go" file the test made is part of the change set too: a new file.
    assert(await page.$("[data-testid=approval] [data-testid=change-entry][data-path='go']"));
    assertEquals(Deno.readTextFileSync(`${ws}/f.txt`), "alpha\n", "nothing applied yet");
    await page.screenshot({ path: `${screenshotDir()}desktop-10-apply-approval.png` });
    await page.click("[data-testid=approval] >> text=Approve");
    await waitForCompletedTurn(page);
    assertEquals(Deno.readTextFileSync(`${ws}/f.txt`), "beta\n");

    // After the Run: exit code and duration, the full output, and the applied change set.
    // (A finished command's card is collapsed again [UI-10]: open it.)
    assertEquals(await page.$eval(card, (d) => (d as HTMLDetailsElement).open), false);
    await page.click(`${card} > summary`);
    const exit = await page.textContent(`${card} [data-testid=command-exit]`) ?? "";
    assert(/^exit 0 · /.test(exit), exit);
    const out = await page.textContent(`${card} [data-testid=command-output]`) ?? "";
    assert(out.includes("first line") && out.includes("second line"), out);

    await page.waitForSelector(
      `${card} [data-testid=change-entry][data-path='f.txt'] [data-testid=change-applied]`,
      { timeout: 10_000 },
    );
    assertEquals(
      await page.textContent(
        `${card} [data-testid=change-entry][data-path='f.txt'] [data-testid=change-applied]`,
      ),
      "applied",
    );
    await page.click(`${card} [data-testid=change-entry][data-path='f.txt'] summary`);
    await page.waitForSelector(`${card} [data-testid=change-entry] [data-testid=change-diff]`);
    await page.screenshot({ path: `${screenshotDir()}desktop-10-command-applied.png` });
    assertEquals(errors, []);
  } finally {
    await env.close();
  }
});
